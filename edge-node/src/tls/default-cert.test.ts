// The self-signed default certificate when cluster workers generate it at the same moment: every process must end
// with the same loadable pair (a worker given one process's certificate and another's key cannot start HTTPS).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { callInProcessesAtOnce } from '@platform/shared/testing/at-once';
import { defaultCertificate } from './default-cert.js';

type CertificateFiles = { certFile: string; keyFile: string };

const MODULE = fileURLToPath(new URL('./default-cert.ts', import.meta.url));

function fingerprintOfMatchingPair(files: CertificateFiles): string {
  const cert = new X509Certificate(readFileSync(files.certFile));
  assert.ok(cert.checkPrivateKey(createPrivateKey(readFileSync(files.keyFile))), 'the key is the certificate’s');
  return cert.fingerprint256;
}

test('processes generating the default certificate at once all get one matching pair', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'default-cert-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  for (let round = 0; round < 3; round++) {
    const tlsDir = join(dir, `round-${round}`);
    const results = await callInProcessesAtOnce<CertificateFiles | null>(6, MODULE, 'defaultCertificate', [tlsDir, {}]);
    const fingerprints = new Set(
      results.map((files) => {
        assert.ok(files, 'a default certificate');
        return fingerprintOfMatchingPair(files);
      }),
    );
    assert.equal(fingerprints.size, 1, `one certificate for every process, got ${fingerprints.size}`);
    // Later starts keep it.
    assert.deepEqual(defaultCertificate(tlsDir, {}), results[0]);
  }
});

test('a broken pair left on disk is replaced; configured files are used as given', (t) => {
  const tlsDir = mkdtempSync(join(tmpdir(), 'default-cert-'));
  t.after(() => rmSync(tlsDir, { recursive: true, force: true }));
  const first = defaultCertificate(tlsDir, {})!;
  const before = fingerprintOfMatchingPair(first);
  writeFileSync(first.keyFile, readFileSync(first.keyFile, 'utf8').slice(0, 40));
  const again = defaultCertificate(tlsDir, {})!;
  assert.notEqual(fingerprintOfMatchingPair(again), before);
  assert.deepEqual(defaultCertificate(tlsDir, { certFile: '/etc/x.crt', keyFile: '/etc/x.key' }), {
    certFile: '/etc/x.crt',
    keyFile: '/etc/x.key',
  });
});
