// The table's flat answer cache: an answer from the cache is byte for byte the answer through the zone, for every
// kind of question, and a zone set or deleted is never answered from what was kept before.
// (Whether an answer came from the cache is checked in the last test, by a name kept only in the cache.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { answerQuery } from '../handler.js';
import { createCounters } from '../counters.js';
import { compileZone } from './compile.js';
import { ZoneTable } from './table.js';
import { buildQuery, rec, sampleSnapshot, type QueryOptions } from '../testing/fixtures.js';
import { makeDnssec } from '../dnssec/testing.js';
import { TYPE } from '../wire/constants.js';
import { ResponseRateLimiter } from '../rrl.js';
import { ParsedQuery, parseQuery, PARSE } from '../wire/query.js';

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

test('rate limiting counts an answer from the cache in the bucket of the answer through the zone', () => {
  const table = new ZoneTable();
  table.set(compileZone(sampleSnapshot(), EDGE).zone!);
  const opts = { rate: 5, slip: 2, ipv4Prefix: 24, ipv6Prefix: 56, tableSize: 1024 };
  const viaZone = new ResponseRateLimiter(opts);
  const viaCache = new ResponseRateLimiter(opts);
  const a = createCounters();
  const b = createCounters();
  for (let round = 0; round < 12; round++)
    for (const name of ['www.example.org', 'nx1.example.org', 'nx2.example.org', 'a.dev.example.org'])
      for (const qtype of [TYPE.A, TYPE.MX]) {
        const q = buildQuery(name, qtype);
        table.answers.clear();
        const x = answerQuery(q, q.length, false, table, a, viaZone, '198.51.100.9');
        if (round === 0) answerQuery(q, q.length, false, table, createCounters(), null); // fill the cache
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
