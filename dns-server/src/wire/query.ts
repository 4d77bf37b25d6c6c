// Hand-written parser of an incoming DNS query: header, the one question and the EDNS OPT record (RFC 1035, 6891).
import { TYPE } from './constants.js';
import { HASH_START, hashFinish, hashStep } from '../zone/name-index.js';

/** What the parser concluded about a packet. */
export const PARSE = {
  OK: 0,
  /** Too short for a header, or a response (QR=1): never answered. */
  DROP: 1,
  /** A header was read but the rest is malformed: answer FORMERR. */
  FORMERR: 2,
  /** An opcode other than QUERY: answer NOTIMP. */
  NOTIMP: 3,
} as const;

export const MAX_LABELS = 128;

/**
 * The 16-bit big-endian number at `b[p]`. Buffer#readUInt16BE validates its offset through Node 20's hideStackFrames
 * wrapper (a rest-argument call per read, seen in a profile of the handler); every offset read here is checked
 * against the datagram's length first.
 */
export function get16(b: Uint8Array, p: number): number {
  return (b[p] << 8) | b[p + 1];
}

/** Writes the 16-bit `v` big-endian at `b[p]` (Buffer#writeUInt16BE without its validation wrapper, as get16). */
export function put16(b: Uint8Array, p: number, v: number): void {
  b[p] = v >>> 8;
  b[p + 1] = v;
}

/** The lower-case name of the last query parsed, as bytes (`ParsedQuery.keyLength` of them): the key's characters. */
export const keyBytes = Buffer.allocUnsafe(256);

/**
 * The parsed query. One instance is reused for every packet (the handler is synchronous), so parsing allocates
 * nothing: the name's key string is made only when asked for.
 */
export class ParsedQuery {
  id = 0;
  flags = 0;
  opcode = 0;
  /** Length of the key (its bytes are `keyBytes[0, keyLength)`). */
  keyLength = 0;
  /** The key once made (null: not yet for this query). */
  keyText: string | null = '';
  /** Lower-case name without the trailing dot ('' for the root); a dot inside a label becomes \x00. */
  get key(): string {
    return (this.keyText ??= keyBytes.toString('latin1', 0, this.keyLength));
  }
  /** Start of each label inside `key`, from the leftmost; `labelCount` entries are valid. */
  readonly labelStarts = new Int32Array(MAX_LABELS);
  /** nameHash (zone/name-index.ts) of the key from each label start on: [0] is the whole name's. */
  readonly suffixHashes = new Int32Array(MAX_LABELS);
  labelCount = 0;
  /** Wire length of the question name (labels and the final zero byte). */
  nameLength = 0;
  qtype = 0;
  qclass = 0;
  /** Offset just after the question (qtype and qclass included). */
  questionEnd = 0;
  edns = false;
  ednsUdpSize = 0;
  ednsVersion = 0;
  ednsDo = false;
}

/** Parses `msg[0, len)` into `q`; returns one of PARSE. Never throws on any input. */
export function parseQuery(msg: Buffer, len: number, q: ParsedQuery): number {
  if (len < 12) return PARSE.DROP;
  const flags = get16(msg, 2);
  if ((flags & 0x8000) !== 0) return PARSE.DROP;
  q.id = get16(msg, 0);
  q.flags = flags;
  q.opcode = (flags >>> 11) & 0xf;
  q.edns = false;
  q.ednsDo = false; // DO only with an OPT record (RFC 3225 §3): never carried over from the previous query
  if (q.opcode !== 0) return PARSE.NOTIMP;
  const qdcount = get16(msg, 4);
  if (qdcount !== 1) return PARSE.FORMERR;
  // Question name: plain labels only (a pointer has nothing to point back to at offset 12).
  let p = 12;
  let k = 0;
  let labels = 0;
  for (;;) {
    if (p >= len) return PARSE.FORMERR;
    const l = msg[p];
    if (l === 0) {
      p++;
      break;
    }
    if (l > 63 || p + 1 + l > len || labels >= MAX_LABELS) return PARSE.FORMERR;
    if (k + l + 1 > 254) return PARSE.FORMERR; // RFC 1035 §2.3.4: 255 octets on the wire
    if (labels > 0) keyBytes[k++] = 0x2e;
    q.labelStarts[labels++] = k;
    for (let i = 1; i <= l; i++) {
      let c = msg[p + i];
      if (c >= 0x41 && c <= 0x5a) c |= 0x20;
      else if (c === 0x2e) c = 0;
      keyBytes[k++] = c;
    }
    p += l + 1;
  }
  if (p + 4 > len) return PARSE.FORMERR;
  q.labelCount = labels;
  q.nameLength = p - 12;
  q.keyLength = k;
  q.keyText = k === 0 ? '' : null;
  // The hash of each suffix, from the last character back (see nameHash).
  let h = HASH_START;
  for (let j = labels - 1, end = k; j >= 0; j--) {
    const start = q.labelStarts[j];
    for (let i = end - 1; i >= start; i--) h = hashStep(h, keyBytes[i]);
    q.suffixHashes[j] = hashFinish(h);
    h = hashStep(h, 0x2e);
    end = start - 1;
  }
  q.qtype = get16(msg, p);
  q.qclass = get16(msg, p + 2);
  p += 4;
  q.questionEnd = p;
  const ancount = get16(msg, 6);
  const nscount = get16(msg, 8);
  const arcount = get16(msg, 10);
  if (ancount + nscount + arcount === 0) return PARSE.OK;
  for (let i = 0; i < ancount + nscount + arcount; i++) {
    const start = p;
    p = skipName(msg, p, len);
    if (p < 0 || p + 10 > len) return PARSE.FORMERR;
    const type = get16(msg, p);
    const rdlen = get16(msg, p + 8);
    if (p + 10 + rdlen > len) return PARSE.FORMERR;
    if (type === TYPE.OPT) {
      // RFC 6891 §6.1.1: one OPT, owner is the root, in the additional section; otherwise FORMERR.
      if (q.edns || i < ancount + nscount || p !== start + 1) return PARSE.FORMERR;
      q.edns = true;
      q.ednsUdpSize = get16(msg, p + 2);
      q.ednsVersion = msg[p + 5];
      q.ednsDo = (msg[p + 6] & 0x80) !== 0;
    }
    p += 10 + rdlen;
  }
  return PARSE.OK;
}

/** Skips a possibly compressed name; returns the offset after it, or -1 when malformed. */
function skipName(msg: Buffer, p: number, len: number): number {
  for (let n = 0; n < 128; n++) {
    if (p >= len) return -1;
    const l = msg[p];
    if (l === 0) return p + 1;
    if ((l & 0xc0) === 0xc0) return p + 2 <= len ? p + 2 : -1;
    if (l > 63) return -1;
    p += l + 1;
  }
  return -1;
}
