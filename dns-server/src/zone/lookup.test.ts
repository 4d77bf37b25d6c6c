// Table-driven tests of the compiled zone through the query handler, decoded by dns2 (an independent decoder).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compileZone } from './compile.js';
import { ZoneTable } from './table.js';
import { answerQuery } from '../handler.js';
import { createCounters } from '../counters.js';
import { sampleSnapshot, buildQuery, rec, type QueryOptions } from '../testing/fixtures.js';
import { decode, type Decoded } from '../testing/decode.js';
import { TYPE } from '../wire/constants.js';

const EDGE = { edgeIpv4: ['203.0.113.1', '203.0.113.2'], edgeIpv6: ['2001:db8:ffff::1'] };
const table = new ZoneTable();
table.set(compileZone(sampleSnapshot(), EDGE).zone!);
const child = sampleSnapshot({}, 'child.example.org');
child.zone.records = [rec('www', 'A', '192.0.2.99')];
table.set(compileZone(child, EDGE).zone!);

function ask(name: string, qtype: number, o: QueryOptions = {}, tcp = false): Decoded {
  const q = buildQuery(name, qtype, o);
  const out = answerQuery(q, q.length, tcp, table, createCounters());
  assert.ok(out, 'an answer');
  return decode(out);
}

const SOA = 'example.org 300 SOA ns1.platform.test hostmaster.example.org 7';
type Want = Partial<Pick<Decoded, 'rcode' | 'aa' | 'tc' | 'answer' | 'authority' | 'additional'>>;
const cases: Array<{ name: string; q: [string, number, QueryOptions?]; want: Want }> = [
  {
    name: 'A RRset at a name',
    q: ['www.example.org', TYPE.A],
    want: {
      rcode: 0,
      aa: true,
      answer: ['www.example.org 300 A 192.0.2.10', 'www.example.org 300 A 192.0.2.11'],
      authority: [],
    },
  },
  { name: 'AAAA', q: ['www.example.org', TYPE.AAAA], want: { answer: ['www.example.org 300 AAAA 2001:db8::10'] } },
  {
    name: 'apex SOA with the snapshot serial',
    q: ['example.org', TYPE.SOA],
    want: { answer: ['example.org 3600 SOA ns1.platform.test hostmaster.example.org 7'] },
  },
  {
    name: 'apex NS from the nameserver set',
    q: ['example.org', TYPE.NS],
    want: {
      answer: ['example.org 3600 NS ns1.platform.test', 'example.org 3600 NS ns2.platform.test'],
      additional: [],
    },
  },
  {
    name: 'MX with in-zone addresses in additional',
    q: ['example.org', TYPE.MX],
    want: {
      answer: ['example.org 300 MX 10 mail.example.org'],
      additional: ['mail.example.org 300 A 192.0.2.25', 'mail.example.org 300 AAAA 2001:db8::25'],
    },
  },
  { name: 'CAA', q: ['example.org', TYPE.CAA], want: { answer: ['example.org 300 CAA 0 issue letsencrypt.org'] } },
  {
    name: 'SRV with target address',
    q: ['_sip._tcp.example.org', TYPE.SRV],
    want: {
      answer: ['_sip._tcp.example.org 300 SRV 10 5 5060 sip.example.org'],
      additional: ['sip.example.org 300 A 192.0.2.70'],
    },
  },
  {
    name: 'PTR',
    q: ['4.2.0.192.in-addr.example.org', TYPE.PTR],
    want: { answer: ['4.2.0.192.in-addr.example.org 300 PTR www.example.org'] },
  },
  {
    name: 'proxied A answers the edge IPv4 list, TTL 120',
    q: ['shop.example.org', TYPE.A],
    want: { answer: ['shop.example.org 120 A 203.0.113.1', 'shop.example.org 120 A 203.0.113.2'] },
  },
  {
    name: 'proxied A name answers AAAA with the edge IPv6',
    q: ['shop.example.org', TYPE.AAAA],
    want: { answer: ['shop.example.org 120 AAAA 2001:db8:ffff::1'] },
  },
  {
    name: 'proxied CNAME answers A, not the CNAME',
    q: ['cdn.example.org', TYPE.A],
    want: { answer: ['cdn.example.org 120 A 203.0.113.1', 'cdn.example.org 120 A 203.0.113.2'] },
  },
  {
    name: 'NXDOMAIN with SOA, TTL min(SOA TTL, minimum)',
    q: ['nothere.example.org', TYPE.A],
    want: { rcode: 3, aa: true, answer: [], authority: [SOA] },
  },
  {
    name: 'NODATA with SOA',
    q: ['www.example.org', TYPE.MX],
    want: { rcode: 0, aa: true, answer: [], authority: [SOA] },
  },
  { name: 'NODATA for an unusual type', q: ['www.example.org', 99], want: { rcode: 0, answer: [], authority: [SOA] } },
  {
    name: 'wildcard synthesises A',
    q: ['x.dev.example.org', TYPE.A],
    want: { rcode: 0, answer: ['x.dev.example.org 300 A 192.0.2.50'] },
  },
  {
    name: 'wildcard covers deeper names',
    q: ['a.b.dev.example.org', TYPE.TXT],
    want: { answer: ['a.b.dev.example.org 300 TXT wildcard'] },
  },
  {
    name: 'wildcard NODATA for a type it lacks',
    q: ['x.dev.example.org', TYPE.AAAA],
    want: { rcode: 0, answer: [], authority: [SOA] },
  },
  {
    name: 'empty non-terminal is NODATA',
    q: ['deep.example.org', TYPE.A],
    want: { rcode: 0, answer: [], authority: [SOA] },
  },
  {
    name: 'wildcard parent is an empty non-terminal, not synthesised',
    q: ['dev.example.org', TYPE.A],
    want: { rcode: 0, answer: [], authority: [SOA] },
  },
  {
    name: 'no wildcard at the closest encloser: NXDOMAIN',
    q: ['z.deep.example.org', TYPE.A],
    want: { rcode: 3, authority: [SOA] },
  },
  {
    name: 'CNAME chain followed inside the zone',
    q: ['chain1.example.org', TYPE.A],
    want: {
      answer: [
        'chain1.example.org 300 CNAME chain2.example.org',
        'chain2.example.org 300 CNAME www.example.org',
        'www.example.org 300 A 192.0.2.10',
        'www.example.org 300 A 192.0.2.11',
      ],
    },
  },
  {
    name: 'CNAME loop stops',
    q: ['loop1.example.org', TYPE.A],
    want: {
      rcode: 0,
      answer: ['loop1.example.org 300 CNAME loop2.example.org', 'loop2.example.org 300 CNAME loop1.example.org'],
    },
  },
  {
    name: 'CNAME to a missing in-zone name: NXDOMAIN (RFC 6604)',
    q: ['dangling.example.org', TYPE.A],
    want: { rcode: 3, answer: ['dangling.example.org 300 CNAME nothere.example.org'], authority: [SOA] },
  },
  {
    name: 'CNAME out of the zone: CNAME only',
    q: ['external.example.org', TYPE.A],
    want: { rcode: 0, answer: ['external.example.org 300 CNAME target.example.net'], authority: [] },
  },
  {
    name: 'qtype CNAME is not followed',
    q: ['alias.example.org', TYPE.CNAME],
    want: { answer: ['alias.example.org 300 CNAME www.example.org'] },
  },
  {
    name: 'referral below a delegation: NS, glue, AA off',
    q: ['foo.sub.example.org', TYPE.A],
    want: {
      rcode: 0,
      aa: false,
      answer: [],
      authority: ['sub.example.org 300 NS ns1.sub.example.org', 'sub.example.org 300 NS ns.elsewhere.example.net'],
      additional: ['ns1.sub.example.org 300 A 192.0.2.53', 'ns1.sub.example.org 300 AAAA 2001:db8::53'],
    },
  },
  {
    name: 'referral at the delegation point itself',
    q: ['sub.example.org', TYPE.NS],
    want: {
      aa: false,
      answer: [],
      authority: ['sub.example.org 300 NS ns1.sub.example.org', 'sub.example.org 300 NS ns.elsewhere.example.net'],
    },
  },
  { name: 'glue name answers as a referral too', q: ['ns1.sub.example.org', TYPE.A], want: { aa: false, answer: [] } },
  {
    name: 'DS at the delegation point is NODATA from the parent',
    q: ['sub.example.org', TYPE.DS],
    want: { aa: true, rcode: 0, authority: [SOA] },
  },
  {
    name: 'ANY answers one RRset (RFC 8482)',
    q: ['example.org', TYPE.ANY],
    want: { answer: ['example.org 300 A 192.0.2.1'] },
  },
  {
    name: 'more specific zone answers',
    q: ['www.child.example.org', TYPE.A],
    want: { answer: ['www.child.example.org 300 A 192.0.2.99'] },
  },
  { name: 'REFUSED outside the zones', q: ['example.com', TYPE.A], want: { rcode: 5, aa: false, answer: [] } },
  { name: 'REFUSED for class CH', q: ['example.org', TYPE.A, { qclass: 3 }], want: { rcode: 5 } },
  { name: 'REFUSED for AXFR', q: ['example.org', TYPE.AXFR], want: { rcode: 5 } },
  {
    name: 'over 512 bytes without EDNS: TC, no partial RRset',
    q: ['big.example.org', TYPE.TXT],
    want: { tc: true, answer: [] },
  },
  {
    name: 'EDNS buffer of 1232 holds it',
    q: ['big.example.org', TYPE.TXT, { edns: {} }],
    want: {
      tc: false,
      answer: [
        'big.example.org 300 TXT ' + 'a'.repeat(200),
        'big.example.org 300 TXT ' + 'b'.repeat(200),
        'big.example.org 300 TXT ' + 'c'.repeat(200),
      ],
    },
  },
  {
    name: 'EDNS buffer of 512 truncates',
    q: ['big.example.org', TYPE.TXT, { edns: { udpSize: 512 } }],
    want: { tc: true, answer: [] },
  },
];

for (const c of cases) {
  test(c.name, () => {
    const got = ask(...c.q);
    const picked = Object.fromEntries(Object.keys(c.want).map((k) => [k, got[k as keyof Decoded]]));
    assert.deepEqual(picked, c.want);
  });
}

test('the question keeps the case it was asked in, ID and RD are copied', () => {
  const got = ask('WwW.ExAmPlE.oRg', TYPE.A, { id: 4242 });
  assert.equal(got.qname, 'WwW.ExAmPlE.oRg');
  assert.equal(got.id, 4242);
  assert.equal(got.rd, true);
  assert.equal(got.answer.length, 2);
  assert.equal(ask('NoThere.Example.Org', TYPE.A).qname, 'NoThere.Example.Org');
  assert.equal(ask('a.DEV.example.org', TYPE.A, { rd: false }).rd, false);
});

test('OPT echoed with our buffer size and the DO bit; BADVERS for version 1', () => {
  assert.deepEqual(ask('www.example.org', TYPE.A, { edns: { udpSize: 4096, do: true } }).opt, {
    udpSize: 1232,
    extRcode: 0,
    version: 0,
    do: true,
  });
  const bad = ask('www.example.org', TYPE.A, { edns: { version: 1 } });
  assert.deepEqual(bad.opt, { udpSize: 1232, extRcode: 1, version: 0, do: false });
  assert.equal(bad.rcode, 16); // dns2 reports the combined 12-bit rcode: BADVERS
  assert.deepEqual(bad.answer, []);
  assert.equal(ask('www.example.org', TYPE.A).opt, undefined);
});

test('TCP answers without the 512-byte limit', () => {
  assert.equal(ask('big.example.org', TYPE.TXT, {}, true).answer.length, 3);
});

test('NOTIMP for other opcodes, FORMERR for malformed questions, nothing for responses and runts', () => {
  assert.equal(ask('example.org', TYPE.A, { opcode: 2 }).rcode, 4);
  const two = buildQuery('example.org', TYPE.A);
  two.writeUInt16BE(2, 4);
  assert.equal(decode(answerQuery(two, two.length, false, table, createCounters())!).rcode, 1);
  const cut = buildQuery('example.org', TYPE.A).subarray(0, 20);
  assert.equal(answerQuery(cut, cut.length, false, table, createCounters())![3] & 0xf, 1);
  const response = buildQuery('example.org', TYPE.A);
  response[2] |= 0x80;
  assert.equal(answerQuery(response, response.length, false, table, createCounters()), null);
  assert.equal(answerQuery(Buffer.alloc(5), 5, false, table, createCounters()), null);
});
