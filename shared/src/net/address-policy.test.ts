import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AddressPolicy, isAddressRefused, parseNetworks, resolveAllowed } from './address-policy.js';

const strict = new AddressPolicy([]);

test('internal addresses are refused, in every spelling', () => {
  const refused = [
    '127.0.0.1',
    '127.1.2.3',
    '0.0.0.0',
    '10.0.0.1',
    '172.16.5.4',
    '172.31.255.255',
    '192.168.1.1',
    '169.254.169.254',
    '100.64.0.1',
    '100.127.255.255',
    '224.0.0.1',
    '255.255.255.255',
    '::',
    '::1',
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
    '::ffff:169.254.169.254',
    '::127.0.0.1',
    'fc00::1',
    'fd12:3456::1',
    'fe80::1',
    'fe80::1%eth0',
    'ff02::1',
    '64:ff9b::10.0.0.1',
    '2002:7f00:1::1',
  ];
  for (const a of refused) assert.ok(strict.refusal(a, 80), `${a} must be refused`);
  assert.match(strict.refusal('169.254.169.254', 80)!.reason, /link-local/);
  assert.match(strict.refusal('::ffff:127.0.0.1', 80)!.reason, /loopback/);
  assert.match(strict.refusal('100.64.0.1', 80)!.reason, /CGNAT/);
});

test('public addresses pass', () => {
  for (const a of [
    '8.8.8.8',
    '1.1.1.1',
    '172.32.0.1',
    '100.128.0.1',
    '192.0.2.1',
    '2606:4700::1111',
    '64:ff9b::8.8.8.8',
  ])
    assert.equal(strict.refusal(a, 443), undefined, a);
});

test('ALLOWED_PRIVATE_NETWORKS lets listed ranges through, mapped forms included; own endpoints stay refused', () => {
  const { ranges, problems } = parseNetworks(' 127.0.0.0/8, fd00::/8 ,10.1.2.3');
  assert.deepEqual(problems, []);
  const p = new AddressPolicy(ranges, [{ address: '127.0.0.1', port: 8080 }]);
  assert.equal(p.refusal('127.0.0.1', 9000), undefined);
  assert.equal(p.refusal('::ffff:127.0.0.1', 9000), undefined);
  assert.equal(p.refusal('fd00::5', 80), undefined);
  assert.equal(p.refusal('10.1.2.3', 80), undefined);
  assert.ok(p.refusal('10.1.2.4', 80));
  assert.ok(p.refusal('169.254.169.254', 80));
  assert.match(p.refusal('127.0.0.1', 8080)!.reason, /platform itself/);
  assert.match(p.refusal('::ffff:127.0.0.1', 8080)!.reason, /platform itself/);
});

test('a wildcard own endpoint covers the machine addresses on that port', () => {
  const p = new AddressPolicy(parseNetworks('0.0.0.0/0').ranges, [{ address: '0.0.0.0', port: 8081 }]);
  assert.ok(p.refusal('127.0.0.1', 8081));
  assert.equal(p.refusal('127.0.0.1', 8082), undefined);
});

test('bad ALLOWED_PRIVATE_NETWORKS entries are named', () => {
  const { problems } = parseNetworks('10.0.0.0/8,nonsense,10.0.0.1-10.0.0.9');
  assert.equal(problems.length, 2);
});

test('resolveAllowed checks what a name resolves to and returns that address', async () => {
  await assert.rejects(resolveAllowed(strict, 'localhost', 80), (err) => isAddressRefused(err));
  const p = new AddressPolicy(parseNetworks('127.0.0.0/8').ranges);
  assert.equal(await resolveAllowed(p, '127.0.0.1', 80), '127.0.0.1');
  assert.equal(await resolveAllowed(p, '[::ffff:127.0.0.1]', 80), '::ffff:127.0.0.1');
  await assert.rejects(resolveAllowed(strict, '[::1]', 80), /::1 is a loopback address/);
});
