// Query bytes → response bytes: parse, find the zone, look the answer up, copy it and patch ID, flags,
// question case and OPT. Synchronous and allocation-light; every outcome is one branch here. The answer is written
// into the caller's buffer (answerQueryInto: the batched UDP path packs a whole batch's answers into one), or into a
// Buffer of its own (answerQuery).
import { CLASS_ANY, CLASS_IN, EDNS_UDP_SIZE, FLAG, PLAIN_UDP_SIZE, RCODE, TYPE } from './wire/constants.js';
import { get16, keyBytes, ParsedQuery, parseQuery, PARSE, put16 } from './wire/query.js';
import { type CompiledZone, type NEGATIVE, type NegativeTail, type Template } from './zone/model.js';
import { SLOT_OF } from './zone/slots.js';
import { lastLookup, lookup, lookupAt, lookupSigned, NXDOMAIN } from './zone/lookup.js';
import type { ZoneTable } from './zone/table.js';
import type { AnswerCache } from './zone/answer-cache.js';
import type { Counters } from './counters.js';
import { RRL, RRL_CLASS, type ResponseRateLimiter } from './rrl.js';

const OPT_LENGTH = 11;
const q = new ParsedQuery();

/** The largest answer: a TCP message (UDP answers stay within 1,232 bytes, or the question echoed with an OPT). */
export const MAX_ANSWER = 65_535;
const own = Buffer.allocUnsafeSlow(MAX_ANSWER);

/**
 * Answers one query; null means send nothing (not a query, too short to hold a header, or dropped by response rate
 * limiting). `rrl` (UDP only; null over TCP or when off) counts the answer for `address` before it is built.
 */
export function answerQuery(
  msg: Buffer,
  len: number,
  tcp: boolean,
  table: ZoneTable,
  c: Counters,
  rrl: ResponseRateLimiter | null = null,
  address = '',
): Buffer | null {
  const n = answerQueryInto(msg, len, tcp, table, c, rrl, address, own, 0);
  if (n === 0) return null;
  const out = Buffer.allocUnsafe(n);
  own.copy(out, 0, 0, n);
  return out;
}

/**
 * answerQuery writing the answer into `dst` at `at` (room for MAX_ANSWER bytes there; `dst` is not `msg`): returns
 * its length, 0 when nothing is to be sent.
 */
export function answerQueryInto(
  msg: Buffer,
  len: number,
  tcp: boolean,
  table: ZoneTable,
  c: Counters,
  rrl: ResponseRateLimiter | null,
  address: string,
  dst: Buffer,
  at: number,
): number {
  const parsed = parseQuery(msg, len, q);
  if (parsed !== PARSE.OK) {
    if (parsed === PARSE.DROP) {
      c.dns_packets_dropped_total++;
      return 0;
    }
    const rcode = parsed === PARSE.NOTIMP ? RCODE.NOTIMP : RCODE.FORMERR;
    if (rrl !== null) {
      const v = rrl.check(address, RRL_CLASS.ERROR, '', 0);
      if (v !== RRL.ALLOW) return limited(v, c, null, rcode, dst, at);
    }
    if (parsed === PARSE.NOTIMP) c.dns_responses_notimp_total++;
    else c.dns_responses_formerr_total++;
    return headerOnly(rcode, dst, at);
  }
  const qtype = q.qtype;
  // RFC 6891 §6.1.3: a version we do not implement gets BADVERS (extended rcode 16 = 1 << 4).
  const error =
    q.edns && q.ednsVersion > 0
      ? ERROR.BADVERS
      : qtype === TYPE.OPT
        ? ERROR.FORMERR
        : qtype === TYPE.MAILA || qtype === TYPE.MAILB
          ? ERROR.NOTIMP
          : (q.qclass !== CLASS_IN && q.qclass !== CLASS_ANY) || qtype === TYPE.AXFR || qtype === TYPE.IXFR
            ? ERROR.REFUSED
            : ERROR.NONE;
  const cache = table.answers;
  let hit = -1;
  if (error === ERROR.NONE) {
    hit = cache.find(q);
    if (hit >= 0) {
      const n = fromCache(msg, cache, hit, tcp, c, rrl, address, dst, at);
      if (n >= 0) return n;
    }
  }
  const zone = error === ERROR.NONE ? table.findQuery(q) : undefined;
  if (zone === undefined) {
    const e = error === ERROR.NONE ? ERROR.REFUSED : error;
    if (rrl !== null) {
      const v = rrl.check(address, RRL_CLASS.ERROR, '', 0);
      if (v !== RRL.ALLOW) return limited(v, c, msg, e === ERROR.BADVERS ? 0 : e === ERROR.FORMERR ? -1 : e, dst, at);
    }
    switch (e) {
      case ERROR.BADVERS:
        c.dns_responses_badvers_total++;
        return withQuestion(msg, 0, false, 1, dst, at);
      case ERROR.FORMERR:
        c.dns_responses_formerr_total++;
        return headerOnly(RCODE.FORMERR, dst, at);
      case ERROR.NOTIMP:
        c.dns_responses_notimp_total++;
        return withQuestion(msg, RCODE.NOTIMP, false, 0, dst, at);
      default:
        c.dns_responses_refused_total++;
        return withQuestion(msg, RCODE.REFUSED, false, 0, dst, at);
    }
  }
  const limit = tcp
    ? 65535
    : q.edns
      ? Math.min(Math.max(q.ednsUdpSize, PLAIN_UDP_SIZE), EDNS_UDP_SIZE)
      : PLAIN_UDP_SIZE;
  const signer = zone.signer;
  const signed = q.ednsDo && signer !== null;
  // A name of the zone is found from the query's bytes (no key string); the rest goes by the key.
  let r: Answer;
  let name: string;
  if (signed) r = lookupSigned(zone, signer, (name = q.key), qtype);
  else {
    const node = zone.nodes.index.find(keyBytes, 0, q.keyLength, q.suffixHashes[0]);
    if (node !== undefined) {
      lastLookup.synthesised = false;
      name = node.name;
      // A compiled answer straight from its slot; the rest (not compiled yet, NODATA, other types) through lookupAt.
      const v = node.slots[SLOT_OF[qtype]];
      r = typeof v === 'object' ? v : lookupAt(zone, node, name, qtype);
    } else r = lookup(zone, (name = q.key), qtype);
  }
  // The rate-limiting bucket of the answer, what the cache keeps beside it: names that exist are counted by name;
  // synthesised and missing ones by zone, so random names share a bucket.
  const cls = hit < 0 || rrl !== null ? rrlClass(r, signed) : 0;
  const bucket = cls === RRL_CLASS.NXDOMAIN || cls === RRL_CLASS.SYNTHESISED ? zone.apex : name;
  if (hit < 0) keep(msg, cache, r, cls, bucket, zone, table.apexOffset);
  if (rrl !== null) {
    const v = rrl.check(address, cls, bucket, cls === RRL_CLASS.NXDOMAIN ? 0 : qtype);
    if (v !== RRL.ALLOW) return limited(v, c, msg, rcodeOf(r), dst, at);
  }
  // Numbers (NEGATIVE, NXDOMAIN) and answers (objects) are told apart by typeof first: a comparison that could mix
  // the two is a generic StrictEqual call in V8's optimised code, per query.
  if (typeof r === 'number') {
    const nx = r === NXDOMAIN;
    if (nx) c.dns_responses_nxdomain_total++;
    else c.dns_responses_noerror_total++;
    const rcode = nx ? RCODE.NXDOMAIN : RCODE.NOERROR;
    return negative(msg, zone.negativeTail, table.apexOffset, rcode, limit, c, dst, at);
  }
  // Only a signed lookup gives the kept authority section of an NXDOMAIN.
  if (signed && (r as NegativeTail).pointers !== undefined) {
    c.dns_responses_nxdomain_total++;
    return negative(msg, r as NegativeTail, table.apexOffset, RCODE.NXDOMAIN, limit, c, dst, at);
  }
  r = r as Template;
  if ((r.bytes[3] & 0xf) === RCODE.NXDOMAIN) c.dns_responses_nxdomain_total++;
  else c.dns_responses_noerror_total++;
  return fromTemplate(msg, r, limit, c, dst, at);
}

type Answer = Template | NegativeTail | typeof NEGATIVE | typeof NXDOMAIN;

/**
 * The RRL class of a lookup's answer (rrl.ts RRL_CLASS), after the lookup (lastLookup.synthesised): NXDOMAIN for a
 * missing name, SYNTHESISED for a name that is not one of the zone's (wildcard, below a cut), NODATA, else POSITIVE.
 * A DO=1 answer from a signed zone (`signed`, lookupSigned's) gets the class its question gets without DO: a kept
 * NXDOMAIN proof or an NXDOMAIN template, NXDOMAIN; NOERROR with no answer and AA (NODATA, not a referral), NODATA.
 */
function rrlClass(r: Answer, signed: boolean): number {
  if (typeof r === 'number')
    return r === NXDOMAIN ? RRL_CLASS.NXDOMAIN : lastLookup.synthesised ? RRL_CLASS.SYNTHESISED : RRL_CLASS.NODATA;
  if (signed) {
    if ((r as NegativeTail).pointers !== undefined) return RRL_CLASS.NXDOMAIN;
    const b = (r as Template).bytes;
    if (b[6] === 0 && b[7] === 0) {
      if ((b[3] & 0xf) === RCODE.NXDOMAIN) return RRL_CLASS.NXDOMAIN;
      if ((b[2] & (FLAG.AA >>> 8)) !== 0 && !lastLookup.synthesised) return RRL_CLASS.NODATA;
    }
  }
  return lastLookup.synthesised ? RRL_CLASS.SYNTHESISED : RRL_CLASS.POSITIVE;
}

/** The rcode of a lookup's answer (an answer rate limiting holds back, from the zone or the cache, keeps it). */
function rcodeOf(r: Answer): number {
  if (typeof r === 'number') return r === NXDOMAIN ? RCODE.NXDOMAIN : RCODE.NOERROR;
  return (r as NegativeTail).pointers !== undefined ? RCODE.NXDOMAIN : (r as Template).bytes[3] & 0xf;
}

/**
 * The answer kept in `cache` entry `i`, written like fromTemplate: its length, 0 when rate limiting holds it back
 * entirely, or -1 when it cannot be used for this query (an answer bigger than the query allows: answered through
 * the zone, which drops the additional section or truncates).
 */
function fromCache(
  msg: Buffer,
  cache: AnswerCache,
  i: number,
  tcp: boolean,
  c: Counters,
  rrl: ResponseRateLimiter | null,
  address: string,
  dst: Buffer,
  at: number,
): number {
  const size = cache.answerLength(i);
  const opt = q.edns ? OPT_LENGTH : 0;
  const limit = tcp
    ? 65535
    : q.edns
      ? Math.min(Math.max(q.ednsUdpSize, PLAIN_UDP_SIZE), EDNS_UDP_SIZE)
      : PLAIN_UDP_SIZE;
  if (size + opt > limit) return -1;
  const arena = cache.arena;
  const from = cache.answerAt(i);
  const nx = (arena[from + 3] & 0xf) === RCODE.NXDOMAIN;
  if (rrl !== null) {
    const cls = cache.kinds[i];
    const v = rrl.check(address, cls, cache.names[i], cls === RRL_CLASS.NXDOMAIN ? 0 : q.qtype);
    if (v !== RRL.ALLOW) return limited(v, c, msg, nx ? RCODE.NXDOMAIN : RCODE.NOERROR, dst, at);
  }
  if (nx) c.dns_responses_nxdomain_total++;
  else c.dns_responses_noerror_total++;
  // A loop: the answer is a few dozen bytes, contiguous with its key (Buffer#copy costs a call into C++ and a view).
  for (let k = 0; k < size; k++) dst[at + k] = arena[from + k];
  put16(dst, at, q.id);
  dst[at + 2] |= (q.flags >>> 8) & 0x01;
  dst[at + 3] |= q.flags & 0x10;
  copyQuestion(msg, dst, at, q.questionEnd);
  if (opt) {
    writeOpt(dst, at + size, 0);
    put16(dst, at + 10, get16(arena, from + 10) + 1);
  }
  return size + opt;
}

/**
 * Keeps the answer of a lookup (unsigned, or `signed`: lookupSigned's for a DO=1 query) in the table's answer cache,
 * whole (the size the query allows is checked on each hit), with its rate-limiting class and bucket (answerQueryInto's):
 * a template's bytes, or a negative answer built as `negative` writes it (the zone's negative SOA, or a signed
 * NXDOMAIN's kept proof).
 */
function keep(
  msg: Buffer,
  cache: AnswerCache,
  r: Answer,
  cls: number,
  bucket: string,
  zone: CompiledZone,
  apexOffset: number,
): void {
  // Names anyone can make up (missing, from a wildcard, below a cut) are kept when asked twice (AnswerCache.admit).
  if (typeof r !== 'number' && (r as NegativeTail).pointers === undefined) {
    const bytes = (r as Template).bytes;
    if (lastLookup.synthesised && !cache.admit(q)) return;
    const p = cache.reserve(q, bytes.length, cls, bucket);
    if (p >= 0) bytes.copy(cache.arena, p);
    return;
  }
  const nx = cls === RRL_CLASS.NXDOMAIN;
  if ((nx || lastLookup.synthesised) && !cache.admit(q)) return;
  const t = typeof r === 'number' ? zone.negativeTail : (r as NegativeTail);
  const qEnd = q.questionEnd;
  const p = cache.reserve(q, qEnd + t.bytes.length, cls, bucket);
  if (p < 0) return;
  const a = cache.arena;
  put16(a, p, 0);
  put16(a, p + 2, FLAG.QR | FLAG.AA | (nx ? RCODE.NXDOMAIN : RCODE.NOERROR));
  put16(a, p + 4, 1);
  put16(a, p + 6, 0);
  put16(a, p + 8, t.count);
  put16(a, p + 10, 0);
  for (let i = 12; i < qEnd; i++) a[p + i] = msg[i];
  const start = p + qEnd;
  a.set(t.bytes, start);
  const pointer = 0xc000 | (12 + apexOffset);
  for (let i = 0; i < t.pointers.length; i++) put16(a, start + t.pointers[i], pointer);
}

/** Errors decided before the zone is looked up (0: none, look the zone up). */
const ERROR = { NONE: 0, FORMERR: RCODE.FORMERR, NOTIMP: RCODE.NOTIMP, REFUSED: RCODE.REFUSED, BADVERS: 16 } as const;

/**
 * An answer rate limiting held back: nothing (DROP), or for SLIP a TC=1 answer no bigger than the query: the
 * question (when `msg` is given and parsed) with `rcode`, else the header alone (rcode -1: FORMERR, header only).
 */
function limited(verdict: number, c: Counters, msg: Buffer | null, rcode: number, dst: Buffer, at: number): number {
  if (verdict === RRL.DROP) {
    c.dns_rrl_dropped_total++;
    return 0;
  }
  c.dns_rrl_slipped_total++;
  c.dns_responses_truncated_total++;
  const n =
    msg === null || rcode < 0
      ? headerOnly(rcode < 0 ? RCODE.FORMERR : rcode, dst, at)
      : withQuestion(msg, rcode, false, 0, dst, at);
  dst[at + 2] |= 0x02;
  return n;
}

/** A SERVFAIL for a query whose handling threw (the server's one catch). */
export function servfail(msg: Buffer, len: number): Buffer | null {
  const n = servfailInto(msg, len, own, 0);
  return n === 0 ? null : Buffer.from(own.subarray(0, n));
}

/** servfail written into `dst` at `at`: its length, or 0 when nothing is to be sent. */
export function servfailInto(msg: Buffer, len: number, dst: Buffer, at: number): number {
  if (len < 12 || (msg[2] & 0x80) !== 0) return 0;
  dst[at] = msg[0];
  dst[at + 1] = msg[1];
  dst[at + 2] = 0x80 | (msg[2] & 0x79);
  dst[at + 3] = RCODE.SERVFAIL;
  dst.fill(0, at + 4, at + 12);
  return 12;
}

function headerOnly(rcode: number, dst: Buffer, at: number): number {
  put16(dst, at, q.id);
  put16(dst, at + 2, FLAG.QR | (q.flags & 0x7910) | rcode); // opcode, RD and CD copied
  for (let i = at + 4; i < at + 12; i++) dst[i] = 0;
  return 12;
}

/** Header, the question as asked and the OPT record when the query had one. */
function withQuestion(msg: Buffer, rcode: number, aa: boolean, extRcode: number, dst: Buffer, at: number): number {
  const qEnd = q.questionEnd;
  put16(dst, at, q.id);
  put16(dst, at + 2, FLAG.QR | (aa ? FLAG.AA : 0) | (q.flags & 0x0110) | rcode);
  put16(dst, at + 4, 1); // qdcount
  put16(dst, at + 6, 0); // ancount
  put16(dst, at + 8, 0); // nscount
  put16(dst, at + 10, q.edns ? 1 : 0); // arcount
  copyQuestion(msg, dst, at, qEnd);
  if (q.edns) writeOpt(dst, at + qEnd, extRcode);
  return qEnd + (q.edns ? OPT_LENGTH : 0);
}

/**
 * NXDOMAIN or NODATA: the question as asked, the authority section `t` with its owners pointed at the apex inside the
 * question (the zone's negative SOA, or a signed NXDOMAIN's kept proof), the OPT when the query had one.
 */
function negative(
  msg: Buffer,
  t: NegativeTail,
  apexOffset: number,
  rcode: number,
  limit: number,
  c: Counters,
  dst: Buffer,
  at: number,
): number {
  const qEnd = q.questionEnd;
  const bytes = t.bytes;
  const size = qEnd + bytes.length + (q.edns ? OPT_LENGTH : 0);
  if (size > limit) {
    c.dns_responses_truncated_total++;
    return truncated(msg, FLAG.AA | rcode, dst, at);
  }
  put16(dst, at, q.id);
  put16(dst, at + 2, FLAG.QR | FLAG.AA | (q.flags & 0x0110) | rcode);
  put16(dst, at + 4, 1);
  put16(dst, at + 6, 0);
  put16(dst, at + 8, t.count);
  put16(dst, at + 10, q.edns ? 1 : 0);
  copyQuestion(msg, dst, at, qEnd);
  const start = at + qEnd;
  dst.set(bytes, start);
  const pointer = 0xc000 | (12 + apexOffset);
  const pointers = t.pointers;
  for (let i = 0; i < pointers.length; i++) put16(dst, start + pointers[i], pointer);
  if (q.edns) writeOpt(dst, start + bytes.length, 0);
  return size;
}

function fromTemplate(msg: Buffer, t: Template, limit: number, c: Counters, dst: Buffer, at: number): number {
  const bytes = t.bytes;
  const opt = q.edns ? OPT_LENGTH : 0;
  let size = bytes.length;
  let tc = false;
  let arcount = get16(bytes, 10);
  if (size + opt > limit) {
    // Drop the whole additional section first (no partial RRsets); TC only when it held required glue.
    if (t.additionalStart < size && t.additionalStart + opt <= limit) {
      size = t.additionalStart;
      arcount = 0;
      tc = t.glueRequired;
    } else {
      c.dns_responses_truncated_total++;
      return truncated(msg, get16(bytes, 2) & 0x040f, dst, at);
    }
    if (tc) c.dns_responses_truncated_total++;
  }
  if (size === bytes.length) dst.set(bytes, at);
  else bytes.copy(dst, at, 0, size);
  put16(dst, at, q.id);
  dst[at + 2] |= ((q.flags >>> 8) & 0x01) | (tc ? 0x02 : 0);
  dst[at + 3] |= q.flags & 0x10;
  copyQuestion(msg, dst, at, q.questionEnd);
  if (opt) {
    writeOpt(dst, at + size, 0);
    arcount++;
  }
  put16(dst, at + 10, arcount);
  return size + opt;
}

/** TC=1 with the question only, so the client retries over TCP (RFC 7766 §5). */
function truncated(msg: Buffer, aaAndRcode: number, dst: Buffer, at: number): number {
  const n = withQuestion(msg, aaAndRcode & 0xf, (aaAndRcode & FLAG.AA) !== 0, 0, dst, at);
  dst[at + 2] |= 0x02;
  return n;
}

/** The question as asked (case kept), a few dozen bytes: a loop costs less than Buffer#copy's call into C++. */
function copyQuestion(msg: Buffer, dst: Buffer, at: number, qEnd: number): void {
  for (let i = 12; i < qEnd; i++) dst[at + i] = msg[i];
}

function writeOpt(out: Buffer, at: number, extRcode: number): void {
  out[at] = 0;
  put16(out, at + 1, TYPE.OPT);
  put16(out, at + 3, EDNS_UDP_SIZE);
  out[at + 5] = extRcode;
  out[at + 6] = 0; // version 0
  put16(out, at + 7, q.ednsDo ? 0x8000 : 0); // RFC 3225 §3: DO copied
  put16(out, at + 9, 0);
}
