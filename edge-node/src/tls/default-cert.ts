// The certificate served when SNI names no installed certificate: configured files, or a self-signed one generated
// once with the openssl command line into the TLS directory (clients then fail verification: a clear TLS failure).
import { execFileSync } from 'node:child_process';
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';

interface CertificateFiles {
  certFile: string;
  keyFile: string;
}

/** True when both files exist and the key is the certificate's. */
function pairMatches(pair: CertificateFiles): boolean {
  try {
    const cert = new X509Certificate(readFileSync(pair.certFile));
    return cert.checkPrivateKey(createPrivateKey(readFileSync(pair.keyFile)));
  } catch {
    return false;
  }
}

/** Writes a new P-256 key and a self-signed certificate for it, with the openssl command line. */
export function writeSelfSigned(files: CertificateFiles, days: number, subject: string, extra: string[] = []): void {
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-keyout',
      files.keyFile,
      '-out',
      files.certFile,
      '-days',
      String(days),
      '-subj',
      subject,
      ...extra,
    ],
    { stdio: 'ignore' },
  );
}

export function defaultCertificate(
  tlsDir: string,
  configured: { certFile?: string; keyFile?: string },
): CertificateFiles | undefined {
  if (configured.certFile && configured.keyFile) return { certFile: configured.certFile, keyFile: configured.keyFile };
  mkdirSync(tlsDir, { recursive: true, mode: 0o700 });
  const dir = join(tlsDir, 'default');
  const pair = { certFile: join(dir, 'default.crt'), keyFile: join(dir, 'default.key') };
  if (pairMatches(pair)) return pair;
  // Cluster workers start together. Two processes writing the same two files could leave one's certificate beside the
  // other's key, which no worker could load again; so each generates into a directory of its own and renames it into
  // place whole. The first rename wins; the others find its pair and drop theirs.
  const own = mkdtempSync(join(tlsDir, 'default-'));
  try {
    writeSelfSigned(
      { certFile: join(own, 'default.crt'), keyFile: join(own, 'default.key') },
      3650,
      '/CN=edge-default.invalid',
    );
    try {
      renameSync(own, dir);
    } catch {
      // Taken by another process, or a broken pair (a half-written one from before): replace only the broken.
      if (!pairMatches(pair)) {
        rmSync(dir, { recursive: true, force: true });
        renameSync(own, dir);
      }
    }
  } catch {
    return undefined;
  } finally {
    rmSync(own, { recursive: true, force: true });
  }
  return pairMatches(pair) ? pair : undefined;
}
