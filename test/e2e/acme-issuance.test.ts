// ACME issuance end to end, against Pebble resolving challenges through our own DNS node: a new proxied record ends
// with a certificate Pebble issued (apex and wildcard), stored by the control plane and served by the edge over
// HTTPS for that hostname, verified against Pebble's root; the dns-01 TXTs are withdrawn after.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startAcmeStack, type AcmeStack } from './acme-harness.js';
import { eventually } from '../helpers/workflows-harness.js';

let S: AcmeStack;
before(async () => {
  S = await startAcmeStack('acme-issue');
});
after(async () => {
  if (process.env.ACME_DEBUG) console.log(S?.outputs());
  await S?.close();
});

test('a new proxied record ends with a Pebble-issued certificate served by the edge', async () => {
  const d = 'shop.example.org';
  await S.activeDomain(d);
  await S.proxied(d, 'www');
  const cert = await S.served(`www.${d}`);
  assert.match(String(cert.issuer.CN), /Pebble Intermediate/);
  assert.deepEqual(cert.subjectaltname?.split(', ').sort(), [`DNS:*.${d}`, `DNS:${d}`]);
  // The apex and any other name one label deep are served by the same certificate.
  assert.equal((await S.handshake(d)).fingerprint256, cert.fingerprint256);
  assert.equal((await S.handshake(`api.${d}`)).fingerprint256, cert.fingerprint256);
  // Another hostname's SNI is not this domain's certificate.
  await assert.rejects(S.handshake('www.other.example.net'));
  // The challenge TXTs were withdrawn: no record of the platform's is left in the zone.
  const records = await eventually('the challenge records to be withdrawn', async () => {
    const list = (await S.L.api('GET', `/domains/${d}/records/`)).body as Array<{ name: string; type: string }>;
    return list.some((r) => r.type === 'TXT') ? undefined : list;
  });
  assert.deepEqual(
    records.map((r) => [r.name, r.type]),
    [['www', 'A']],
  );
});
