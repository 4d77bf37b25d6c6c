// The certificate served when SNI names no installed certificate: configured files, or a self-signed one generated
// once with the openssl command line into the TLS directory (clients then fail verification: a clear TLS failure).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';

export function defaultCertificate(
  tlsDir: string,
  configured: { certFile?: string; keyFile?: string },
): { certFile: string; keyFile: string } | undefined {
  if (configured.certFile && configured.keyFile) return { certFile: configured.certFile, keyFile: configured.keyFile };
  mkdirSync(tlsDir, { recursive: true, mode: 0o700 });
  const certFile = join(tlsDir, 'default.crt');
  const keyFile = join(tlsDir, 'default.key');
  if (existsSync(certFile) && existsSync(keyFile)) return { certFile, keyFile };
  try {
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
        keyFile,
        '-out',
        certFile,
        '-days',
        '3650',
        '-subj',
        '/CN=edge-default.invalid',
      ],
      { stdio: 'ignore' },
    );
    return { certFile, keyFile };
  } catch {
    return undefined;
  }
}
