// Zone keys (ECDSA P-256, algorithm 13, RFC 6605): DNSKEY RDATA, key tags (RFC 4034 App. B), DS digests (RFC 4509)
// and signatures over canonical RRsets (RFC 4034 §3.1.8.1, §6).
import { createPrivateKey, createPublicKey, sign, type KeyObject } from 'node:crypto';
import {
  DNSKEY_FLAGS_KSK,
  DNSKEY_FLAGS_ZSK,
  DNSSEC_ALGORITHM,
  dnskeyRdata,
  dsDigest,
  keyTag,
  nameWire,
} from '@platform/shared/config';
import type { Rdata } from '../zone/model.js';

export const ALGORITHM = DNSSEC_ALGORITHM;
export const FLAGS_KSK = DNSKEY_FLAGS_KSK;
export const FLAGS_ZSK = DNSKEY_FLAGS_ZSK;
export { dnskeyRdata, keyTag, nameWire };

/** A zone key a node signs or publishes with. */
export interface ZoneKey {
  flags: number;
  publicKey: Buffer;
  /** Null: published only (a key rolled in or out), never signs. */
  privateKey: KeyObject | null;
  published: boolean;
  signing: boolean;
  cds: boolean;
  /** DNSKEY RDATA: flags, protocol 3, algorithm, public key. */
  rdata: Buffer;
  tag: number;
}

/** DS RDATA (digest type 2, SHA-256) of a DNSKEY. */
export function dsRdata(apex: string, key: { rdata: Buffer; tag: number }): Buffer {
  const digest = dsDigest(apex, key.rdata);
  const head = Buffer.alloc(4);
  head.writeUInt16BE(key.tag, 0);
  head[2] = ALGORITHM;
  head[3] = 2;
  return Buffer.concat([head, digest]);
}

/** The key from its snapshot parts; the private key is PKCS#8 DER (null: published only). */
export function zoneKey(
  k: { flags: number; publicKey: Uint8Array; published: boolean; signing: boolean; cds: boolean },
  privateDer: Buffer | null,
): ZoneKey {
  const rdata = dnskeyRdata(k.flags, k.publicKey);
  const privateKey = privateDer ? createPrivateKey({ key: privateDer, format: 'der', type: 'pkcs8' }) : null;
  if (privateKey) {
    // The private half must belong to the public key it is published with.
    const jwk = createPublicKey(privateKey).export({ format: 'jwk' });
    const pub = Buffer.concat([Buffer.from(jwk.x!, 'base64url'), Buffer.from(jwk.y!, 'base64url')]);
    if (!pub.equals(Buffer.from(k.publicKey))) throw new Error('DNSSEC key: private key does not match its public key');
  }
  return {
    flags: k.flags,
    publicKey: Buffer.from(k.publicKey),
    privateKey,
    published: k.published,
    signing: k.signing,
    cds: k.cds,
    rdata,
    tag: keyTag(rdata),
  };
}

/** Uncompressed wire form of one RDATA (its names are already lower case). */
export function rdataWire(rdata: Rdata): Buffer {
  const parts: Buffer[] = [];
  for (const p of rdata) parts.push(Buffer.isBuffer(p) ? p : nameWire(p.name));
  return parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts);
}

/** Labels of an owner for RRSIG (RFC 4034 §3.1.3): the root and a leading `*` do not count. */
export function labelCount(owner: string): number {
  if (owner === '') return 0;
  const n = owner.split('.').length;
  return owner.startsWith('*.') ? n - 1 : n;
}

/** Validity window of a signature, seconds since the epoch. */
export interface Validity {
  inception: number;
  expiration: number;
}

/**
 * RRSIG RDATA over the RRset (owner, type, ttl, rdatas) signed by `key`, in wire pieces: the fixed fields, the
 * signer's name (never compressed, RFC 4034 §3.1.7) and the signature.
 */
export function signRRset(
  apex: string,
  owner: string,
  type: number,
  ttl: number,
  rdatas: readonly Rdata[],
  key: ZoneKey,
  v: Validity,
): Rdata {
  const head = Buffer.alloc(18);
  head.writeUInt16BE(type, 0);
  head[2] = ALGORITHM;
  head[3] = labelCount(owner);
  head.writeUInt32BE(ttl >>> 0, 4);
  head.writeUInt32BE(v.expiration >>> 0, 8);
  head.writeUInt32BE(v.inception >>> 0, 12);
  head.writeUInt16BE(key.tag, 16);
  const signer = nameWire(apex);
  const ownerWire = nameWire(owner);
  const fixed = Buffer.alloc(8);
  fixed.writeUInt16BE(type, 0);
  fixed.writeUInt16BE(1, 2);
  fixed.writeUInt32BE(ttl >>> 0, 4);
  // RFC 4034 §6.3: RRs in canonical order (by RDATA bytes), duplicates once.
  const wires = rdatas.map(rdataWire).sort(Buffer.compare);
  const parts: Buffer[] = [head, signer];
  let prev: Buffer | null = null;
  for (const w of wires) {
    if (prev && prev.equals(w)) continue;
    prev = w;
    const len = Buffer.alloc(2);
    len.writeUInt16BE(w.length, 0);
    parts.push(ownerWire, fixed, len, w);
  }
  const signature = sign('sha256', Buffer.concat(parts), { key: key.privateKey!, dsaEncoding: 'ieee-p1363' });
  return [head, { name: apex, compress: false }, signature];
}
