// Self-signed certificates for tests, made with the openssl command line.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isIP } from 'node:net';

/** A self-signed certificate for `hostnames` (an IP address among them becomes an IP SAN). */
export function selfSigned(hostnames: string[]): { certificatePem: string; privateKeyPem: string } {
  const dir = mkdtempSync(join(tmpdir(), 'edge-cert-'));
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
        join(dir, 'k.pem'),
        '-out',
        join(dir, 'c.pem'),
        '-days',
        '2',
        '-subj',
        `/CN=${hostnames[0]}`,
        '-addext',
        `subjectAltName=${hostnames.map((h) => (isIP(h) ? `IP:${h}` : `DNS:${h}`)).join(',')}`,
      ],
      { stdio: 'ignore' },
    );
    return {
      certificatePem: readFileSync(join(dir, 'c.pem'), 'utf8'),
      privateKeyPem: readFileSync(join(dir, 'k.pem'), 'utf8'),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
