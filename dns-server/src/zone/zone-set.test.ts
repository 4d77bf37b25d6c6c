// A DNS node's zones kept up to date change by change: random record creates, updates and deletes go through a real
// node store (LMDB) as deltas, snapshots and batches, the ZoneSet patches the served zone, and after every step each
// (name, type) — wildcards, CNAME chains, delegations, the apex, names that do not exist — is answered byte for byte
// like a zone compiled from scratch from what the store holds.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { componentLogger } from '@platform/shared';
import { encodeConfigEntry, type ConfigEntry, type DomainSnapshot, type ZoneRecord } from '@platform/shared/config';
import { domainChange, openNodeStore, type NodeStore } from '@platform/shared/node-store';
import { prng } from '@platform/shared/testing/prng';
import { deltaEntry, domainHeader, snapshotEntry, zoneRecord } from '@platform/shared/testing/config-entries';
import { createCounters } from '../counters.js';
import { answerQuery } from '../handler.js';
import { buildQuery } from '../testing/fixtures.js';
import { TYPE } from '../wire/constants.js';
import { compileZone } from './compile.js';
import { ZoneTable } from './table.js';
import { ZoneSet } from './zone-set.js';

const APEX = 'example.org';
const LOG = componentLogger('dns-server.zone-test');
const EDGE = { edgeIpv4: ['203.0.113.1'], edgeIpv6: ['2001:db8:ffff::1'] };
/** Owners records are drawn from: nested names (empty non-terminals come and go), wildcards, delegation points. */
const OWNERS = ['@', 'www', 'mail', 'a', 'b.a', 'c.b.a', '*', '*.a', '*.b.a', 'sub', 'ns.sub', 'x.y.sub', 'alias'];
const TARGETS = [...OWNERS.filter((o) => !o.includes('*')), 'nothere', 'q.a', 'z.c.b.a'].map((o) =>
  o === '@' ? APEX : `${o}.${APEX}`,
);
const OUTSIDE = ['target.example.net', 'ns.elsewhere.example.net'];
/** Every owner, names only a wildcard or a delegation answers, and names that do not exist. */
const QUERY_NAMES = [
  ...TARGETS,
  `*.${APEX}`,
  `*.a.${APEX}`,
  `q.b.a.${APEX}`,
  `deep.q.${APEX}`,
  `q.sub.${APEX}`,
  `q.y.sub.${APEX}`,
  `nx.nothere.${APEX}`,
];
const QUERY_TYPES = [
  TYPE.A,
  TYPE.AAAA,
  TYPE.CNAME,
  TYPE.MX,
  TYPE.TXT,
  TYPE.NS,
  TYPE.SOA,
  TYPE.SRV,
  TYPE.CAA,
  TYPE.PTR,
  TYPE.ANY,
  TYPE.DS,
  13, // HINFO: a type without a slot of its own
];
const TYPES = ['A', 'A', 'AAAA', 'CNAME', 'CNAME', 'MX', 'NS', 'TXT', 'SRV', 'CAA', 'PTR'];

function randomRecord(id: number, random: () => number): ZoneRecord {
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(random() * xs.length)]!;
  const type = pick(TYPES);
  const n = 1 + Math.floor(random() * 250);
  const target = () => (random() < 0.85 ? pick(TARGETS) : pick(OUTSIDE));
  const destination =
    type === 'A'
      ? random() < 0.05
        ? '999.0.2.1' // invalid: skipped, and reported
        : `192.0.2.${n}`
      : type === 'AAAA'
        ? `2001:db8::${n.toString(16)}`
        : type === 'TXT'
          ? `t${n}`
          : type === 'SRV'
            ? `5 5060 ${target()}`
            : type === 'CAA'
              ? '0 issue "letsencrypt.org"'
              : type === 'NS'
                ? pick([`ns.sub.${APEX}`, `ns.a.${APEX}`, ...OUTSIDE])
                : target();
  return {
    ...zoneRecord(id, pick(OWNERS), destination, type),
    ttl: pick([60, 300, 3600]),
    mxPriority: Math.floor(random() * 20),
    proxied: (type === 'A' || type === 'CNAME') && random() < 0.15,
  };
}

function tempStore(t: TestContext): NodeStore {
  const dir = mkdtempSync(join(tmpdir(), 'dns-zone-set-'));
  const store = openNodeStore(join(dir, 'lmdb'), { durability: 'none' });
  t.after(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return store;
}

/** Asks both tables every (name, type) and compares the whole responses. */
function assertSameAnswers(served: ZoneTable, fresh: ZoneTable, what: string): void {
  const counters = createCounters();
  for (const name of QUERY_NAMES)
    for (const qtype of QUERY_TYPES)
      for (const tcp of [false, true]) {
        const query = buildQuery(name, qtype, { id: 7 });
        const got = answerQuery(query, query.length, tcp, served, counters);
        const want = answerQuery(query, query.length, tcp, fresh, counters);
        assert.ok(got && want && got.equals(want), `${what}: ${name} type ${qtype}${tcp ? ' (tcp)' : ''}`);
      }
}

async function runSequence(
  t: TestContext,
  seed: number,
  steps: number,
  largeChange?: number,
): Promise<{ patches: number; compiles: number }> {
  const random = prng(seed);
  const store = tempStore(t);
  const table = new ZoneTable();
  const counters = createCounters();
  const zones = new ZoneSet(table, store, EDGE, counters, LOG, () => {}, largeChange);
  // As the node wires it (node.ts, main.ts): the store's events drive the zone set.
  store.onApplied((e) => zones.refresh(domainChange(e)));

  let version = 0;
  let serial = 1;
  let nextId = 1;
  let state = 'active';
  let nameservers = ['ns1.platform.test', 'ns2.platform.test'];
  const records = new Map<number, ZoneRecord>();
  const header = (): DomainSnapshot => {
    const h = domainHeader(APEX, serial++, state);
    h.zone.nameservers = nameservers;
    return h;
  };
  const snapshot = (): DomainSnapshot => {
    const h = header();
    h.zone.records = [...records.values()].sort((a, b) => a.id - b.id);
    return h;
  };
  store.apply(snapshotEntry(++version, snapshot()));
  await zones.idle();

  for (let step = 0; step < steps; step++) {
    const entries: ConfigEntry[] = [];
    const kinds: string[] = [];
    // One to three entries, applied one by one or as one frame (listeners then read the state after the frame).
    for (let e = Math.floor(random() * 3); e >= 0; e--) {
      const r = random();
      if (state === 'disabled' || r < 0.03) {
        // Not served for one entry at most: the domain is disabled, then enabled again.
        kinds.push(`state ${(state = state === 'active' ? 'disabled' : 'active')}`);
        entries.push(deltaEntry(++version, header(), {}));
        continue;
      }
      if (r < 0.05) {
        kinds.push('nameservers');
        nameservers = random() < 0.5 ? ['ns1.platform.test'] : ['ns1.platform.test', 'ns2.platform.test'];
        entries.push(deltaEntry(++version, header(), {}));
        continue;
      }
      if (r < 0.1) {
        kinds.push('snapshot');
        for (let k = Math.floor(random() * 3); k > 0; k--) records.set(nextId, randomRecord(nextId++, random));
        entries.push(snapshotEntry(++version, snapshot()));
        continue;
      }
      const written: ZoneRecord[] = [];
      const removed: number[] = [];
      for (let c = 1 + Math.floor(random() * 3); c > 0; c--) {
        const ids = [...records.keys()];
        const op = random();
        if (op < 0.45 || ids.length === 0) {
          const rec = randomRecord(nextId++, random);
          records.set(rec.id, rec);
          written.push(rec);
        } else if (op < 0.75) {
          // An update may move the record to another owner or change its type.
          const id = ids[Math.floor(random() * ids.length)]!;
          const rec = random() < 0.5 ? randomRecord(id, random) : { ...records.get(id)!, ttl: 60 + step };
          records.set(id, rec);
          written.push(rec);
        } else {
          const id = ids[Math.floor(random() * ids.length)]!;
          records.delete(id);
          removed.push(id);
        }
      }
      kinds.push(`delta +${written.map((r) => r.id)} -${removed}`);
      entries.push(deltaEntry(++version, header(), { records: written, removedRecordIds: removed }));
    }
    if (random() < 0.5) store.applyEncoded(entries.map(encodeConfigEntry));
    else for (const entry of entries) store.apply(entry);
    await zones.idle();

    const fresh = new ZoneTable();
    const stored = store.getSnapshot(APEX)!;
    const compiled = compileZone(stored, EDGE).zone;
    if (compiled) fresh.set(compiled);
    const what = `seed ${seed} step ${step} (${kinds.join(', ')})`;
    assert.equal(table.get(APEX) !== undefined, compiled !== null, `${what}: served`);
    assert.deepEqual([...(table.get(APEX)?.nodes.keys() ?? [])].sort(), [...(compiled?.nodes.keys() ?? [])].sort());
    assertSameAnswers(table, fresh, what);
  }
  assert.equal(counters.dns_zone_compile_failures_total, 0);
  return { patches: counters.dns_zone_patches_total, compiles: counters.dns_zone_compiles_total };
}

for (const seed of [1, 2, 3, 4])
  test(`random record deltas, seed ${seed}: the patched zone answers every name and type like a zone compiled from scratch`, async (t) => {
    const { patches, compiles } = await runSequence(t, seed, 120);
    // Most changes were patches, not whole compiles (snapshots, header changes and state flips compile whole).
    assert.ok(patches > compiles * 2, `patches ${patches}, whole compiles ${compiles}`);
  });

// A zone compiled in slices leaves the answers of its plain names to their first query; the later patches of these
// sequences must not leave any of those answers stale.
for (const seed of [5, 6, 7])
  test(`random changes compiled in slices (every change of 3 records or more), seed ${seed}: answered like a zone compiled from scratch`, async (t) => {
    const { compiles } = await runSequence(t, seed, 80, 3);
    assert.ok(compiles > 10, `whole compiles ${compiles}`);
  });

/**
 * A ZoneSet fed by a node store holding APEX with `records` records (old<i> → ip(i, 0)) and OTHER with www → 192.0.2.1,
 * both served; `address` asks for a name's A record as the node answers it.
 */
/** `wiring` 'main': as dns-server's main.ts wires a single process (the event itself: a large entry's records in
 *  hand); else the event's DomainChange alone (as a worker hears it). */
async function zoneBesideAnother(t: TestContext, records: number, compileSlice?: number, wiring?: 'main') {
  const store = tempStore(t);
  const table = new ZoneTable();
  const counters = createCounters();
  const zones = new ZoneSet(table, store, EDGE, counters, LOG, () => {}, compileSlice);
  if (wiring === 'main') store.onApplied((e) => zones.refresh(e));
  else store.onApplied((e) => zones.refresh(domainChange(e)));
  const OTHER = 'other.example';
  const ip = (i: number, net: number) => `10.${net}.${(i >> 8) & 255}.${i & 255}`;
  const base = Array.from({ length: records }, (_, i) => zoneRecord(i + 1, `old${i}`, ip(i, 0)));
  store.apply(snapshotEntry(1, { ...domainHeader(APEX, 1), zone: { ...domainHeader(APEX, 1).zone, records: base } }));
  store.apply(
    snapshotEntry(2, {
      ...domainHeader(OTHER, 1),
      zone: { ...domainHeader(OTHER, 1).zone, records: [zoneRecord(1, 'www', '192.0.2.1')] },
    }),
  );
  await zones.idle();
  const address = (name: string): string | 'NXDOMAIN' | 'other' => {
    const q = buildQuery(name, TYPE.A);
    const r = answerQuery(q, q.length, false, table, counters)!;
    const rcode = r[3]! & 15;
    if (rcode === 3) return 'NXDOMAIN';
    if (rcode !== 0 || r.readUInt16BE(6) !== 1) return 'other';
    return [...r.subarray(r.length - 4)].join('.');
  };
  return { store, table, counters, zones, OTHER, ip, address };
}

test('a large delta compiled in slices while queries are answered: old answers until the new zone is served whole, other zones answered throughout, a change made meanwhile applied after', async (t) => {
  const { store, table, counters, zones, OTHER, ip, address } = await zoneBesideAnother(t, 3000, 1000);
  assert.equal(address(`old5.${APEX}`), ip(5, 0));

  // 20,000 new records and one old one changed, in one delta: compiled in slices.
  const added = Array.from({ length: 20_000 }, (_, i) => zoneRecord(10_000 + i, `new${i}`, ip(i, 1)));
  store.apply(deltaEntry(3, domainHeader(APEX, 2), { records: [...added, zoneRecord(6, 'old5', '192.0.2.99')] }));
  const compiledBefore = counters.dns_zone_compiles_total;
  // A one-record change while it compiles: applied once the new zone is served.
  store.apply(deltaEntry(4, domainHeader(APEX, 3), { records: [zoneRecord(7, 'old6', '192.0.2.66')] }));
  let turns = 0;
  let served = false;
  for (let i = 0; turns < 100_000; turns++) {
    assert.equal(address(`www.${OTHER}`), '192.0.2.1', 'another zone is answered throughout');
    const probe = (i++ * 7) % 3000;
    const newNow = address(`new19999.${APEX}`);
    if (!served && newNow !== 'NXDOMAIN') served = true;
    if (!served) {
      // The zone before the delta, whole: old names answer as before, no new name exists yet.
      assert.equal(address(`old${probe}.${APEX}`), ip(probe, 0));
      assert.equal(address(`new0.${APEX}`), 'NXDOMAIN');
      assert.equal(address(`old5.${APEX}`), ip(5, 0));
    } else {
      // The new zone, whole: every new name at once, old names kept, the changed one changed.
      assert.equal(newNow, ip(19_999, 1));
      assert.equal(address(`new${probe}.${APEX}`), ip(probe, 1));
      const kept = probe === 5 || probe === 6 ? 8 : probe;
      assert.equal(address(`old${kept}.${APEX}`), ip(kept, 0));
      assert.equal(address(`old5.${APEX}`), '192.0.2.99');
      const sixth = address(`old6.${APEX}`);
      assert.ok(sixth === ip(6, 0) || sixth === '192.0.2.66', sixth);
      if (sixth === '192.0.2.66') break;
    }
    await new Promise((r) => setImmediate(r));
  }
  await zones.idle();
  assert.ok(turns > 2, `the compile took ${turns} turns of the event loop`);
  assert.equal(address(`old6.${APEX}`), '192.0.2.66');
  assert.equal(counters.dns_zone_compiles_total, compiledBefore + 1);
  assert.equal(counters.dns_zone_compile_failures_total, 0);
  // And it answers like a zone compiled from scratch.
  const fresh = new ZoneTable();
  fresh.set(compileZone(store.getSnapshot(APEX)!, EDGE).zone!);
  for (const name of [`new0.${APEX}`, `new12345.${APEX}`, `old5.${APEX}`, `old6.${APEX}`, APEX, `nx.${APEX}`])
    for (const type of [TYPE.A, TYPE.AAAA, TYPE.SOA, TYPE.NS]) {
      const q = buildQuery(name, type);
      assert.ok(
        answerQuery(q, q.length, false, table, counters)!.equals(answerQuery(q, q.length, false, fresh, counters)!),
        `${name} ${type}`,
      );
    }
});

test('a large delta written to the node store while queries are answered: answered as before on every turn until it is committed, then served whole', async (t) => {
  const { store, counters, zones, OTHER, ip, address } = await zoneBesideAnother(t, 100);

  // 50,000 new records (a zone import, a couple of megabytes) and one old record changed, in one delta.
  const added = Array.from({ length: 50_000 }, (_, i) => zoneRecord(1000 + i, `new${i}`, ip(i, 1)));
  let committed = false;
  const written = Promise.resolve(
    store.applyEncoded([
      encodeConfigEntry(
        deltaEntry(3, domainHeader(APEX, 2), { records: [...added, zoneRecord(6, 'old5', '192.0.2.99')] }),
      ),
    ]),
  ).then(() => {
    committed = true;
  });
  let turnsWhileWriting = 0;
  while (!committed) {
    turnsWhileWriting++;
    const probe = (turnsWhileWriting * 7) % 100;
    assert.equal(address(`www.${OTHER}`), '192.0.2.1', 'another zone is answered during the write');
    assert.equal(address(`old${probe === 5 ? 7 : probe}.${APEX}`), ip(probe === 5 ? 7 : probe, 0));
    assert.equal(address(`old5.${APEX}`), ip(5, 0), 'the large zone answers as before');
    assert.equal(address(`new0.${APEX}`), 'NXDOMAIN');
    await new Promise((r) => setImmediate(r));
  }
  await written;
  assert.ok(turnsWhileWriting > 1, `queries answered on ${turnsWhileWriting} turns while the store wrote the delta`);
  await zones.idle();
  assert.equal(address(`www.${OTHER}`), '192.0.2.1');
  assert.equal(address(`old5.${APEX}`), '192.0.2.99');
  for (const i of [0, 25_000, 49_999]) assert.equal(address(`new${i}.${APEX}`), ip(i, 1));
  assert.equal(counters.dns_zone_compile_failures_total, 0);
});

test('a large delta compiled from its records in hand (as main.ts wires the store): answered as before until committed, then served whole over the records before it', async (t) => {
  const { store, counters, zones, OTHER, ip, address } = await zoneBesideAnother(t, 100, undefined, 'main');
  const added = Array.from({ length: 50_000 }, (_, i) => zoneRecord(1000 + i, `new${i}`, ip(i, 1)));
  let committed = false;
  const written = Promise.resolve(
    store.applyEncoded([
      encodeConfigEntry(
        deltaEntry(3, domainHeader(APEX, 2), {
          records: [...added, zoneRecord(6, 'old5', '192.0.2.99')],
          removedRecordIds: [8],
        }),
      ),
    ]),
  ).then(() => {
    committed = true;
  });
  let turnsWhileWriting = 0;
  while (!committed) {
    turnsWhileWriting++;
    assert.equal(address(`www.${OTHER}`), '192.0.2.1', 'another zone is answered during the write');
    assert.equal(address(`old5.${APEX}`), ip(5, 0), 'the large zone answers as before');
    assert.equal(address(`old7.${APEX}`), ip(7, 0));
    assert.equal(address(`new0.${APEX}`), 'NXDOMAIN');
    assert.equal(address(`new49999.${APEX}`), 'NXDOMAIN');
    await new Promise((r) => setImmediate(r));
  }
  await written;
  assert.ok(turnsWhileWriting > 1, `queries answered on ${turnsWhileWriting} turns while the store wrote the delta`);
  await zones.idle();
  assert.equal(address(`old5.${APEX}`), '192.0.2.99');
  assert.equal(address(`old7.${APEX}`), 'NXDOMAIN'); // (id 8)
  assert.equal(address(`old8.${APEX}`), ip(8, 0));
  for (const i of [0, 25_000, 49_999]) assert.equal(address(`new${i}.${APEX}`), ip(i, 1));
  // A one-record change after it: patched onto the zone compiled while written.
  store.apply(deltaEntry(4, domainHeader(APEX, 3), { records: [zoneRecord(1000, 'new0', '192.0.2.100')] }));
  await zones.idle();
  assert.equal(address(`new0.${APEX}`), '192.0.2.100');
  assert.equal(counters.dns_zone_compile_failures_total, 0);
});
