import { test } from 'node:test';
import assert from 'node:assert/strict';
import { canonicaliseIpList, IpRangeSet, MAX_IP_ENTRIES, parsePeerAddress } from './ip.js';

const canon: { name: string; input: string[]; want: string[] }[] = [
  { name: 'CIDR host bits masked (v4)', input: ['10.1.2.3/8'], want: ['10.0.0.0/8'] },
  { name: 'CIDR host bits masked (v6)', input: ['2001:db8::1/32'], want: ['2001:db8::/32'] },
  { name: 'range ordered low to high', input: ['9.9.9.9-1.1.1.1'], want: ['1.1.1.1-9.9.9.9'] },
  { name: 'v6 range ordered', input: ['2001:db8::ff-2001:db8::1'], want: ['2001:db8::1-2001:db8::ff'] },
  { name: 'IPv4-mapped unmapped', input: ['::ffff:192.0.2.1'], want: ['192.0.2.1'] },
  { name: 'IPv4-mapped hex form unmapped', input: ['::ffff:c000:201'], want: ['192.0.2.1'] },
  { name: 'IPv4-mapped CIDR unmapped with prefix', input: ['::ffff:10.9.0.0/104'], want: ['10.0.0.0/8'] },
  { name: 'IPv6 lower case and compressed', input: ['2001:DB8:0:0:0:0:0:1'], want: ['2001:db8::1'] },
  {
    name: 'duplicates dropped after canonicalisation, order kept',
    input: ['192.0.2.9', '10.1.0.0/16', '::ffff:192.0.2.9', '10.1.5.5/16', '198.51.100.1'],
    want: ['192.0.2.9', '10.1.0.0/16', '198.51.100.1'],
  },
  { name: 'whitespace trimmed', input: [' 192.0.2.1 '], want: ['192.0.2.1'] },
  { name: 'one-address range collapses', input: ['192.0.2.1-192.0.2.1'], want: ['192.0.2.1'] },
];
for (const c of canon) {
  test(`canonicalise: ${c.name}`, () => {
    const r = canonicaliseIpList(c.input);
    assert.ok(r.ok, JSON.stringify(r));
    assert.deepEqual(r.value, c.want);
  });
}

const bad: { name: string; input: string[]; index: number }[] = [
  { name: 'not an address', input: ['192.0.2.1', 'example.org'], index: 1 },
  { name: 'prefix too long', input: ['192.0.2.0/33'], index: 0 },
  { name: 'mixed family range', input: ['192.0.2.1-2001:db8::1'], index: 0 },
  { name: 'octet out of range', input: ['256.1.1.1'], index: 0 },
];
for (const c of bad) {
  test(`canonicalise rejects: ${c.name}`, () => {
    const r = canonicaliseIpList(c.input);
    assert.equal(r.ok, false);
    if (!r.ok) assert.equal(r.problems[0].index, c.index);
  });
}

test('canonicalise rejects more than 256 entries', () => {
  const list = Array.from({ length: MAX_IP_ENTRIES + 1 }, (_, i) => `10.0.${i >> 8}.${i & 255}`);
  assert.equal(canonicaliseIpList(list).ok, false);
  assert.equal(canonicaliseIpList(list.slice(0, MAX_IP_ENTRIES)).ok, true);
});

const set = new IpRangeSet([
  '10.0.0.0/8',
  '192.0.2.10-192.0.2.20',
  '198.51.100.7',
  '2001:db8::/32',
  '2001:db8:ffff::1-2001:dba::5',
]);
const matches: { ip: string; want: boolean }[] = [
  { ip: '10.255.255.255', want: true },
  { ip: '11.0.0.0', want: false },
  { ip: '9.255.255.255', want: false },
  { ip: '192.0.2.10', want: true },
  { ip: '192.0.2.20', want: true },
  { ip: '192.0.2.21', want: false },
  { ip: '192.0.2.9', want: false },
  { ip: '198.51.100.7', want: true },
  { ip: '198.51.100.8', want: false },
  { ip: '::ffff:10.1.1.1', want: true },
  { ip: '2001:db8:1::1', want: true },
  { ip: '2001:db9::1', want: true },
  { ip: '2001:dba::5', want: true },
  { ip: '2001:dba::6', want: false },
  { ip: '::1', want: false },
];
for (const c of matches) {
  test(`IpRangeSet ${c.ip} → ${c.want}`, () => assert.equal(set.has(parsePeerAddress(c.ip)), c.want));
}

test('IpRangeSet binary search agrees with a linear scan on many ranges', () => {
  const entries = Array.from({ length: 256 }, (_, i) => `${10 + (i % 200)}.${i}.0.0/16`);
  const s = new IpRangeSet(entries);
  for (let i = 0; i < 2000; i++) {
    const a = (i * 2654435761) >>> 0;
    const ip = `${a >>> 24}.${(a >>> 16) & 255}.${(a >>> 8) & 255}.${a & 255}`;
    const linear = entries.some((_, j) => a >>> 24 === 10 + (j % 200) && ((a >>> 16) & 255) === j);
    assert.equal(s.has(parsePeerAddress(ip)), linear, ip);
  }
});

test('parsePeerAddress reads IPv4 exactly like the general parser', () => {
  for (const ip of ['0.0.0.0', '255.255.255.255', '192.0.2.1', '10.0.0.255']) {
    assert.equal(parsePeerAddress(ip).v4, Number(ip.split('.').reduce((a, p) => a * 256 + Number(p), 0)));
  }
  for (const ip of ['256.0.0.1', '1.2.3', '1.2.3.4.5', '01.2.3.4', 'a.b.c.d', ''])
    assert.equal(parsePeerAddress(ip).v4, -1, ip);
  assert.equal(parsePeerAddress('::ffff:192.0.2.1').v4, parsePeerAddress('192.0.2.1').v4);
});
