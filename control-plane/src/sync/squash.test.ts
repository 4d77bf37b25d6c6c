// The hub's squash from the records' bytes gives exactly the bytes of the decoding path (applyDeltas, then
// encodeDomainSnapshotFast) whenever it answers, over random histories of a snapshot and deltas that add records, add,
// change and remove rules and change the domain's fields; and it declines (undefined) whenever a delta removes or
// rewrites a record or brings ids out of order, which the decoding path then handles.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  applyDeltas,
  decodeDomainSnapshotFast,
  encodeDomainSnapshot,
  encodeDomainSnapshotFast,
  SCHEMA_MAJOR,
  type DomainSnapshot,
  type Rule,
  type ZoneRecord,
} from '@platform/shared/config';
import { prng } from '@platform/shared/testing/prng';
import { squashAppended, type SquashDelta } from './squash.js';

function snapshot(serial: number, records: ZoneRecord[], rules: Rule[]): DomainSnapshot {
  return {
    schemaMajor: SCHEMA_MAJOR,
    domainId: 7,
    name: 'a.example',
    state: 'active',
    dnsMode: 'managed',
    zone: {
      serial,
      nameservers: ['ns1.test', 'ns2.test'],
      soaMname: 'ns1.test',
      soaRname: 'hostmaster.a.example',
      soaRefresh: 1,
      soaRetry: 2,
      soaExpire: 3,
      soaMinimum: 4,
      soaTtl: serial,
      records,
    },
    settings: { developerMode: serial % 2 === 1, developerModeExpiresAtMs: 0, cacheL2TtlDays: 1, cacheCapMb: 1 },
    ruleSet: { version: serial, rules },
    certificates: [],
  };
}

function record(id: number, random: () => number): ZoneRecord {
  const big = random() < 0.01;
  return {
    id,
    name: `r${id}`,
    type: random() < 0.5 ? 'A' : 'TXT',
    destination: big ? 'x'.repeat(300) : `10.0.${(id >> 8) & 255}.${id & 255}`,
    ttl: Math.floor(random() * 100_000),
    mxPriority: random() < 0.1 ? 10 : 0,
    proxied: random() < 0.2,
    captcha: false,
    scheme: 'Auto',
    port: 443,
    hostHeader: random() < 0.1 ? 'origin.example' : '',
    hostHeaderMode: 'own',
    timeout: 60,
    monitor: random() < 0.1,
  };
}

function rule(id: number, random: () => number): Rule {
  return {
    id,
    type: 'redirect',
    enabled: random() < 0.5,
    priority: Math.floor(random() * 5),
    body: new Uint8Array([id & 255, 1, 2]),
  };
}

/** What the mirror's decoding path stores for `base` and `deltas`. */
function decoded(base: Uint8Array | undefined, deltas: readonly SquashDelta[]): Uint8Array {
  const entries = deltas.map((d, k) => ({
    version: k + 2,
    domain: 'a.example',
    deleted: false,
    delta: true,
    snapshot: decodeDomainSnapshotFast(d.payload),
    removedRecordIds: [...d.removedRecordIds],
    removedRuleIds: [...d.removedRuleIds],
  }));
  const start = base
    ? decodeDomainSnapshotFast(base)
    : {
        ...entries[0]!.snapshot,
        zone: { ...entries[0]!.snapshot.zone, records: [] },
        ruleSet: { ...entries[0]!.snapshot.ruleSet, rules: [] },
      };
  return encodeDomainSnapshotFast(applyDeltas(start, entries));
}

test('squashAppended gives the decoding path its own bytes for records appended in id order', () => {
  let whole = 0;
  for (let seed = 1; seed <= 60; seed++) {
    const random = prng(seed);
    let nextId = 1 + Math.floor(random() * 1000);
    const take = (n: number) =>
      Array.from({ length: n }, () => record((nextId += 1 + Math.floor(random() * 3)), random));
    let ruleIds = 0;
    const baseRules = Array.from({ length: Math.floor(random() * 4) }, () => rule(++ruleIds, random));
    const base =
      random() < 0.2 ? undefined : encodeDomainSnapshotFast(snapshot(1, take(Math.floor(random() * 50)), baseRules));
    const deltas: SquashDelta[] = Array.from({ length: 1 + Math.floor(random() * 4) }, (_, k) => {
      const rules = random() < 0.3 ? [rule(random() < 0.5 ? ++ruleIds : 1, random)] : [];
      const n = random() < 0.2 ? 0 : Math.floor(random() * (random() < 0.1 ? 3000 : 40));
      // Deltas as the control plane writes them: the fast encoder for most, protobufjs for small ones.
      const s = snapshot(k + 2, take(n), rules);
      return {
        payload: random() < 0.5 ? encodeDomainSnapshotFast(s) : encodeDomainSnapshot(s),
        removedRecordIds: [],
        removedRuleIds: random() < 0.2 ? [1 + Math.floor(random() * ruleIds)] : [],
      };
    });
    const fast = squashAppended(base, deltas);
    assert.ok(fast, `seed ${seed}: appended records are squashed from their bytes`);
    const slow = decoded(base, deltas);
    if (fast === deltas[0]!.payload) {
      // One delta onto an empty base is answered as it is: the same state.
      assert.equal(deltas.length, 1);
      assert.deepEqual(decodeDomainSnapshotFast(fast), decodeDomainSnapshotFast(slow), `seed ${seed}`);
      whole++;
    } else assert.deepEqual(Buffer.from(fast), Buffer.from(slow), `seed ${seed}`);
  }
  assert.ok(whole > 0 && whole < 60, `${whole} of 60 histories were one delta onto an empty base`);
});

test('squashAppended declines a removed record, a record rewritten, ids out of order', () => {
  const random = prng(3);
  const base = encodeDomainSnapshotFast(snapshot(1, [record(5, random), record(9, random)], []));
  const delta = (ids: number[], removed: number[] = []): SquashDelta => ({
    payload: encodeDomainSnapshotFast(
      snapshot(
        2,
        ids.map((id) => record(id, random)),
        [],
      ),
    ),
    removedRecordIds: removed,
    removedRuleIds: [],
  });
  assert.ok(squashAppended(base, [delta([10, 11])]));
  assert.equal(squashAppended(base, [delta([10], [5])]), undefined, 'a record removed');
  assert.equal(squashAppended(base, [delta([9])]), undefined, 'a record rewritten');
  assert.equal(squashAppended(base, [delta([7])]), undefined, 'an id below one before it');
  assert.equal(squashAppended(base, [delta([12, 11])]), undefined, 'ids out of order within a delta');
  assert.equal(squashAppended(base, [delta([12]), delta([12])]), undefined, 'the same id in two deltas');
  assert.equal(squashAppended(base, []), undefined);
});
