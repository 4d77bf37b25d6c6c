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
import { domainHeader, snapshotEntry, zoneRecord } from '@platform/shared/testing/config-entries';
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
