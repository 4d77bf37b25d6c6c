// Private keys of certificates at rest: AES-256-GCM under a key derived from CERTIFICATE_KEY (or DATA_DIR/certificate-key,
// generated on first start with mode 0600 like the node token), bound to the certificate's fingerprint. Also seals
// them for nodes (cert-seal.ts) when a snapshot carries them: opened here, sealed again under the node token.
import { createHash, hkdfSync } from 'node:crypto';
import { ensureNodeToken, ensureSecret } from '@platform/shared/node-token';
import {
  openAesGcm,
  sealAesGcm,
  sealCertificateKey,
  sealDnssecKey,
  sealTsigSecret,
  type Certificate,
} from '@platform/shared/config';

export const CERTIFICATE_KEY_FILE = 'certificate-key';
const PREFIX = 'v1:';

export interface KeyVaultConfig {
  dataDir: string;
  /** CERTIFICATE_KEY; undefined: read or generate DATA_DIR/certificate-key. */
  certificateKey?: string | undefined;
  /** NODE_TOKEN; undefined: read or generate DATA_DIR/node-token. */
  nodeToken?: string | undefined;
}

export interface KeyVault {
  /** The key PEM sealed for storage ("v1:" + base64 of nonce, ciphertext, tag), bound to `fingerprint`. */
  seal(privateKeyPem: string, fingerprint: string): string;
  /** Opens what seal() sealed for the same fingerprint; throws when the key or the fingerprint differs. */
  open(sealed: string, fingerprint: string): string;
  /** A public id of the node token keys are sealed under for nodes (a hash; the token cannot be derived from it). */
  nodeTokenId(): string;
  /** Reads (or generates) both secrets now: the control plane calls it at start, so the key file exists from then. */
  ensureSecrets(): void;
  /** The certificate as a node-bound snapshot carries it: the key sealed under the node token, no plain key. */
  forNodes(
    domain: string,
    cert: { hostnames: string[]; certificatePem: string; sealedKey: string; fingerprint: string; notAfterMs: number },
  ): Certificate;
  /** A DNSSEC private key (PKCS#8 DER) sealed under the node token for the DNS nodes (shared config/dnssec.ts). */
  sealForNodes(domain: string, publicKey: Uint8Array, der: Uint8Array): Uint8Array;
  /** A TSIG secret sealed under the node token for the DNS nodes. */
  sealTsigForNodes(domain: string, keyName: string, secret: Uint8Array): Uint8Array;
}

/** A vault over the configured secrets; they are read (or generated) on first use, not at construction. */
export function keyVault(config: KeyVaultConfig): KeyVault {
  let key: Buffer | undefined;
  let nodeToken: string | undefined;
  const storageKey = () =>
    (key ??= Buffer.from(
      hkdfSync(
        'sha256',
        ensureSecret(config.dataDir, CERTIFICATE_KEY_FILE, config.certificateKey),
        'platform-cert-vault',
        'certificate private keys at rest v1',
        32,
      ),
    ));
  const token = () => (nodeToken ??= ensureNodeToken(config.dataDir, config.nodeToken));
  const vault: KeyVault = {
    ensureSecrets() {
      storageKey();
      token();
    },
    nodeTokenId: () =>
      createHash('sha256').update('platform node token id\n').update(token()).digest('hex').slice(0, 32),
    seal: (privateKeyPem, fingerprint) =>
      PREFIX + sealAesGcm(storageKey(), fingerprint, Buffer.from(privateKeyPem, 'utf8')).toString('base64'),
    open(sealed, fingerprint) {
      if (!sealed.startsWith(PREFIX)) throw new Error('certificate key vault: unknown format');
      return openAesGcm(storageKey(), fingerprint, Buffer.from(sealed.slice(PREFIX.length), 'base64')).toString('utf8');
    },
    sealForNodes: (domain, publicKey, der) => sealDnssecKey(token(), domain, publicKey, der),
    sealTsigForNodes: (domain, keyName, secret) => sealTsigSecret(token(), domain, keyName, secret),
    forNodes(domain, cert) {
      const plain = vault.open(cert.sealedKey, cert.fingerprint);
      return {
        hostnames: cert.hostnames,
        certificatePem: cert.certificatePem,
        privateKeyPem: '',
        notAfterMs: cert.notAfterMs,
        privateKeySealed: sealCertificateKey(token(), domain, cert.certificatePem, plain),
      };
    },
  };
  return vault;
}
