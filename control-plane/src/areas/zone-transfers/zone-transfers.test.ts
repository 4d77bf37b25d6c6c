// Zone transfers through the API: secondaries and TSIG keys replaced whole, secrets write-only (given, kept, or
// generated and shown once), every bound and every address rule refused with a 400 before anything is stored, and the
// snapshot carrying the secrets sealed for nodes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { desc } from 'drizzle-orm';
import { decodeDomainSnapshot, openTsigSecret } from '@platform/shared/config';
import { ensureNodeToken } from '@platform/shared/node-token';
import { startTestControlPlane } from '../../../../test/helpers/control-plane.js';
import { configLog } from '../../db/schema.js';

test('zone transfers: replace, secrets write-only, bounds and address rules, sealed for nodes', async (t) => {
  const cp = await startTestControlPlane(t);
  const owner = await cp.user();
  const viewer = await cp.user();
  const name = await cp.domain(owner.key, 'xfr.example.org');
  await cp.addMember(name, viewer.id, 'viewer');
  const url = `/domains/${name}/zone-transfers`;
  const secret = Buffer.alloc(32, 9).toString('base64');
  const latest = async () => {
    const [row] = await cp.database.db.select().from(configLog).orderBy(desc(configLog.version)).limit(1);
    return decodeDomainSnapshot(row.payload!);
  };

  await t.test('bad input: 400 with the reason, nothing stored', async () => {
    const key = (n: number) => ({ name: `k${n}`, secret });
    const cases: Array<[unknown, RegExp]> = [
      [{ secondaries: [{ address: 'ns.example.net' }], tsig_keys: [] }, /must be an IPv4 or IPv6 address/],
      [{ secondaries: [{ address: '10.0.0.1' }], tsig_keys: [] }, /secondaries must be public addresses/],
      [{ secondaries: [{ address: '169.254.169.254' }], tsig_keys: [] }, /secondaries must be public addresses/],
      [{ secondaries: [{ address: '::1' }], tsig_keys: [] }, /secondaries must be public addresses/],
      [{ secondaries: [{ address: '192.0.2.1', tsig_key: 'nope' }], tsig_keys: [] }, /is not in tsig_keys/],
      [{ secondaries: [{ address: '192.0.2.1' }, { address: '192.0.2.1' }], tsig_keys: [] }, /listed twice/],
      [{ secondaries: [], tsig_keys: [key(1), key(1)] }, /listed twice/],
      [{ secondaries: [], tsig_keys: [{ name: 'k', secret: 'c2hvcnQ=' }] }, /16 to 64 bytes/],
      [{ secondaries: [], tsig_keys: [{ name: 'k', secret: 'not base64!' }] }, /base64/],
      [{ secondaries: [], tsig_keys: [{ name: 'bad name' }] }, /domain-style name/],
      [{ secondaries: [], tsig_keys: [{ name: 'k', algorithm: 'hmac-md5' }] }, /./],
      [{ secondaries: Array.from({ length: 11 }, (_, i) => ({ address: `192.0.2.${i + 1}` })), tsig_keys: [] }, /./],
      [{ secondaries: [], tsig_keys: [1, 2, 3, 4, 5, 6].map(key) }, /./],
      [{ secondaries: [{ address: '192.0.2.1', port: 0 }], tsig_keys: [] }, /./],
      [{ secondaries: [{ address: 'x'.repeat(100_000) }], tsig_keys: [] }, /./],
      [{ secondaries: [] }, /./],
      [{ secondaries: [], tsig_keys: [], extra: true }, /./],
    ];
    for (const [body, reason] of cases) {
      const res = await cp.call(owner.key, 'PUT', url, body);
      assert.equal(res.statusCode, 400, `${JSON.stringify(body).slice(0, 120)}: ${res.body}`);
      assert.match(res.json().error, reason);
    }
    assert.deepEqual((await cp.call(owner.key, 'GET', url)).json(), { secondaries: [], tsig_keys: [] });
    assert.equal((await cp.call(viewer.key, 'PUT', url, { secondaries: [], tsig_keys: [] })).statusCode, 403);
    const ext = await cp.domain(owner.key, 'elsewhere.example.net', 'external');
    const res = await cp.call(owner.key, 'PUT', `/domains/${ext}/zone-transfers`, { secondaries: [], tsig_keys: [] });
    assert.equal(res.statusCode, 400);
  });

  await t.test('a secondary with a given key, one with a generated key; secrets never read back', async () => {
    const res = await cp.call(owner.key, 'PUT', url, {
      secondaries: [
        { address: '192.0.2.53', tsig_key: 'given' },
        { address: '2001:db8::53', port: 5353, tsig_key: 'made' },
      ],
      tsig_keys: [{ name: 'given', secret }, { name: 'made' }],
    });
    assert.equal(res.statusCode, 200, res.body);
    const body = res.json();
    assert.deepEqual(Object.keys(body.generated_secrets), ['made']);
    assert.equal(Buffer.from(body.generated_secrets.made, 'base64').length, 32);
    const read = (await cp.call(viewer.key, 'GET', url)).json();
    assert.deepEqual(read, {
      secondaries: [
        { address: '192.0.2.53', port: 53, tsig_key: 'given' },
        { address: '2001:db8::53', port: 5353, tsig_key: 'made' },
      ],
      tsig_keys: [
        { name: 'given', algorithm: 'hmac-sha256' },
        { name: 'made', algorithm: 'hmac-sha256' },
      ],
    });
    assert.doesNotMatch(JSON.stringify(read), new RegExp(secret.slice(0, 20)));
    const snap = await latest();
    const token = ensureNodeToken(cp.config.dataDir, undefined);
    const given = snap.transfers!.tsigKeys.find((k) => k.name === 'given')!;
    assert.equal(given.secret.length, 0, 'never a plain secret');
    assert.equal(openTsigSecret(token, name, 'given', given.secretSealed).toString('base64'), secret);
    // Named again without a secret: kept, not regenerated.
    const again = await cp.call(owner.key, 'PUT', url, {
      secondaries: [{ address: '192.0.2.53', tsig_key: 'made' }],
      tsig_keys: [{ name: 'made' }],
    });
    assert.deepEqual(again.json().generated_secrets, {});
    const made = (await latest()).transfers!.tsigKeys[0];
    assert.equal(
      openTsigSecret(token, name, 'made', made.secretSealed).toString('base64'),
      body.generated_secrets.made,
    );
    // Emptied: the snapshot carries no transfers.
    await cp.call(owner.key, 'PUT', url, { secondaries: [], tsig_keys: [] });
    assert.equal((await latest()).transfers ?? null, null);
  });
});
