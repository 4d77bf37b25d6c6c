// Private keys of certificates on their way to nodes: sealed by the control plane with a key derived from the node
// token (the secret the sync link already authenticates with), opened by the edge. The config log, the hub's frames
// and the nodes' LMDB stores hold only the sealed form (docs/decisions.md "Certificate keys to nodes").
import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes } from 'node:crypto';
import { PlatformError } from '../errors.js';

const VERSION = 1;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
const INFO = 'platform certificate private keys to nodes v1';

/**
 * AES-256-GCM under `key` (32 bytes), bound to `aad`: nonce, ciphertext and tag in one buffer. The one sealing of the
 * platform's secrets: keys to nodes here, and at rest the certificate key vault and held email messages.
 */
export function sealAesGcm(key: Buffer, aad: Buffer | string, plain: Buffer): Buffer {
  const nonce = randomBytes(NONCE_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, nonce);
  cipher.setAAD(typeof aad === 'string' ? Buffer.from(aad) : aad);
  return Buffer.concat([nonce, cipher.update(plain), cipher.final(), cipher.getAuthTag()]);
}

/** Opens what sealAesGcm sealed under the same key and `aad`; throws when either differs or `sealed` was altered. */
export function openAesGcm(key: Buffer, aad: Buffer | string, sealed: Buffer): Buffer {
  const decipher = createDecipheriv('aes-256-gcm', key, sealed.subarray(0, NONCE_BYTES));
  decipher.setAAD(typeof aad === 'string' ? Buffer.from(aad) : aad);
  decipher.setAuthTag(sealed.subarray(sealed.length - TAG_BYTES));
  return Buffer.concat([decipher.update(sealed.subarray(NONCE_BYTES, sealed.length - TAG_BYTES)), decipher.final()]);
}

const keys = new Map<string, Buffer>();

function sealingKey(nodeToken: string): Buffer {
  let key = keys.get(nodeToken);
  if (!key) {
    key = Buffer.from(hkdfSync('sha256', nodeToken, 'platform-cert-seal', INFO, 32));
    if (keys.size > 8) keys.clear();
    keys.set(nodeToken, key);
  }
  return key;
}

/** Binds a sealed key to its domain and certificate: a sealed key moved to another certificate does not open. */
function aad(domain: string, certificatePem: string): Buffer {
  return createHash('sha256').update(domain).update('\n').update(certificatePem).digest();
}

/** The private key PEM sealed for nodes: version byte, nonce, AES-256-GCM ciphertext, tag. */
export function sealCertificateKey(
  nodeToken: string,
  domain: string,
  certificatePem: string,
  privateKeyPem: string,
): Uint8Array {
  return Buffer.concat([
    Buffer.from([VERSION]),
    sealAesGcm(sealingKey(nodeToken), aad(domain, certificatePem), Buffer.from(privateKeyPem, 'utf8')),
  ]);
}

/**
 * Opens what sealCertificateKey sealed. Throws CFG_ERR_CERT_SEAL when it was sealed with another node token, for
 * another domain or certificate, or was altered.
 */
export function openCertificateKey(
  nodeToken: string,
  domain: string,
  certificatePem: string,
  sealed: Uint8Array,
): string {
  const b = Buffer.from(sealed.buffer, sealed.byteOffset, sealed.byteLength);
  if (b.length < 1 + NONCE_BYTES + TAG_BYTES || b[0] !== VERSION)
    throw new PlatformError('CFG_ERR_CERT_SEAL', 'sealed certificate key: unknown format', { kind: 'system' });
  try {
    return openAesGcm(sealingKey(nodeToken), aad(domain, certificatePem), b.subarray(1)).toString('utf8');
  } catch (err) {
    throw new PlatformError(
      'CFG_ERR_CERT_SEAL',
      'sealed certificate key does not open: sealed with another node token, or for another certificate',
      { kind: 'system', cause: err },
    );
  }
}
