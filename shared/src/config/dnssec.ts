// DNSSEC keys shared by the control plane and the DNS nodes: DNSKEY RDATA, key tags (RFC 4034 App. B), DS digests
// (RFC 4509), ECDSA P-256 key pairs (RFC 6605), and private keys on their way to nodes, sealed like certificate keys
// (cert-seal.ts, under the node token) and bound to the domain and the key's public half.
import { createHash, generateKeyPairSync } from 'node:crypto';
import { openCertificateKey, sealCertificateKey } from './cert-seal.js';

/** ECDSA P-256 with SHA-256. */
export const DNSSEC_ALGORITHM = 13;
export const DNSKEY_FLAGS_KSK = 257;
export const DNSKEY_FLAGS_ZSK = 256;

/** A new P-256 key pair: the DNSKEY public key field (x || y) and the private key as PKCS#8 DER. */
export function generateDnssecKey(): { publicKey: Buffer; privateKeyDer: Buffer } {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const jwk = publicKey.export({ format: 'jwk' });
  return {
    publicKey: Buffer.concat([Buffer.from(jwk.x!, 'base64url'), Buffer.from(jwk.y!, 'base64url')]),
    privateKeyDer: privateKey.export({ format: 'der', type: 'pkcs8' }),
  };
}

export function dnskeyRdata(flags: number, publicKey: Uint8Array): Buffer {
  return Buffer.concat([Buffer.from([flags >> 8, flags & 0xff, 3, DNSSEC_ALGORITHM]), publicKey]);
}

/** RFC 4034 Appendix B. */
export function keyTag(rdata: Buffer): number {
  let ac = 0;
  for (let i = 0; i < rdata.length; i++) ac += i & 1 ? rdata[i] : rdata[i] << 8;
  ac += (ac >> 16) & 0xffff;
  return ac & 0xffff;
}

/** A name in canonical wire form (lower case, uncompressed, no trailing dot given); '' is the root. */
export function nameWire(name: string): Buffer {
  if (name === '') return Buffer.from([0]);
  const parts: Buffer[] = [];
  for (const label of name.split('.')) {
    const b = Buffer.from(label, 'latin1');
    parts.push(Buffer.from([b.length]), b);
  }
  parts.push(Buffer.from([0]));
  return Buffer.concat(parts);
}

/** The SHA-256 digest of a DS record for the DNSKEY `rdata` at `apex` (RFC 4509). */
export function dsDigest(apex: string, rdata: Buffer): Buffer {
  return createHash('sha256').update(nameWire(apex.toLowerCase())).update(rdata).digest();
}

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

/** A TSIG secret sealed for nodes, bound to the domain and the key's name. */
export function sealTsigSecret(nodeToken: string, domain: string, keyName: string, secret: Uint8Array): Uint8Array {
  return sealCertificateKey(nodeToken, domain, `tsig:${keyName}`, Buffer.from(secret).toString('base64'));
}

export function openTsigSecret(nodeToken: string, domain: string, keyName: string, sealed: Uint8Array): Buffer {
  return Buffer.from(openCertificateKey(nodeToken, domain, `tsig:${keyName}`, sealed), 'base64');
}
