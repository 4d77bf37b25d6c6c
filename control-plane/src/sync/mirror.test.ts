// The log mirror against a model of a node: after random histories of snapshots, deltas, tombstones, compactions and
// domains too large to send, a node at ANY version that applies the catch-up reaches exactly the state at the head,
// and a live node that applies what each ingest publishes stays equal to it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  applyDelta,
  decodeConfigEntry,
  decodeDomainSnapshot,
  encodeDomainSnapshot,
  encodeDomainSnapshotFast,
  SCHEMA_MAJOR,
  unpackEntries,
  type DomainSnapshot,
  type ZoneRecord,
} from '@platform/shared/config';
import { prng } from '@platform/shared/testing/prng';
import { WHOLE_DELTA, type Compacted } from '../config-log/compacted.js';
import { framesOf } from './frames.js';
import { LogMirror, type LogEntry } from './mirror.js';

type State = Map<string, DomainSnapshot>;

function snapshotOf(name: string, serial: number, records: ZoneRecord[]): DomainSnapshot {
  return {
    schemaMajor: SCHEMA_MAJOR,
    domainId: 1,
    name,
    state: 'active',
    dnsMode: 'managed',
    zone: {
      serial,
      nameservers: ['ns1.test'],
      soaMname: 'ns1.test',
      soaRname: `hostmaster.${name}`,
      soaRefresh: 1,
      soaRetry: 1,
      soaExpire: 1,
      soaMinimum: 1,
      soaTtl: 1,
      records,
    },
    settings: { developerMode: false, developerModeExpiresAtMs: 0, cacheL2TtlDays: 1, cacheCapMb: 1 },
    ruleSet: { version: serial, rules: [] },
    certificates: [],
  };
}

function record(id: number, destination: string): ZoneRecord {
  return {
    id,
    name: `r${id}`,
    type: 'TXT',
    destination,
    ttl: 60,
    mxPriority: 0,
    proxied: false,
    captcha: false,
    scheme: 'Auto',
    port: 443,
    hostHeader: '',
    hostHeaderMode: 'own',
    timeout: 60,
  };
}

/** What a node holds: applies encoded entries as a node store does (whole, delta on top, tombstone). */
function applyEncoded(state: State, encoded: readonly Uint8Array[]): void {
  for (const frame of framesOf(encoded)) {
    for (const bytes of unpackEntries(frame)) {
      const e = decodeConfigEntry(bytes);
      if (e.deleted) state.delete(e.domain);
      else if (e.delta) state.set(e.domain, applyDelta(state.get(e.domain)!, e));
      else state.set(e.domain, e.snapshot!);
    }
  }
}

function view(state: State, skip: ReadonlySet<string> = new Set()): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, s] of [...state].sort(([a], [b]) => a.localeCompare(b))) {
    if (!skip.has(name)) out[name] = [s.zone.serial, s.zone.records.map((r) => [r.id, r.destination])];
  }
  return out;
}

function clone(state: State): State {
  return new Map(state);
}

for (const sendDeltas of [true, false]) {
  test(`catch-up from every version reaches the head, live nodes follow (${sendDeltas ? 'deltas' : 'snapshots only'})`, () => {
    let withheldEver = 0;
    for (const seed of [1, 2, 3, 4]) {
      const random = prng(seed);
      const compactions: Array<[string, number, boolean]> = [];
      const withheldNow = new Set<string>();
      const mirror = new LogMirror({
        maxFrameBytes: 3_000,
        sendDeltas,
        compactAfterDeltas: 4,
        onCompact: (d, v, payload) => compactions.push([d, v, payload !== undefined]),
        onWithheld: (d, _v, _b, withheld) => {
          if (withheld) withheldEver++;
          return withheld ? withheldNow.add(d) : withheldNow.delete(d);
        },
      });
      const truth: State[] = [new Map()];
      const live: State = new Map();
      let version = 0;
      let nextRecord = 1;
      for (let batch = 0; batch < 40; batch++) {
        const entries: LogEntry[] = [];
        for (let k = 1 + Math.floor(random() * 4); k > 0; k--) {
          const state = clone(truth[truth.length - 1]!);
          const name = `d${Math.floor(random() * 4)}.example`;
          const current = state.get(name);
          const op = random();
          version++;
          let entry: LogEntry;
          if (!current || op < 0.12) {
            const records = Array.from({ length: Math.floor(random() * 4) }, () => record(nextRecord++, 'w'));
            const s = snapshotOf(name, version, records);
            state.set(name, s);
            entry = { ...header(version, name), payload: encodeDomainSnapshot(s) };
          } else if (op < 0.2) {
            state.delete(name);
            entry = { ...header(version, name), deleted: true, payload: new Uint8Array(0) };
          } else {
            // Sometimes a big record: the domain's state passes the frame limit until it is removed again.
            const upserted = [record(random() < 0.5 ? nextRecord++ : pickId(current, random), big(random))];
            const removed = random() < 0.3 && current.zone.records.length > 0 ? [pickId(current, random)] : [];
            const d = snapshotOf(name, version, upserted);
            const entryDelta = {
              version,
              domain: name,
              deleted: false,
              delta: true,
              snapshot: d,
              removedRecordIds: removed,
            };
            state.set(name, applyDelta(current, { ...entryDelta, removedRuleIds: [] }));
            entry = {
              ...header(version, name),
              delta: true,
              removedRecordIds: removed,
              payload: encodeDomainSnapshot(d),
            };
          }
          truth.push(state);
          entries.push(entry);
        }
        applyEncoded(live, mirror.ingest(entries));
        // The hub compacts after the send, sometimes with later entries ingested meanwhile.
        if (batch % 3 !== 2) mirror.compactDue();
        assert.deepEqual(view(live, withheldNow), view(truth[truth.length - 1]!, withheldNow), `live, seed ${seed}`);
      }
      const head = truth.length - 1;
      assert.equal(mirror.head, head);
      for (let from = 0; from <= head; from++) {
        const node = clone(truth[from]!);
        const sent = mirror.catchUp(from);
        assert.ok(
          sent.every((b) => b.length <= 3_000),
          'no entry larger than a frame',
        );
        applyEncoded(node, sent);
        assert.deepEqual(view(node, withheldNow), view(truth[head]!, withheldNow), `from ${from}, seed ${seed}`);
        // A withheld domain is left as the node had it.
        for (const name of withheldNow) assert.deepEqual(view(node, new Set())[name], view(truth[from]!)[name]);
      }
      assert.ok(
        compactions.some(([, , squashed]) => squashed),
        'deltas were squashed',
      );
      assert.ok(mirror.size < head, 'superseded entries are dropped');
    }
    assert.ok(withheldEver > 0, 'a domain was too large to send at some point');
  });
}

test('a node below the horizon is told apart; tombstones at or below it are forgotten', () => {
  const mirror = new LogMirror({ maxFrameBytes: 1 << 20, sendDeltas: true });
  mirror.ingest([
    { ...header(1, 'a.example'), payload: encodeDomainSnapshot(snapshotOf('a.example', 1, [])) },
    { ...header(2, 'b.example'), payload: encodeDomainSnapshot(snapshotOf('b.example', 2, [])) },
    { ...header(3, 'b.example'), deleted: true, payload: new Uint8Array(0) },
  ]);
  assert.equal(mirror.catchUp(0).length, 2);
  mirror.setHorizon(3);
  assert.equal(mirror.horizon, 3);
  assert.deepEqual(
    mirror.catchUp(0).map((b) => decodeConfigEntry(b).domain),
    ['a.example'],
  );
});

function header(version: number, domainName: string): Omit<LogEntry, 'payload'> {
  return { version, domainName, deleted: false, delta: false, removedRecordIds: [], removedRuleIds: [] };
}

function pickId(s: DomainSnapshot, random: () => number): number {
  const rs = s.zone.records;
  return rs.length > 0 ? rs[Math.floor(random() * rs.length)]!.id : 999_999;
}

function big(random: () => number): string {
  return random() < 0.25 ? 'x'.repeat(1_600) : `v${Math.floor(random() * 1000)}`;
}

test('a delta that makes its domain due is returned as it is; compactDue squashes it afterwards', () => {
  const compactions: Array<[string, number, boolean]> = [];
  const mirror = new LogMirror({
    maxFrameBytes: 1 << 22,
    sendDeltas: true,
    onCompact: (d, v, payload) => compactions.push([d, v, payload !== undefined]),
  });
  mirror.ingest([{ ...header(1, 'a.example'), payload: encodeDomainSnapshot(snapshotOf('a.example', 1, [])) }]);
  const records = Array.from({ length: 3000 }, (_, i) => record(i + 1, 'w'));
  const out = mirror.ingest([
    { ...header(2, 'a.example'), delta: true, payload: encodeDomainSnapshot(snapshotOf('a.example', 2, records)) },
  ]);
  assert.equal(out.length, 1);
  assert.equal(decodeConfigEntry(out[0]!).delta, true, 'the delta itself goes out');
  assert.equal(mirror.compactionPending, true);
  assert.deepEqual(compactions, []);
  mirror.ingest([{ ...header(3, 'b.example'), payload: encodeDomainSnapshot(snapshotOf('b.example', 3, [])) }]);
  assert.equal(mirror.compactDue(), 1);
  assert.equal(mirror.compactionPending, false);
  assert.deepEqual(compactions, [['a.example', 2, true]]);
  const caught = mirror.catchUp(0).map((b) => decodeConfigEntry(b));
  assert.deepEqual(
    caught.map((e) => [e.version, e.domain, e.delta ?? false]),
    [
      [2, 'a.example', false],
      [3, 'b.example', false],
    ],
  );
  assert.equal(caught[0]!.snapshot!.zone.records.length, 3000);
});

test('a delta that is the whole state (an import onto an empty zone) is compacted as it is; otherwise the squash is stored', () => {
  const compacted: Array<[string, number, Compacted | undefined]> = [];
  const mirror = new LogMirror({
    maxFrameBytes: 1 << 24,
    sendDeltas: true,
    onCompact: (d, v, payload) => compacted.push([d, v, payload]),
  });
  const random = prng(11);
  const records = (from: number, n: number) => Array.from({ length: n }, (_, i) => record(from + i, big(random)));
  mirror.ingest([
    { ...header(1, 'empty.example'), payload: encodeDomainSnapshot(snapshotOf('empty.example', 1, [])) },
    { ...header(2, 'full.example'), payload: encodeDomainSnapshot(snapshotOf('full.example', 2, records(1, 10))) },
  ]);
  const imported = encodeDomainSnapshotFast(snapshotOf('empty.example', 3, records(100, 5000)));
  mirror.ingest([
    { ...header(3, 'empty.example'), delta: true, payload: imported },
    {
      ...header(4, 'full.example'),
      delta: true,
      payload: encodeDomainSnapshotFast(snapshotOf('full.example', 4, records(200, 5000))),
    },
  ]);
  assert.equal(mirror.compactDue(), 2);
  assert.deepEqual(
    compacted.map(([d, v, p]) => [d, v, p === WHOLE_DELTA ? p : p?.length]),
    [
      ['empty.example', 3, WHOLE_DELTA],
      ['full.example', 4, (compacted[1]![2] as Uint8Array).length],
    ],
  );
  const caught = new Map(
    mirror.catchUp(0).map((b) => {
      const e = decodeConfigEntry(b);
      return [e.domain, e] as const;
    }),
  );
  assert.equal(caught.get('empty.example')!.delta ?? false, false);
  assert.deepEqual(caught.get('empty.example')!.snapshot, decodeDomainSnapshot(imported));
  assert.deepEqual(
    caught.get('full.example')!.snapshot!.zone.records.map((r) => r.id),
    [...records(1, 10), ...records(200, 5000)].map((r) => r.id),
  );
});
