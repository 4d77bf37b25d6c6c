// TSIG (RFC 8945) with HMAC-SHA256: verifying a request's signature, signing the messages of a response (a transfer
// signs every message, each MAC chained to the previous one, §5.3.1) and signing a NOTIFY we send.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { nameWire } from '../dnssec/keys.js';
import { TYPE } from '../wire/constants.js';

export const HMAC_SHA256 = 'hmac-sha256';
const CLASS_ANY = 255;
const FUDGE = 300;
/** TSIG error codes (RFC 8945 §3). */
export const TSIG_ERROR = { BADSIG: 16, BADKEY: 17, BADTIME: 18 } as const;
/** Largest MAC we accept (HMAC-SHA256 is 32 bytes). */
const MAX_MAC = 64;

export interface TsigKeyMaterial {
  name: string;
  secret: Buffer;
}

export interface ParsedTsig {
  /** Offset of the TSIG RR: the message it signs is msg[0, start) with ARCOUNT one less. */
  start: number;
  keyName: string;
  algorithm: string;
  timeSigned: number;
  fudge: number;
  mac: Buffer;
  originalId: number;
  error: number;
  other: Buffer;
}

/** Reads a (possibly compressed) name; returns [lower-case name, offset after it] or null. */
export function readName(msg: Buffer, p: number, len: number): [string, number] | null {
  const labels: string[] = [];
  let end = -1;
  for (let jumps = 0; jumps < 64;) {
    if (p >= len) return null;
    const l = msg[p];
    if (l === 0) return [labels.join('.'), end < 0 ? p + 1 : end];
    if ((l & 0xc0) === 0xc0) {
      if (p + 1 >= len) return null;
      if (end < 0) end = p + 2;
      p = ((l & 0x3f) << 8) | msg[p + 1];
      jumps++;
      continue;
    }
    if (l > 63 || p + 1 + l > len) return null;
    labels.push(msg.toString('latin1', p + 1, p + 1 + l).toLowerCase());
    if (labels.length > 127) return null;
    p += l + 1;
  }
  return null;
}

/** Skips to the end of the question; returns the offset after it or -1. */
export function questionEnd(msg: Buffer, len: number): number {
  const n = readName(msg, 12, len);
  return n && n[1] + 4 <= len ? n[1] + 4 : -1;
}

/**
 * The TSIG RR of a message, when its last additional record is one; null when there is none; 'malformed' when the
 * records cannot be read or a TSIG is not last.
 */
export function findTsig(msg: Buffer, len: number): ParsedTsig | null | 'malformed' {
  if (len < 12) return 'malformed';
  const total = msg.readUInt16BE(6) + msg.readUInt16BE(8) + msg.readUInt16BE(10);
  let p = questionEnd(msg, len);
  if (p < 0 || msg.readUInt16BE(4) !== 1) return 'malformed';
  for (let i = 0; i < total; i++) {
    const start = p;
    const owner = readName(msg, p, len);
    if (!owner || owner[1] + 10 > len) return 'malformed';
    p = owner[1];
    const type = msg.readUInt16BE(p);
    const rdlen = msg.readUInt16BE(p + 8);
    const rd = p + 10;
    if (rd + rdlen > len) return 'malformed';
    p = rd + rdlen;
    if (type !== TYPE.TSIG) continue;
    if (i !== total - 1 || msg.readUInt16BE(10) === 0) return 'malformed';
    const alg = readName(msg, rd, rd + rdlen);
    if (!alg || alg[1] + 10 > rd + rdlen) return 'malformed';
    let q = alg[1];
    const timeSigned = msg.readUInt16BE(q) * 2 ** 32 + msg.readUInt32BE(q + 2);
    const fudge = msg.readUInt16BE(q + 6);
    const macLen = msg.readUInt16BE(q + 8);
    q += 10;
    if (macLen > MAX_MAC || q + macLen + 6 > rd + rdlen) return 'malformed';
    const mac = Buffer.from(msg.subarray(q, q + macLen));
    q += macLen;
    const originalId = msg.readUInt16BE(q);
    const error = msg.readUInt16BE(q + 2);
    const otherLen = msg.readUInt16BE(q + 4);
    if (q + 6 + otherLen !== rd + rdlen) return 'malformed';
    const other = Buffer.from(msg.subarray(q + 6, q + 6 + otherLen));
    return { start, keyName: owner[0], algorithm: alg[0], timeSigned, fudge, mac, originalId, error, other };
  }
  return null;
}

function u16(n: number): Buffer {
  const b = Buffer.alloc(2);
  b.writeUInt16BE(n, 0);
  return b;
}

function time48(t: number): Buffer {
  const b = Buffer.alloc(6);
  b.writeUInt16BE(Math.floor(t / 2 ** 32), 0);
  b.writeUInt32BE(t >>> 0, 2);
  return b;
}

/** The TSIG variables of §4.3.3 (the full form). */
function variables(keyName: string, timeSigned: number, fudge: number, error: number, other: Buffer): Buffer {
  return Buffer.concat([
    nameWire(keyName),
    u16(CLASS_ANY),
    Buffer.alloc(4),
    nameWire(HMAC_SHA256),
    time48(timeSigned),
    u16(fudge),
    u16(error),
    u16(other.length),
    other,
  ]);
}

/** The signed message as the MAC sees it: without the TSIG RR, ARCOUNT one less, the original ID. */
function unsignedPart(msg: Buffer, t: ParsedTsig): Buffer {
  const m = Buffer.from(msg.subarray(0, t.start));
  m.writeUInt16BE(t.originalId, 0);
  m.writeUInt16BE(m.readUInt16BE(10) - 1, 10);
  return m;
}

export type VerifyResult = { ok: true; key: TsigKeyMaterial; tsig: ParsedTsig } | { ok: false; error: number };

/** Verifies a request signed with one of `keys` (by name) at `now` (seconds). */
export function verifyRequest(
  msg: Buffer,
  len: number,
  t: ParsedTsig,
  keys: ReadonlyMap<string, TsigKeyMaterial>,
  now = Math.floor(Date.now() / 1000),
): VerifyResult {
  const key = keys.get(t.keyName);
  if (!key || t.algorithm !== HMAC_SHA256) return { ok: false, error: TSIG_ERROR.BADKEY };
  const mac = createHmac('sha256', key.secret)
    .update(unsignedPart(msg.subarray(0, len), t))
    .update(variables(t.keyName, t.timeSigned, t.fudge, t.error, t.other))
    .digest();
  if (t.mac.length !== mac.length || !timingSafeEqual(t.mac, mac)) return { ok: false, error: TSIG_ERROR.BADSIG };
  if (Math.abs(now - t.timeSigned) > t.fudge) return { ok: false, error: TSIG_ERROR.BADTIME };
  return { ok: true, key, tsig: t };
}

/** Appends a TSIG RR to `msg` (ARCOUNT + 1). */
function appendTsig(msg: Buffer, key: TsigKeyMaterial, timeSigned: number, mac: Buffer, error: number): Buffer {
  const rdata = Buffer.concat([
    nameWire(HMAC_SHA256),
    time48(timeSigned),
    u16(FUDGE),
    u16(mac.length),
    mac,
    u16(msg.readUInt16BE(0)),
    u16(error),
    u16(0),
  ]);
  const rr = Buffer.concat([
    nameWire(key.name),
    u16(TYPE.TSIG),
    u16(CLASS_ANY),
    Buffer.alloc(4),
    u16(rdata.length),
    rdata,
  ]);
  const out = Buffer.concat([msg, rr]);
  out.writeUInt16BE(out.readUInt16BE(10) + 1, 10);
  return out;
}

/** Signs the messages of one response to a verified request: the first with the full variables, the rest chained. */
export class ResponseSigner {
  private prevMac: Buffer;
  private first = true;
  private readonly time = Math.floor(Date.now() / 1000);

  constructor(
    private readonly key: TsigKeyMaterial,
    requestMac: Buffer,
  ) {
    this.prevMac = requestMac;
  }

  sign(msg: Buffer): Buffer {
    const h = createHmac('sha256', this.key.secret).update(u16(this.prevMac.length)).update(this.prevMac).update(msg);
    if (this.first) h.update(variables(this.key.name, this.time, FUDGE, 0, Buffer.alloc(0)));
    else h.update(Buffer.concat([time48(this.time), u16(FUDGE)]));
    this.first = false;
    const mac = h.digest();
    this.prevMac = mac;
    return appendTsig(msg, this.key, this.time, mac, 0);
  }
}

/** Signs a request we send (NOTIFY). */
export function signRequest(msg: Buffer, key: TsigKeyMaterial, now = Math.floor(Date.now() / 1000)): Buffer {
  const mac = createHmac('sha256', key.secret)
    .update(msg)
    .update(variables(key.name, now, FUDGE, 0, Buffer.alloc(0)))
    .digest();
  return appendTsig(msg, key, now, mac, 0);
}
