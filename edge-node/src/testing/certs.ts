// Self-signed certificates for tests, made with the openssl command line.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isIP } from 'node:net';
import { writeSelfSigned } from '../tls/default-cert.js';

/** A self-signed certificate for `hostnames` (an IP address among them becomes an IP SAN). */
export function selfSigned(hostnames: string[]): { certificatePem: string; privateKeyPem: string } {
  const dir = mkdtempSync(join(tmpdir(), 'edge-cert-'));
  try {
    writeSelfSigned({ certFile: join(dir, 'c.pem'), keyFile: join(dir, 'k.pem') }, 2, `/CN=${hostnames[0]}`, [
      '-addext',
      `subjectAltName=${hostnames.map((h) => (isIP(h) ? `IP:${h}` : `DNS:${h}`)).join(',')}`,
    ]);
    return {
      certificatePem: readFileSync(join(dir, 'c.pem'), 'utf8'),
      privateKeyPem: readFileSync(join(dir, 'k.pem'), 'utf8'),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
