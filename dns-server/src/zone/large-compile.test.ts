// A large zone read back from the node store and compiled whole in slices (records decoded into one reused object,
// plain A records kept flat, nodes held in the name table alone, plain names answered on first query) answers every
// name and type byte for byte like the same zone built record by record through patches (each record an object, every
// name staged and looked up one by one), and transfers the same records: every record type, names with several
// records, wildcards, delegations with glue beneath them, CNAME chains, proxied names, invalid records.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { componentLogger } from '@platform/shared';
import type { ZoneRecord } from '@platform/shared/config';
import { domainChange, openNodeStore } from '@platform/shared/node-store';
import { prng } from '@platform/shared/testing/prng';
import { deltaEntry, domainHeader, snapshotEntry, zoneRecord } from '@platform/shared/testing/config-entries';
import { createCounters } from '../counters.js';
import { answerQuery } from '../handler.js';
import { buildQuery } from '../testing/fixtures.js';
import { TYPE } from '../wire/constants.js';
import { zoneRecords } from '../xfr/records.js';
import { ZoneBuilder } from './builder.js';
import type { CompiledZone } from './model.js';
import { ZoneTable } from './table.js';
import { ZoneSet } from './zone-set.js';

const APEX = 'big.example';
const EDGE = { edgeIpv4: ['203.0.113.1'], edgeIpv6: ['2001:db8:ffff::1'] };
const PLAIN = 4000;

/** The zone: PLAIN plain A names (h<i>), then owners of every kind drawn at random. */
function zoneOf(seed: number): ZoneRecord[] {
  const random = prng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
  const out: ZoneRecord[] = [];
  let id = 1;
  for (let i = 0; i < PLAIN; i++) out.push({ ...zoneRecord(id++, `h${i}`, `10.1.${i >> 8}.${i & 255}`), ttl: 60 + i });
  // Owners beside the plain names: several records each, wildcards, a delegation with glue and names beneath it.
  const owners = ['@', 'www', 'mail', 'multi', 'h7', 'h8', '*', '*.wild', 'a.wild', 'sub', 'ns.sub', 'x.y.sub'];
  const named = [...owners.filter((o) => !o.startsWith('*')).map((o) => (o === '@' ? APEX : `${o}.${APEX}`))];
  const kinds: Array<[string, () => string]> = [
    ['A', () => `192.0.2.${Math.floor(random() * 256)}`],
    ['A', () => pick(['192.0.2.010', ' 192.0.2.5', '999.1.1.1'])], // unusual or invalid: kept as objects
    ['AAAA', () => `2001:db8::${Math.floor(random() * 4096).toString(16)}`],
    ['CNAME', () => pick([...named, 'out.example.net'])],
    ['MX', () => pick(named)],
    ['TXT', () => `v=${Math.floor(random() * 1e6)}`],
    ['NS', () => pick([`ns.sub.${APEX}`, 'ns.elsewhere.example.net'])],
    ['SRV', () => `5 5060 ${pick(named)}`],
    ['CAA', () => '0 issue "letsencrypt.org"'],
    ['PTR', () => pick(named)],
  ];
  for (let k = 0; k < 400; k++) {
    const [type, destination] = pick(kinds);
    const owner = pick(owners);
    if (type === 'NS' && owner !== 'sub') continue; // delegations at sub only (and the apex's own, ignored)
    out.push({
      ...zoneRecord(id++, owner, destination(), type),
      ttl: pick([60, 300, 3600]),
      mxPriority: Math.floor(random() * 20),
      proxied: (type === 'A' || type === 'CNAME') && random() < 0.1,
    });
  }
  // An upper-case name and a name given with the apex: kept as objects, same owner.
  out.push(zoneRecord(id++, 'Upper', '192.0.2.77'), zoneRecord(id++, `fqdn.${APEX}.`, '192.0.2.78'));
  return out;
}

function answersEqual(got: ZoneTable, want: ZoneTable, names: readonly string[]): void {
  const counters = createCounters();
  const types = [TYPE.A, TYPE.AAAA, TYPE.CNAME, TYPE.MX, TYPE.TXT, TYPE.NS, TYPE.SOA, TYPE.SRV, TYPE.CAA, TYPE.PTR];
  for (const name of names)
    for (const qtype of [...types, TYPE.ANY, TYPE.DS, 13])
      for (const tcp of [false, true]) {
        const q = buildQuery(name, qtype, { id: 9 });
        const a = answerQuery(q, q.length, tcp, got, counters);
        const b = answerQuery(q, q.length, tcp, want, counters);
        assert.ok(a && b && a.equals(b), `${name} type ${qtype}${tcp ? ' (tcp)' : ''}`);
      }
}

const transferred = (zone: CompiledZone): string[] =>
  [...zoneRecords(zone)]
    .map(
      (rr) =>
        `${rr.owner} ${rr.type} ${rr.ttl} ${Buffer.concat(rr.rdata.map((p) => (Buffer.isBuffer(p) ? p : Buffer.from(p.name)))).toString('hex')}`,
    )
    .sort();

for (const seed of [1, 2])
  test(`a large zone compiled in slices from the node store answers like the same zone built by patches, seed ${seed}`, async (t) => {
    const records = zoneOf(seed);
    const dir = mkdtempSync(join(tmpdir(), 'dns-large-compile-'));
    const store = openNodeStore(join(dir, 'lmdb'), { durability: 'none' });
    t.after(async () => {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    });
    const table = new ZoneTable();
    const counters = createCounters();
    const zones = new ZoneSet(
      table,
      store,
      EDGE,
      counters,
      componentLogger('dns-server.large-compile-test'),
      () => {},
      1000,
    );
    store.onApplied((e) => zones.refresh(domainChange(e)));
    await store.apply(snapshotEntry(1, { ...domainHeader(APEX, 5), zone: { ...domainHeader(APEX, 5).zone, records } }));
    await zones.idle();
    assert.equal(counters.dns_zone_compiles_total, 1);
    assert.equal(counters.dns_zone_compile_failures_total, 0);

    // The reference: an empty zone, then the records a few at a time, each change a patch.
    const reference = new ZoneBuilder(domainHeader(APEX, 5), EDGE);
    for (let i = 0; i < records.length; i += 7) reference.apply(domainHeader(APEX, 5), records.slice(i, i + 7), []);
    const want = new ZoneTable();
    want.set(reference.zone!);

    const served = table.get(APEX)!;
    assert.deepEqual([...served.nodes.keys()].sort(), [...reference.zone!.nodes.keys()].sort());
    assert.equal(served.nodes.size, reference.zone!.nodes.size);
    const names = [
      ...[...reference.zone!.nodes.keys()].filter((n) => !/^h\d+\./.test(n)),
      ...Array.from({ length: 50 }, (_, i) => `h${(i * 7919) % PLAIN}.${APEX}`),
      `nothere.${APEX}`,
      `q.wild.${APEX}`,
      `deep.q.${APEX}`,
      `q.sub.${APEX}`,
      `q.y.sub.${APEX}`,
      `nx.h3.${APEX}`,
    ];
    answersEqual(table, want, names);
    // Plain names answered on first query: asked now, and asked again, still equal.
    answersEqual(table, want, names.slice(-56));
    assert.deepEqual(transferred(served), transferred(reference.zone!));
  });

/** A store and a zone set listening to it as dns-server's one process does (the event itself, records in hand). */
function inHandNode(t: { after(fn: () => Promise<void>): void }, offThreadBytes: number, listen = true) {
  const dir = mkdtempSync(join(tmpdir(), 'dns-large-compile-'));
  const store = openNodeStore(join(dir, 'lmdb'), { durability: 'none', offThreadBytes });
  t.after(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  // The store as the zone set sees it, counting the whole-zone reads (the path the records in hand replace).
  let storeReads = 0;
  const source = {
    getSnapshot: (d: string) => store.getSnapshot(d),
    getHeader: (d: string) => store.getHeader(d),
    getRecord: (d: string, id: number) => store.getRecord(d, id),
    domains: () => store.domains(),
    readDomain: (d: string) => {
      storeReads++;
      return store.readDomain(d);
    },
  };
  const table = new ZoneTable();
  const counters = createCounters();
  const zones = new ZoneSet(
    table,
    source,
    EDGE,
    counters,
    componentLogger('dns-server.large-compile-test'),
    () => {},
    1000,
  );
  const start = () => store.onApplied((e) => zones.refresh(e));
  if (listen) start();
  return { store, table, counters, zones, start, storeReads: () => storeReads };
}

/** The names to ask of a zone: every node but the plain ones, 50 plain ones, and names that do not exist. */
const namesOf = (zone: CompiledZone, plain: number): string[] => [
  ...[...zone.nodes.keys()].filter((n) => !/^h\d+\./.test(n)),
  ...Array.from({ length: 50 }, (_, i) => `h${(i * 7919) % plain}.${APEX}`),
  `nothere.${APEX}`,
  `q.wild.${APEX}`,
  `q.sub.${APEX}`,
  `nx.h3.${APEX}`,
];

for (const [how, offThreadBytes] of [
  ['on the serving thread', Infinity],
  ['on the writer thread', 0],
] as const)
  test(`a large snapshot and a large delta are compiled from the records in hand, written ${how}, and answer like the store's records`, async (t) => {
    const node = inHandNode(t, offThreadBytes);
    const records = zoneOf(3);
    const header = domainHeader(APEX, 5);
    await node.store.apply(snapshotEntry(1, { ...header, zone: { ...header.zone, records } }));
    await node.zones.idle();
    const compare = () => {
      // The reference: the zone the store holds after the change, built at once from its records.
      const reference = new ZoneBuilder(node.store.getSnapshot(APEX)!, EDGE);
      const want = new ZoneTable();
      want.set(reference.zone!);
      const served = node.table.get(APEX)!;
      assert.deepEqual([...served.nodes.keys()].sort(), [...reference.zone!.nodes.keys()].sort());
      const names = [...namesOf(reference.zone!, PLAIN), `new1.${APEX}`];
      answersEqual(node.table, want, names);
      answersEqual(node.table, want, names.slice(-54));
      assert.deepEqual(transferred(served), transferred(reference.zone!));
    };
    assert.equal(node.counters.dns_zone_compiles_total, 1);
    assert.equal(node.storeReads(), 0, 'the snapshot is compiled from the entry, not read back');
    compare();

    // A delta over it: records rewritten (a plain name made a CNAME, addresses changed), new names, ids removed (one
    // of them written again by the same delta), and ids given twice, one under another name (the last wins, as in
    // the store: new1 is gone).
    const random = prng(4);
    const written: ZoneRecord[] = [];
    for (let i = 0; i < 1200; i++) {
      const id = 1 + Math.floor(random() * PLAIN);
      written.push({ ...zoneRecord(id, `h${id - 1}`, `10.9.${i >> 8}.${i & 255}`), ttl: 30 });
    }
    written.push(zoneRecord(5, 'h4', 'www', 'CNAME'));
    for (let i = 0; i < 300; i++) written.push(zoneRecord(100_000 + i, `new${i}`, `10.8.${i >> 8}.${i & 255}`));
    written.push(zoneRecord(100_000, 'new0', '10.8.9.9'), zoneRecord(100_001, 'moved', '10.8.9.10'));
    written.push(zoneRecord(7, 'h6', '10.7.7.7'));
    const removed = [7, 8, 9, 10, ...Array.from({ length: 40 }, (_, i) => PLAIN + 1 + i)];
    await node.store.apply(deltaEntry(2, domainHeader(APEX, 6), { records: written, removedRecordIds: removed }));
    await node.zones.idle();
    assert.equal(node.counters.dns_zone_compiles_total, 2);
    assert.equal(node.counters.dns_zone_compile_failures_total, 0);
    assert.equal(node.storeReads(), 0, 'the delta is compiled from the entry over the builder, not read back');
    assert.equal(node.table.get(APEX)!.serial, 6);
    compare();
    const q = buildQuery(`new0.${APEX}`, TYPE.A);
    const a = answerQuery(q, q.length, false, node.table, node.counters)!;
    assert.ok(a.subarray(a.length - 4).equals(Buffer.from([10, 8, 9, 9])), 'the id given twice: the last wins');
  });

test('a large delta for a zone the zone set has not compiled is compiled from the store, not from the delta alone', async (t) => {
  // The zone was written before the zone set listened (as with a builder dropped after a failed compile): the
  // delta's records alone are not the zone.
  const node = inHandNode(t, Infinity, false);
  const header = domainHeader(APEX, 5);
  await node.store.apply(snapshotEntry(1, { ...header, zone: { ...header.zone, records: zoneOf(5) } }));
  node.start();
  const written = Array.from({ length: 1500 }, (_, i) => zoneRecord(200_000 + i, `d${i}`, `10.6.${i >> 8}.${i & 255}`));
  await node.store.apply(deltaEntry(2, domainHeader(APEX, 6), { records: written }));
  await node.zones.idle();
  assert.equal(node.storeReads(), 1);
  const reference = new ZoneBuilder(node.store.getSnapshot(APEX)!, EDGE);
  const want = new ZoneTable();
  want.set(reference.zone!);
  answersEqual(node.table, want, [...namesOf(reference.zone!, PLAIN), `d0.${APEX}`, `d1499.${APEX}`]);
});
