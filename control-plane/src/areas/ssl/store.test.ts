import { test } from 'node:test';
import assert from 'node:assert/strict';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { desc, eq, sql } from 'drizzle-orm';
import { decodeDomainSnapshot, openCertificateKey } from '@platform/shared/config';
import { ensureNodeToken } from '@platform/shared/node-token';
import { startTestControlPlane } from '../../../../test/helpers/control-plane.js';
import { chainFor, sign } from '../../../../test/helpers/certs.js';
import { configLog, domains } from '../../db/schema.js';
import { rowsOf } from '../../db/migrate.js';
import { storeIssuedCertificate } from './service.js';
import { servedHostnames } from './serving.js';
import { CERTIFICATE_KEY_FILE } from './key-vault.js';

test('servedHostnames: the chosen one wins all it covers; else exact before wildcard, uploaded, newest; expired never', () => {
  const now = 1_000;
  const c = (id: number, source: 'uploaded' | 'issued', hostnames: string[], more = {}) => ({
    id,
    source,
    hostnames,
    notAfterMs: 2_000,
    selected: false,
    ...more,
  });
  const served = (list: ReturnType<typeof c>[]) => Object.fromEntries(servedHostnames(list, now));
  assert.deepEqual(served([c(1, 'issued', ['a.x', 'b.x']), c(2, 'issued', ['a.x'])]), { 1: ['b.x'], 2: ['a.x'] });
  assert.deepEqual(served([c(1, 'uploaded', ['a.x']), c(2, 'issued', ['a.x', 'b.x'])]), { 1: ['a.x'], 2: ['b.x'] });
  // The chosen wildcard also wins the exact name another certificate lists.
  assert.deepEqual(served([c(1, 'uploaded', ['*.x'], { selected: true }), c(2, 'uploaded', ['www.x', 'x'])]), {
    1: ['*.x', 'www.x'],
    2: ['x'],
  });
  // Not chosen: a newer wildcard does not take a name another certificate lists exactly.
  assert.deepEqual(served([c(1, 'uploaded', ['www.x', 'x']), c(2, 'uploaded', ['*.x'])]), {
    1: ['www.x', 'x'],
    2: ['*.x'],
  });
  assert.deepEqual(served([c(1, 'uploaded', ['a.x'], { notAfterMs: 1_000 }), c(2, 'issued', ['a.x'])]), {
    2: ['a.x'],
  });
  assert.deepEqual(served([]), {});
});

test('storeIssuedCertificate: key sealed at rest, sealed for nodes in the snapshot, an older issued one replaced', async (t) => {
  const cp = await startTestControlPlane(t);
  const owner = await cp.user();
  const name = await cp.domain(owner.key, 'issued.example.org');
  // Generated on the first start, before any certificate.
  assert.equal(statSync(join(cp.config.dataDir, CERTIFICATE_KEY_FILE)).mode & 0o777, 0o600);
  const [dom] = await cp.database.db.select().from(domains).where(eq(domains.name, name));
  const lastSnapshot = async () => {
    const [row] = await cp.database.db
      .select()
      .from(configLog)
      .where(eq(configLog.domainId, dom!.id))
      .orderBy(desc(configLog.version))
      .limit(1);
    return decodeDomainSnapshot(row!.payload);
  };
  const { intermediate, leaf } = chainFor([name, `www.${name}`]);
  const stored = await storeIssuedCertificate(cp.app, name, {
    certPem: leaf.certPem,
    chainPem: intermediate.certPem,
    keyPem: leaf.keyPem,
  });
  assert.equal(stored.source, 'issued');
  assert.deepEqual(stored.hostnames, [name, `www.${name}`]);

  // At rest: no plain key anywhere in the row; the certificate key file is private.
  const raw = rowsOf<{ k: string }>(
    await cp.database.db.execute(sql`SELECT private_key_sealed AS k FROM certificates WHERE id = ${stored.id}`),
  )[0]!;
  assert.ok(raw.k.startsWith('v1:'));
  assert.ok(!raw.k.includes('PRIVATE KEY'));
  assert.equal(statSync(join(cp.config.dataDir, CERTIFICATE_KEY_FILE)).mode & 0o777, 0o600);

  // To nodes: the leaf and its intermediate, the key only sealed, opening with the node token.
  const snap = await lastSnapshot();
  assert.equal(snap.certificates.length, 1);
  const cert = snap.certificates[0]!;
  assert.deepEqual(cert.hostnames, [name, `www.${name}`]);
  assert.equal(cert.privateKeyPem, '');
  assert.ok(cert.certificatePem.includes(leaf.certPem.trim().split('\n')[1]!));
  assert.ok(cert.certificatePem.includes(intermediate.certPem.trim().split('\n')[1]!));
  const token = ensureNodeToken(cp.config.dataDir, cp.config.nodeToken);
  assert.equal(openCertificateKey(token, name, cert.certificatePem, cert.privateKeySealed!), leaf.keyPem);
  assert.throws(() => openCertificateKey(token, 'other.example.org', cert.certificatePem, cert.privateKeySealed!));
  assert.ok(Buffer.from(snap.certificates[0]!.privateKeySealed!).indexOf('PRIVATE KEY') < 0);

  // A control plane started with another node token appends the domain again, its key sealed under the new token.
  const rotated = await cp.withEnv({ NODE_TOKEN: 'rotated-node-token' });
  await rotated.ready();
  const resealed = (await lastSnapshot()).certificates[0]!;
  assert.equal(
    openCertificateKey('rotated-node-token', name, resealed.certificatePem, resealed.privateKeySealed!),
    leaf.keyPem,
  );
  const again = await cp.withEnv({ NODE_TOKEN: 'rotated-node-token' });
  await again.ready();
  assert.deepEqual((await lastSnapshot()).certificates[0]!.privateKeySealed, resealed.privateKeySealed);

  // A renewal covering the same names replaces it.
  const renewed = sign(intermediate, [name, `www.${name}`]);
  const second = await storeIssuedCertificate(cp.app, name, {
    certPem: `${renewed.certPem}${intermediate.certPem}`,
    keyPem: renewed.keyPem,
  });
  const left = rowsOf<{ id: number }>(
    await cp.database.db.execute(sql`SELECT id FROM certificates WHERE domain_id = ${dom!.id}`),
  );
  assert.deepEqual(
    left.map((r) => r.id),
    [second.id],
  );
  assert.equal((await lastSnapshot()).certificates.length, 1);

  // Names outside the domain, a key of another certificate, a chain out of order: refused, nothing stored.
  const outside = sign(intermediate, ['other.example.net']);
  await assert.rejects(
    storeIssuedCertificate(cp.app, name, { certPem: outside.certPem, keyPem: outside.keyPem }),
    /names nothing in issued.example.org/,
  );
  await assert.rejects(
    storeIssuedCertificate(cp.app, name, { certPem: renewed.certPem, keyPem: leaf.keyPem }),
    /does not match/,
  );
  await assert.rejects(
    storeIssuedCertificate(cp.app, name, {
      certPem: `${intermediate.certPem}${renewed.certPem}`,
      keyPem: renewed.keyPem,
    }),
    /CA certificate; put the leaf first|does not match/,
  );
  assert.equal(
    rowsOf(await cp.database.db.execute(sql`SELECT id FROM certificates WHERE domain_id = ${dom!.id}`)).length,
    1,
  );
});
