// The table's flat answer cache: an answer from the cache is byte for byte the answer through the zone, for every
// kind of question, and a zone set or deleted is never answered from what was kept before.
// (Whether an answer came from the cache is checked in the last test, by a name kept only in the cache.)
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { componentLogger } from '@platform/shared';
import { domainChange, openNodeStore } from '@platform/shared/node-store';
import { deltaEntry, domainHeader, snapshotEntry, zoneRecord } from '@platform/shared/testing/config-entries';
import { answerQuery } from '../handler.js';
import { createCounters } from '../counters.js';
import { compileZone } from './compile.js';
import { ZoneTable } from './table.js';
import { buildQuery, rec, sampleSnapshot, type QueryOptions } from '../testing/fixtures.js';
import { makeDnssec } from '../dnssec/testing.js';
import { TYPE } from '../wire/constants.js';
import { ResponseRateLimiter } from '../rrl.js';
import { ParsedQuery, parseQuery, PARSE } from '../wire/query.js';
import { ZoneSet } from './zone-set.js';
import { FLAGS_ZSK } from '../dnssec/keys.js';
import { makeKey } from '../dnssec/testing.js';

const EDGE = { edgeIpv4: ['203.0.113.1'], edgeIpv6: [] };
const NAMES = [
  'example.org',
  'www.example.org',
  'WwW.ExAmPlE.oRg',
  'alias.example.org',
  'chain1.example.org',
  'loop1.example.org',
  'dangling.example.org',
  'external.example.org',
  'cdn.example.org',
  'shop.example.org',
  'a.dev.example.org',
  'B.Dev.Example.Org',
  'q.mx.example.org',
  'x.y.deep.example.org',
  'y.deep.example.org',
  '_sip._tcp.example.org',
  'sub.example.org',
  'host.sub.example.org',
  'big.example.org',
  'nothere.example.org',
  'NX.example.org',
  'a.b.c.example.org',
  'example.net',
];
const TYPES = [TYPE.A, TYPE.AAAA, TYPE.MX, TYPE.TXT, TYPE.NS, TYPE.SOA, TYPE.CNAME, TYPE.SRV, TYPE.ANY, TYPE.DS, 99];
const OPTIONS: QueryOptions[] = [
  {},
  { rd: false },
  { edns: {} },
  { edns: { udpSize: 512 } },
  { edns: { do: true } },
  { edns: { do: true, udpSize: 512 } },
  { edns: { do: true, udpSize: 4096 } },
  { qclass: 255 },
];

function everyQuestion(table: ZoneTable, check: (q: Buffer, tcp: boolean) => void): void {
  for (const name of NAMES)
    for (const qtype of TYPES)
      for (const o of OPTIONS)
        for (const tcp of [false, true]) check(buildQuery(name, qtype, { id: 0x4242, ...o }), tcp);
}

for (const signed of [false, true])
  test(`answers from the cache equal answers through the zone (${signed ? 'signed' : 'unsigned'} zone)`, () => {
    const table = new ZoneTable();
    const snapshot = sampleSnapshot(signed ? { dnssec: makeDnssec() } : {});
    table.set(compileZone(snapshot, EDGE).zone!);
    const cold = createCounters();
    const warm = createCounters();
    everyQuestion(table, (q, tcp) => {
      table.answers.clear();
      const first = answerQuery(q, q.length, tcp, table, cold);
      // Names that do not exist or come from a wildcard are kept once asked twice (AnswerCache.admit).
      answerQuery(q, q.length, tcp, table, createCounters());
      const again = answerQuery(q, q.length, tcp, table, warm);
      assert.deepEqual(again, first, `${q.toString('hex')} tcp=${tcp}`);
    });
    // The second answers were counted the same way as the first ones.
    assert.deepEqual(warm, cold);
  });

for (const signed of [false, true])
  test(`rate limiting counts an answer from the cache in the bucket of the answer through the zone (${signed ? 'signed zone, DO=1' : 'unsigned'})`, () => {
    const table = new ZoneTable();
    table.set(compileZone(sampleSnapshot(signed ? { dnssec: makeDnssec() } : {}), EDGE).zone!);
    const opts = { rate: 5, slip: 2, ipv4Prefix: 24, ipv6Prefix: 56, tableSize: 1024 };
    const viaZone = new ResponseRateLimiter(opts);
    const viaCache = new ResponseRateLimiter(opts);
    const a = createCounters();
    const b = createCounters();
    for (let round = 0; round < 12; round++)
      for (const name of ['www.example.org', 'nx1.example.org', 'nx2.example.org', 'a.dev.example.org'])
        for (const qtype of [TYPE.A, TYPE.MX]) {
          const q = buildQuery(name, qtype, signed ? { edns: { do: true } } : {});
          table.answers.clear();
          const x = answerQuery(q, q.length, false, table, a, viaZone, '198.51.100.9');
          if (round === 0) {
            // Fill the cache (a name that does not exist or comes from a wildcard is kept when asked twice).
            answerQuery(q, q.length, false, table, createCounters(), null);
            answerQuery(q, q.length, false, table, createCounters(), null);
            assert.ok(kept(table, q), `${name} ${qtype} kept`);
          }
          const y = answerQuery(q, q.length, false, table, b, viaCache, '198.51.100.9');
          assert.deepEqual(y, x, `${name} ${qtype} round ${round}`);
        }
    assert.deepEqual(b, a);
    assert.ok(a.dns_rrl_dropped_total + a.dns_rrl_slipped_total > 0, 'the rate was reached');
  });

test('an answer is kept on first answer for a name of the zone, on the second for a name that does not exist', () => {
  const table = new ZoneTable();
  const c = createCounters();
  table.set(compileZone(sampleSnapshot(), EDGE).zone!);
  const www = buildQuery('www.example.org', TYPE.A);
  const nx = buildQuery('kept-nx.example.org', TYPE.A);
  const wild = buildQuery('kept.dev.example.org', TYPE.A);
  answerQuery(www, www.length, false, table, c);
  answerQuery(nx, nx.length, false, table, c);
  answerQuery(wild, wild.length, false, table, c);
  assert.ok(kept(table, www), 'www kept');
  assert.ok(!kept(table, nx), 'a name that does not exist is not kept when first asked');
  assert.ok(!kept(table, wild), 'nor one synthesised from a wildcard');
  answerQuery(nx, nx.length, false, table, c);
  answerQuery(wild, wild.length, false, table, c);
  assert.ok(kept(table, nx) && kept(table, wild), 'kept when asked again');
});

function kept(table: ZoneTable, msg: Buffer): boolean {
  const q = new ParsedQuery();
  assert.equal(parseQuery(msg, msg.length, q), PARSE.OK);
  return table.answers.find(q) >= 0;
}

test('a zone set again (a patch) or deleted is not answered from the cache', () => {
  const table = new ZoneTable();
  const c = createCounters();
  const q = buildQuery('www.example.org', TYPE.A);
  const nx = buildQuery('new.example.org', TYPE.A);
  table.set(compileZone(sampleSnapshot(), EDGE).zone!);
  const before = answerQuery(q, q.length, false, table, c)!;
  assert.equal(answerQuery(nx, nx.length, false, table, c)![3] & 0xf, 3);
  assert.deepEqual(answerQuery(q, q.length, false, table, c), before, 'kept');
  const changed = sampleSnapshot();
  changed.zone.records = changed.zone.records.filter((r) => r.name !== 'www');
  changed.zone.records.push(rec('www', 'A', '192.0.2.99'), rec('new', 'A', '192.0.2.100'));
  table.set(compileZone(changed, EDGE).zone!);
  const after = answerQuery(q, q.length, false, table, c)!;
  assert.notDeepEqual(after, before);
  assert.ok(after.includes(Buffer.from([192, 0, 2, 99])), 'the new address');
  assert.equal(answerQuery(nx, nx.length, false, table, c)![3] & 0xf, 0, 'the new name exists');
  table.delete('example.org');
  assert.equal(answerQuery(q, q.length, false, table, c)![3] & 0xf, 5, 'REFUSED once the zone is gone');
});

test('a signed answer to the same question with DO=1 and with DO=0: two entries, never one for the other', () => {
  const table = new ZoneTable();
  table.set(compileZone(sampleSnapshot({ dnssec: makeDnssec() }), EDGE).zone!);
  const c = createCounters();
  for (const [name, qtype] of [
    ['www.example.org', TYPE.A],
    ['nothere.example.org', TYPE.A],
    ['www.example.org', TYPE.TXT],
    ['a.dev.example.org', TYPE.A],
  ] as const)
    for (const firstDo of [true, false]) {
      table.answers.clear();
      const withDo = buildQuery(name, qtype, { edns: { do: true } });
      const withoutDo = buildQuery(name, qtype, { edns: {} });
      const [first, second] = firstDo ? [withDo, withoutDo] : [withoutDo, withDo];
      const answers = new Map<Buffer, Buffer[]>([
        [first, []],
        [second, []],
      ]);
      for (let i = 0; i < 3; i++)
        for (const msg of [first, second]) answers.get(msg)!.push(answerQuery(msg, msg.length, false, table, c)!);
      assert.ok(kept(table, withDo) && kept(table, withoutDo), `${name} ${qtype}: both kept`);
      const signedAnswers = answers.get(withDo)!;
      const plainAnswers = answers.get(withoutDo)!;
      for (const a of signedAnswers) assert.deepEqual(a, signedAnswers[0], `${name} ${qtype} DO=1, asked again`);
      for (const a of plainAnswers) assert.deepEqual(a, plainAnswers[0], `${name} ${qtype} DO=0, asked again`);
      assert.ok(hasType(signedAnswers[0], TYPE.RRSIG), `${name} ${qtype} DO=1: RRSIG`);
      assert.ok(!hasType(plainAnswers[0], TYPE.RRSIG), `${name} ${qtype} DO=0: no RRSIG`);
      assert.ok(!hasType(plainAnswers[0], TYPE.NSEC3), `${name} ${qtype} DO=0: no NSEC3`);
    }
});

/** Whether `m` holds a record of `type` (a crude scan of the record headers after the question). */
function hasType(m: Buffer, type: number): boolean {
  let p = 12;
  while (m[p] !== 0) p += m[p] + 1;
  p += 5;
  const n = m.readUInt16BE(6) + m.readUInt16BE(8) + m.readUInt16BE(10);
  for (let i = 0; i < n; i++) {
    while (m[p] !== 0 && (m[p] & 0xc0) !== 0xc0) p += m[p] + 1;
    p += m[p] === 0 ? 1 : 2;
    if (m.readUInt16BE(p) === type) return true;
    p += 10 + m.readUInt16BE(p + 8);
  }
  return false;
}

function tempStore(t: TestContext) {
  const dir = mkdtempSync(join(tmpdir(), 'dns-answer-cache-'));
  const store = openNodeStore(join(dir, 'lmdb'), { durability: 'none' });
  t.after(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return store;
}

test('signed answers kept in the cache change with a record write, a re-sign and a key rollover (ZoneSet)', (t) => {
  const store = tempStore(t);
  const table = new ZoneTable();
  const counters = createCounters();
  const zones = new ZoneSet(table, store, EDGE, counters, componentLogger('dns-server.answer-cache-test'));
  store.onApplied((e) => zones.refresh(domainChange(e)));
  const dnssec = makeDnssec();
  const header = (serial: number, d = dnssec) => ({ ...domainHeader('example.org', serial), dnssec: d });
  const base = header(1);
  store.apply(snapshotEntry(1, { ...base, zone: { ...base.zone, records: [zoneRecord(1, 'www', '192.0.2.1')] } }));
  const questions = [
    buildQuery('www.example.org', TYPE.A, { edns: { do: true } }),
    buildQuery('nothere.example.org', TYPE.A, { edns: { do: true } }),
    buildQuery('www.example.org', TYPE.TXT, { edns: { do: true } }),
    buildQuery('example.org', TYPE.DNSKEY, { edns: { do: true } }),
    buildQuery('www.example.org', TYPE.A, { edns: {} }),
  ];
  /** Each question's answer, asked until it is kept (and checked against the answer through the zone). */
  const answers = (what: string): Buffer[] =>
    questions.map((msg) => {
      const out: Buffer[] = [];
      for (let i = 0; i < 3; i++) out.push(answerQuery(msg, msg.length, false, table, counters)!);
      assert.ok(kept(table, msg), `${what}: kept`);
      const hit = answerQuery(msg, msg.length, false, table, counters)!;
      table.answers.clear();
      const viaZone = answerQuery(msg, msg.length, false, table, counters)!;
      assert.deepEqual(hit, viaZone, `${what}: the kept answer is the zone's`);
      for (const a of out) assert.deepEqual(a, viaZone, `${what}: every answer the zone's`);
      // Filled again for the step after.
      for (let i = 0; i < 3; i++) answerQuery(msg, msg.length, false, table, counters);
      return hit;
    });
  const differs = (a: Buffer[], b: Buffer[], which: number[], what: string) => {
    for (const i of which) assert.notDeepEqual(b[i], a[i], `${what}: question ${i} answered anew`);
  };
  const first = answers('first');
  assert.ok(first[0].includes(Buffer.from([192, 0, 2, 1])));

  // A record written: the address, its RRSIG, the SOA serial in the negative answers.
  store.apply(deltaEntry(2, header(2), { records: [zoneRecord(1, 'www', '192.0.2.2')] }));
  const written = answers('after a record write');
  assert.ok(written[0].includes(Buffer.from([192, 0, 2, 2])), 'the new address');
  differs(first, written, [0, 1, 2, 4], 'after a record write');

  // Signed again (a week before the signatures run out): every RRSIG is made again, through ZoneSet.serve.
  const compiles = counters.dns_zone_compiles_total;
  zones.resignDue(Date.now() + 8 * 86400_000);
  assert.equal(counters.dns_zone_compiles_total, compiles + 1, 'signed again');
  const resigned = answers('after a re-sign');
  differs(written, resigned, [0, 1, 2, 3], 'after a re-sign');
  assert.deepEqual(resigned[4], written[4], 'the DO=0 answer holds no signature');

  // A ZSK rollover (a new key published and signing, the old one kept published): DNSKEY and every RRSIG change.
  const rolled = { ...dnssec, keys: [dnssec.keys[0], { ...dnssec.keys[1], signing: false }, makeKey(FLAGS_ZSK)] };
  store.apply(deltaEntry(3, header(3, rolled), {}));
  const after = answers('after a ZSK rollover');
  differs(resigned, after, [0, 1, 2, 3], 'after a ZSK rollover');
});
