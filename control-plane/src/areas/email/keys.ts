// The domain's DKIM key: RSA 2048 generated at enable, the private key sealed at rest with the certificate key vault
// (bound to the domain and selector) and sealed again under the node token for the mail node.
import { generateKeyPair } from 'node:crypto';
import { promisify } from 'node:util';
import type { FastifyInstance } from 'fastify';
import { sealCertificateKey } from '@platform/shared/config';
import { ensureNodeToken } from '@platform/shared/node-token';
import { keyVault } from '../ssl/key-vault.js';

const generate = promisify(generateKeyPair);

export interface DkimKey {
  selector: string;
  publicKeyPem: string;
  sealedPrivateKey: string;
}

/** What the at-rest seal is bound to: a sealed key moved to another domain or selector does not open. */
const binding = (domain: string, selector: string) => `dkim:${domain}:${selector}`;

/** The certificate key vault over the control plane's secrets (the email area's sealing at rest). */
export function vaultOf(app: FastifyInstance) {
  const c = app.config as { dataDir: string; certificateKey?: string; nodeToken?: string };
  return keyVault({ dataDir: c.dataDir, certificateKey: c.certificateKey, nodeToken: c.nodeToken });
}

/** A new DKIM key for `domain`; the selector names the month it was made (`er202611`), as key rotation expects. */
export async function newDkimKey(app: FastifyInstance, domain: string, now = new Date()): Promise<DkimKey> {
  const { publicKey, privateKey } = await generate('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
  const selector = `er${now.getUTCFullYear()}${String(now.getUTCMonth() + 1).padStart(2, '0')}`;
  return {
    selector,
    publicKeyPem: publicKey,
    sealedPrivateKey: vaultOf(app).seal(privateKey, binding(domain, selector)),
  };
}

/** The public key as the DKIM TXT record carries it: `v=DKIM1; k=rsa; p=<base64 DER>`. */
export function dkimRecordValue(publicKeyPem: string): string {
  const b64 = publicKeyPem.replace(/-----[^-]+-----/g, '').replace(/\s+/g, '');
  return `v=DKIM1; k=rsa; p=${b64}`;
}

/** The private key opened from storage. */
export function openDkimKey(app: FastifyInstance, domain: string, selector: string, sealed: string): string {
  return vaultOf(app).open(sealed, binding(domain, selector));
}

/** The private key sealed under the node token for the mail node (base64), bound to the domain and public key. */
export function dkimKeyForNodes(
  app: FastifyInstance,
  domain: string,
  selector: string,
  publicKeyPem: string,
  sealed: string,
): string {
  const c = app.config as { dataDir: string; nodeToken?: string };
  const plain = openDkimKey(app, domain, selector, sealed);
  return Buffer.from(sealCertificateKey(ensureNodeToken(c.dataDir, c.nodeToken), domain, publicKeyPem, plain)).toString(
    'base64',
  );
}
