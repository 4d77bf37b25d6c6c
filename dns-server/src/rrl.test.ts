// The rate limiter's table and address parsing, driven with an explicit clock (the e2e attack tests are in
// test/e2e/dns-abuse.test.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ResponseRateLimiter, RRL, RRL_CLASS, parseAddress, parsedWords } from './rrl.js';
import { clientKey } from './server.js';
import { loadConfig } from './config.js';

const cfg = { rate: 10, slip: 2, ipv4Prefix: 24, ipv6Prefix: 56, tableSize: 1024 };

function burst(l: ResponseRateLimiter, n: number, addr: string, name = 'www.example.org', now = 1000): number[] {
  const out = [0, 0, 0];
  for (let i = 0; i < n; i++) out[l.check(addr, RRL_CLASS.POSITIVE, name, 1, now)]++;
  return out;
}

test('addresses parse in every text form node:dgram and node:net report', () => {
  const cases: Array<[string, number[] | null]> = [
    ['192.0.2.1', [0, 0, 0, 0, 0, 0xffff, 0xc000, 0x0201]],
    ['::ffff:127.0.0.2', [0, 0, 0, 0, 0, 0xffff, 0x7f00, 0x0002]],
    ['2001:db8::1', [0x2001, 0xdb8, 0, 0, 0, 0, 0, 1]],
    ['2001:db8:1:2:3:4:5:6', [0x2001, 0xdb8, 1, 2, 3, 4, 5, 6]],
    ['::1', [0, 0, 0, 0, 0, 0, 0, 1]],
    ['::', [0, 0, 0, 0, 0, 0, 0, 0]],
    ['fe80::1%eth0', [0xfe80, 0, 0, 0, 0, 0, 0, 1]],
    ['2001:DB8::', [0x2001, 0xdb8, 0, 0, 0, 0, 0, 0]],
    ['1.2.3', null],
    ['1.2.3.256', null],
    ['1::2::3', null],
    ['12345::', null],
    ['1:2:3:4:5:6:7:8:9', null],
    ['', null],
  ];
  for (const [text, words] of cases) {
    assert.equal(parseAddress(text), words !== null, text);
    if (words) assert.deepEqual(parsedWords(), words, text);
  }
});

test('a bucket answers `rate` at once, then limits; every slip-th limited answer is truncated', () => {
  const l = new ResponseRateLimiter(cfg);
  assert.deepEqual(burst(l, 100, '192.0.2.1'), [10, 45, 45]);
  // The same /24 shares the bucket; another /24, another name or another class does not.
  assert.deepEqual(burst(l, 4, '192.0.2.200'), [0, 2, 2]);
  assert.deepEqual(burst(l, 10, '192.0.3.1'), [10, 0, 0]);
  assert.deepEqual(burst(l, 10, '192.0.2.1', 'mail.example.org'), [10, 0, 0]);
  assert.equal(l.check('192.0.2.1', RRL_CLASS.NODATA, 'www.example.org', 1, 1000), RRL.ALLOW);
});

test('tokens come back at `rate` per second, never more than `rate` stored', () => {
  const l = new ResponseRateLimiter(cfg);
  burst(l, 10, '192.0.2.1', 'x', 0);
  assert.equal(l.check('192.0.2.1', RRL_CLASS.POSITIVE, 'x', 1, 0), RRL.DROP);
  assert.equal(burst(l, 5, '192.0.2.1', 'x', 100)[RRL.ALLOW], 1); // 100 ms: one token
  assert.equal(burst(l, 20, '192.0.2.1', 'x', 60_000)[RRL.ALLOW], 10); // a minute idle: still a burst of 10
});

test('slip 0 drops everything over the rate, slip 1 truncates everything', () => {
  assert.deepEqual(burst(new ResponseRateLimiter({ ...cfg, slip: 0 }), 30, '192.0.2.1'), [10, 20, 0]);
  assert.deepEqual(burst(new ResponseRateLimiter({ ...cfg, slip: 1 }), 30, '192.0.2.1'), [10, 0, 20]);
});

test('IPv6 clients share a bucket per /56; IPv4-mapped addresses count as IPv4', () => {
  const l = new ResponseRateLimiter(cfg);
  burst(l, 10, '2001:db8:aa:bb00::1');
  assert.equal(burst(l, 1, '2001:db8:aa:bbff:1::9')[RRL.ALLOW], 0, 'same /56');
  assert.equal(burst(l, 1, '2001:db8:aa:cc00::1')[RRL.ALLOW], 1, 'another /56');
  burst(l, 10, '198.51.100.1');
  assert.equal(burst(l, 1, '::ffff:198.51.100.77')[RRL.ALLOW], 0);
});

test('errors share one bucket per prefix whatever the name; NXDOMAIN is keyed by what the caller passes (the zone)', () => {
  const l = new ResponseRateLimiter(cfg);
  let allowed = 0;
  for (let i = 0; i < 50; i++)
    if (l.check('192.0.2.1', RRL_CLASS.ERROR, `r${i}.example.com`, i, 1000) === RRL.ALLOW) allowed++;
  assert.equal(allowed, 10);
  allowed = 0;
  for (let i = 0; i < 50; i++)
    if (l.check('192.0.2.1', RRL_CLASS.NXDOMAIN, 'example.org', 0, 1000) === RRL.ALLOW) allowed++;
  assert.equal(allowed, 10);
});

test('the table is fixed in size: a flood of distinct buckets replaces idle ones, never a limited one', () => {
  const l = new ResponseRateLimiter({ ...cfg, tableSize: 1000 });
  assert.equal(l.size, 1024);
  for (let i = 0; i < 200_000; i++)
    l.check(`10.${(i >> 16) & 255}.${(i >> 8) & 255}.1`, RRL_CLASS.POSITIVE, 'a', i, 1000);
  assert.equal(l.size, 1024);
  // A bucket in use keeps its place against idle ones: the victim's limited bucket is not reset by others' one-offs.
  burst(l, 10, '192.0.2.1', 'victim', 2000);
  for (let i = 0; i < 5000; i++) l.check(`10.9.${i & 255}.1`, RRL_CLASS.POSITIVE, `n${i}`, 1, 1000);
  assert.equal(burst(l, 10, '192.0.2.1', 'victim', 2000)[RRL.ALLOW], 0);
});

test('the per-client TCP limit counts IPv4 addresses and IPv6 /64s', () => {
  assert.equal(clientKey('127.0.0.2'), '127.0.0.2');
  assert.equal(clientKey('::ffff:127.0.0.2'), '127.0.0.2');
  assert.equal(clientKey('2001:db8:1:2:aaaa::1'), clientKey('2001:db8:1:2:bbbb::9'));
  assert.notEqual(clientKey('2001:db8:1:2::1'), clientKey('2001:db8:1:3::1'));
});

test('exempt networks (DNS_RRL_EXEMPT) are never limited; the others are', () => {
  const l = new ResponseRateLimiter({ ...cfg, exempt: ['192.0.2.0/24', '2001:db8::/32'] });
  assert.deepEqual(burst(l, 100, '192.0.2.1'), [100, 0, 0]);
  assert.deepEqual(burst(l, 100, '2001:db8::1'), [100, 0, 0]);
  assert.deepEqual(burst(l, 100, '198.51.100.1'), [10, 45, 45]);
});

test('DNS_RRL_EXEMPT is read as CIDRs; a bad entry fails the start with its name', () => {
  const env = { DNS_RRL_EXEMPT: '192.0.2.0/24, 2001:db8::/32' };
  assert.deepEqual(loadConfig(env).rrl.exempt, ['192.0.2.0/24', '2001:db8::/32']);
  assert.throws(() => loadConfig({ DNS_RRL_EXEMPT: '192.0.2.0/33' }), /DNS_RRL_EXEMPT/);
  assert.deepEqual(loadConfig({}).rrl, {
    rate: 200,
    slip: 2,
    ipv4Prefix: 24,
    ipv6Prefix: 56,
    tableSize: 262144,
    exempt: [],
  });
});

test('a fresh bucket answers exactly `rate` at any clock reading (sums of the interval round)', () => {
  for (const rate of [20, 3, 200, 7]) {
    for (const now of [12_345.678912, 1_795_613_218.260_7, 0.1 + 0.2, 98_765.4321]) {
      const l = new ResponseRateLimiter({ ...cfg, rate });
      const [allowed] = burst(l, rate + 5, '192.0.2.1', 'www.example.org', now);
      assert.equal(allowed, rate, `rate ${rate} at ${now}`);
    }
  }
});
