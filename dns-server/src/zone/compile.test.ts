// Table-driven tests of the zone compiler: which states are served, skipped records, proxied names, delegations.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compileZone } from './compile.js';
import { ZoneBuilder } from './builder.js';
import { sampleSnapshot, rec } from '../testing/fixtures.js';
import { TYPE } from '../wire/constants.js';
import { txtStrings, ipv6Bytes, normaliseName } from '../wire/rdata.js';

const EDGE = { edgeIpv4: ['203.0.113.1'], edgeIpv6: ['2001:db8:ffff::1'] };

const states: Array<{ state: string; dnsMode?: string; served: boolean }> = [
  { state: 'pending', served: true },
  { state: 'active', served: true },
  { state: 'moved', served: true },
  { state: 'disabled', served: false },
  { state: 'banned', served: false },
  { state: 'unverified', dnsMode: 'external', served: false },
  { state: 'active', dnsMode: 'external', served: false },
];
for (const c of states) {
  test(`state ${c.state} (${c.dnsMode ?? 'managed'}) is ${c.served ? '' : 'not '}served`, () => {
    const { zone } = compileZone(sampleSnapshot({ state: c.state, dnsMode: c.dnsMode ?? 'managed' }), EDGE);
    assert.equal(zone !== null, c.served);
  });
}

test('invalid records are skipped, each reported with its id; the rest is served', () => {
  const s = sampleSnapshot();
  s.zone.records = [
    rec('a', 'A', '192.0.2.1'),
    rec('b', 'A', 'not-an-ip'),
    rec('c', 'AAAA', '192.0.2.1'),
    rec('d', 'HINFO', 'x'),
    rec('e', 'MX', 'bad..name'),
  ];
  const { zone, problems } = compileZone(s, EDGE);
  assert.ok(zone!.nodes.get('a.example.org')!.rrsets.has(TYPE.A));
  assert.deepEqual(
    new Set(problems.map((p) => p.split(':')[0])),
    new Set(s.zone.records.slice(1).map((r) => `record ${r.id}`)),
  );
});

test('the SOA serial is the snapshot serial; NS is the nameserver set; user NS at the apex is ignored', () => {
  const s = sampleSnapshot();
  s.zone.serial = 42;
  s.zone.records.push(rec('@', 'NS', 'evil.example.net'));
  const apex = compileZone(s, EDGE).zone!.nodes.get('example.org')!;
  assert.equal(apex.rrsets.get(TYPE.SOA)!.rdatas[0][2].toString('hex').slice(0, 8), '0000002a');
  assert.deepEqual(apex.rrsets.get(TYPE.NS)!.targets, ['ns1.platform.test', 'ns2.platform.test']);
});

test('a CNAME beside other data keeps only the CNAME; a CNAME at the apex is dropped', () => {
  const s = sampleSnapshot();
  s.zone.records = [
    rec('x', 'CNAME', 'www.example.org'),
    rec('x', 'TXT', 'hi'),
    rec('@', 'CNAME', 'other.example.net'),
  ];
  const { zone, problems } = compileZone(s, EDGE);
  assert.deepEqual([...zone!.nodes.get('x.example.org')!.rrsets.keys()], [TYPE.CNAME]);
  assert.ok(!zone!.nodes.get('example.org')!.rrsets.has(TYPE.CNAME));
  assert.equal(problems.length, 2);
});

test('delegation points cover the names beneath them', () => {
  const zone = compileZone(sampleSnapshot(), EDGE).zone!;
  assert.equal(zone.nodes.get('sub.example.org')!.cut, 'sub.example.org');
  assert.equal(zone.nodes.get('ns1.sub.example.org')!.cut, 'sub.example.org');
  assert.equal(zone.nodes.get('www.example.org')!.cut, '');
});

const txt: Array<{ value: string; want: number[] }> = [
  { value: 'short', want: [5] },
  { value: 'x'.repeat(600), want: [255, 255, 90] },
  { value: '"a b" "c"', want: [9] }, // stored raw: quotes are part of the text
  { value: '', want: [0] },
];
for (const c of txt)
  test(`TXT ${JSON.stringify(c.value.slice(0, 12))} splits into ${c.want.join('+')} bytes`, () => {
    assert.deepEqual(
      txtStrings(c.value).map((b) => b.length),
      c.want,
    );
  });

const v6: Array<[string, string | null]> = [
  ['2001:db8::1', '20010db8000000000000000000000001'],
  ['::', '00000000000000000000000000000000'],
  ['::ffff:192.0.2.1', '00000000000000000000ffffc0000201'],
  ['1:2:3:4:5:6:7:8', '00010002000300040005000600070008'],
  ['192.0.2.1', null],
];
for (const [ip, hex] of v6) test(`IPv6 ${ip}`, () => assert.equal(ipv6Bytes(ip)?.toString('hex') ?? null, hex));

const names: Array<[string, string | null]> = [
  ['@', 'example.org'],
  ['Mail.Example.ORG.', 'mail.example.org'],
  ['.', ''],
  ['a..b', null],
  ['x'.repeat(64) + '.org', null],
];
for (const [raw, want] of names)
  test(`name ${raw.slice(0, 20)}`, () => assert.equal(normaliseName(raw, 'example.org'), want));

test('a snapshot replacing the served one recompiles only the names it changes and what reads them', () => {
  const base = sampleSnapshot();
  const builder = new ZoneBuilder(base, EDGE);
  const first = builder.zone!;
  const before = new Map(first.nodes);
  const s = structuredClone(base);
  s.zone.serial = 8;
  s.zone.records = s.zone.records.map((r) => (r.name === 'sip' ? { ...r, destination: '192.0.2.71' } : r));
  s.zone.records.push(rec('sub2', 'NS', 'ns.example.net'), rec('x.sub2', 'A', '192.0.2.99'));
  const result = builder.replace(s);
  assert.equal(result.how, 'patched');
  const second = builder.zone!;
  assert.equal(second, first, 'patched in place: the same zone object stays in the table');
  const node = (n: string) => second.nodes.get(`${n}.example.org`)!;
  const old = (n: string) => before.get(`${n}.example.org`)!;
  assert.equal(node('www'), old('www'), 'unchanged name kept');
  assert.equal(node('shop'), old('shop'), 'unchanged proxied name kept');
  assert.equal(node('alias'), old('alias'), 'a CNAME to an unchanged name kept');
  assert.notEqual(node('sip'), old('sip'), 'changed name rebuilt');
  assert.notEqual(node('_sip._tcp'), old('_sip._tcp'), 'SRV (additional from sip) rebuilt');
  assert.equal(node('x.sub2').cut, 'sub2.example.org');
  assert.equal(second.serial, 8);
  // The same answers as compiling from scratch, the serial included.
  const fresh = compileZone(s, EDGE).zone!;
  assert.deepEqual([...second.nodes.keys()].sort(), [...fresh.nodes.keys()].sort());
  for (const [name, n] of fresh.nodes) {
    const got = second.nodes.get(name)!;
    n.slots.forEach((v, i) => {
      const g = got.slots[i];
      if (typeof v === 'object' && v && typeof g === 'object' && g)
        assert.ok(v.bytes.equals(g.bytes), `${name} slot ${i}`);
      else assert.equal(g, v, `${name} slot ${i}`);
    });
  }
});
