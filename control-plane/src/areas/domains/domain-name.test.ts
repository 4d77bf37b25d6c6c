import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseDomainName } from './domain-name.js';

const valid: Array<[string, string]> = [
  ['example.org', 'example.org'],
  ['EXAMPLE.Org.', 'example.org'],
  ['  www.example.org  ', 'www.example.org'],
  ['bücher.example', 'xn--bcher-kva.example'],
  ['b%C3%BCcher.example', 'xn--bcher-kva.example'],
  ['xn--bcher-kva.example', 'xn--bcher-kva.example'],
  ['مثال.إختبار', 'xn--mgbh0fb.xn--kgbechtv'],
  ['a-b.c-d.example.net', 'a-b.c-d.example.net'],
  ['123.example.com', '123.example.com'],
];
for (const [input, want] of valid) {
  test(`accepts ${input}`, () => assert.deepEqual(parseDomainName(input), { ok: true, name: want }));
}

const invalid = [
  '',
  '.',
  'com',
  'localhost.',
  '10.0.0.1',
  '::1',
  '[2001:db8::1]',
  'a..b',
  'a.-b.c',
  'a.b-.c',
  'a_b.example',
  'a b.example',
  'example.org/path',
  'user@example.org',
  'example.org:80',
  '*.example.org',
  'example.42',
  `${'x'.repeat(64)}.org`,
  '%zz.example',
  // Numbers the host parser reads as IPv4 (found by schemathesis: "0" was stored as the domain "0.0.0.0").
  '0',
  '0x7f',
  '3232235777',
];
for (const input of invalid) {
  test(`rejects ${JSON.stringify(input)}`, () => assert.equal(parseDomainName(input).ok, false));
}

test('a number is refused as the IP address the host parser reads', () => {
  assert.deepEqual(parseDomainName('0'), { ok: false, reason: 'an IP address is not a domain name' });
});
