// DNSSEC private keys on their way to DNS nodes: sealed like certificate keys (cert-seal.ts, under the node token),
// bound to the domain and the key's public half, so a sealed key moved to another zone or key does not open.
import { openCertificateKey, sealCertificateKey } from './cert-seal.js';

function binding(publicKey: Uint8Array): string {
  return `dnssec:${Buffer.from(publicKey).toString('base64')}`;
}

/** The PKCS#8 DER of a zone key sealed for nodes. */
export function sealDnssecKey(nodeToken: string, domain: string, publicKey: Uint8Array, der: Uint8Array): Uint8Array {
  return sealCertificateKey(nodeToken, domain, binding(publicKey), Buffer.from(der).toString('base64'));
}

/** Opens what sealDnssecKey sealed; throws CFG_ERR_CERT_SEAL like openCertificateKey. */
export function openDnssecKey(nodeToken: string, domain: string, publicKey: Uint8Array, sealed: Uint8Array): Buffer {
  return Buffer.from(openCertificateKey(nodeToken, domain, binding(publicKey), sealed), 'base64');
}
