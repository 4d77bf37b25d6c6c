// rate_limit: requests per period counted per key (client address, path, a header, or address with one of those),
// over the limit → 429 with Retry-After or the challenge, for a penalty of block_s seconds.
//
// Counters live in one fixed-size open-addressing table per process (typed arrays, ~40 bytes a slot, allocated once):
// memory does not grow with the number of clients, keys or rules. A key is two 32-bit hashes of (rule id, key parts)
// seeded per process, so a client cannot aim its key at another's slot. A key probes 8 slots; when all hold live
// counters of other keys, the one with the lowest count is evicted, so heavy hitters keep theirs under a flood of
// one-off keys. Counting is Cloudflare's sliding-window estimate: the previous window's count weighted by how much of
// it still overlaps, plus the current one. Nothing is allocated per request (hashing walks the strings in place).
// With several workers (EDGE_WORKERS) the workers share one hash seed and exchange, through the primary, what they
// counted (`collect`, `merge`): a limit is for the node, within one exchange round (README "rate_limit").
import { randomBytes } from 'node:crypto';
import type { PeerAddress, RuleBody } from '@platform/shared/match';
import type { RequestContext } from '../context.js';

export type RateLimitKey = 'ip' | 'ip_path' | 'path' | 'header' | 'ip_header';

export interface RateLimitAction {
  ruleId: number;
  requests: number;
  periodMs: number;
  blockMs: number;
  /** `captcha`: the challenge page instead of 429 (a client with a clearance cookie passes). */
  challenge: boolean;
  useIp: boolean;
  usePath: boolean;
  /** Lower-case header name counted, '' when the key has none. */
  header: string;
}

/**
 * The client a limit or a clearance is bound to: an IPv4 address, or the /64 of an IPv6 one (one subscriber's
 * network, inside which a client picks addresses at will: per address, a /64 would never be limited).
 */
export function clientAddress(peer: PeerAddress): string {
  if (peer.v4 >= 0 || peer.v6 === undefined) return peer.text;
  return `${(peer.v6 >> 64n).toString(16)}::/64`;
}

/** Characters of a tripped key as the request log keeps it (a header value may be long). */
export const MAX_KEY_TEXT = 256;

/**
 * The key the rule counted the request under, as text for the request log (only for a request it refused or
 * challenged): `ip=<address or /64>`, `path=<path>`, `<header name>=<value>`, joined by a space, at most MAX_KEY_TEXT.
 */
export function keyText(a: RateLimitAction, ctx: RequestContext): string {
  const parts: string[] = [];
  if (a.useIp) parts.push(`ip=${clientAddress(ctx.peer)}`);
  if (a.usePath) parts.push(`path=${ctx.path.slice(0, MAX_KEY_TEXT)}`);
  if (a.header !== '') parts.push(`${a.header}=${(ctx.header(a.header) ?? '').slice(0, MAX_KEY_TEXT)}`);
  const text = parts.join(' ');
  return text.length > MAX_KEY_TEXT ? text.slice(0, MAX_KEY_TEXT) : text;
}

const KEYS: readonly RateLimitKey[] = ['ip', 'ip_path', 'path', 'header', 'ip_header'];

export function compileRateLimit(f: RuleBody, rule: { id: number }): RateLimitAction {
  const key = (KEYS as readonly unknown[]).includes(f.key) ? (f.key as RateLimitKey) : 'ip';
  return {
    ruleId: rule.id,
    requests: Math.max(1, Number(f.requests ?? 1)),
    periodMs: Math.max(1, Number(f.period_s ?? 60)) * 1000,
    blockMs: Math.max(1, Number(f.block_s ?? 60)) * 1000,
    challenge: f.action === 'captcha',
    useIp: key === 'ip' || key === 'ip_path' || key === 'ip_header',
    usePath: key === 'ip_path' || key === 'path',
    header: key === 'header' || key === 'ip_header' ? String(f.key_header ?? '').toLowerCase() : '',
  };
}

/** Slots probed per key. */
const PROBES = 8;
/** Default slots per process: 2^17 × 65 bytes ≈ 8.1 MiB (25 of them for sharing across workers). */
export const RATE_LIMIT_SLOTS = 1 << 17;

/** The cluster primary sets this for its workers, so their key hashes agree and counts can be exchanged. */
export const RATE_LIMIT_SEED_ENV = 'EDGE_RATE_LIMIT_SEED';
const seedEnv = Number(process.env[RATE_LIMIT_SEED_ENV]);
const SEED = Number.isInteger(seedEnv) ? seedEnv >>> 0 : randomBytes(4).readUInt32LE(0);

/** Numbers per entry of an exchange: k1, k2, window, count added since the last exchange, period (ms). */
export const SHARE_ENTRY = 5;

// FNV-1a over UTF-16 code units, two lanes with different offsets (one seeded) for a 64-bit fingerprint.
let lane1 = 0;
let lane2 = 0;
function mixString(s: string): void {
  let a = lane1;
  let b = lane2;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x01000193) ^ (b >>> 15);
  }
  // A separator, so ("ab","c") and ("a","bc") differ.
  lane1 = Math.imul(a ^ 0x1f, 0x01000193);
  lane2 = Math.imul(b ^ 0x1f, 0x01000193);
}
function mixInt(n: number): void {
  lane1 = Math.imul(lane1 ^ n, 0x01000193);
  lane2 = Math.imul(lane2 ^ (n * 0x9e3779b1), 0x01000193);
}

/** The fixed-size counter table. */
export class RateLimitTable {
  private readonly mask: number;
  private readonly h1: Int32Array;
  private readonly h2: Int32Array;
  /** Window index (now / period) of `cur`. */
  private readonly win: Float64Array;
  private readonly cur: Uint32Array;
  private readonly prev: Uint32Array;
  /** Limited until (ms since epoch), 0 when not limited. */
  private readonly until: Float64Array;
  /** When the slot stops mattering (its windows and penalty are over): free to reuse after. */
  private readonly dead: Float64Array;
  /** Other workers' count of the key in window `owin` (sharing only). */
  private readonly others: Uint32Array;
  private readonly owin: Float64Array;
  /** `cur` when last collected. */
  private readonly sent: Uint32Array;
  /** The rule's period (ms) the slot last counted for. */
  private readonly period: Uint32Array;
  /** Slots counted in since the last `collect` (sharing only), without repeats. */
  private readonly dirty: Int32Array;
  private readonly isDirty: Uint8Array;
  private dirtyCount = 0;
  /** Slots taken over from a live key (the table was full around the key): the counter of that key restarts. */
  evictions = 0;
  /** Set in a worker of several: counts are collected for the others and theirs merged. */
  sharing = false;

  constructor(readonly slots = RATE_LIMIT_SLOTS) {
    if (slots < PROBES || (slots & (slots - 1)) !== 0) throw new Error('slots must be a power of two ≥ 8');
    this.mask = slots - 1;
    this.h1 = new Int32Array(slots);
    this.h2 = new Int32Array(slots);
    this.win = new Float64Array(slots);
    this.cur = new Uint32Array(slots);
    this.prev = new Uint32Array(slots);
    this.until = new Float64Array(slots);
    this.dead = new Float64Array(slots);
    this.others = new Uint32Array(slots);
    this.owin = new Float64Array(slots);
    this.sent = new Uint32Array(slots);
    this.period = new Uint32Array(slots);
    this.dirty = new Int32Array(slots);
    this.isDirty = new Uint8Array(slots);
  }

  /** Bytes held by the counters (constant). */
  get bytes(): number {
    return this.slots * (4 + 4 + 8 + 4 + 4 + 8 + 8 + 4 + 8 + 4 + 4 + 4 + 1);
  }

  /**
   * Counts one request of `ctx` for the rule and returns 0 when it is within the limit, otherwise the seconds (≥ 1)
   * until the key may send again. While a key is limited its requests are not counted.
   */
  check(a: RateLimitAction, ctx: RequestContext, now: number): number {
    lane1 = 0x811c9dc5;
    lane2 = 0x811c9dc5 ^ SEED;
    mixInt(a.ruleId);
    if (a.useIp) mixString(ctx.peer.v4 >= 0 ? ctx.peer.text : clientAddress(ctx.peer));
    if (a.usePath) mixString(ctx.path);
    if (a.header !== '') {
      const headers = ctx.headers;
      let v = '';
      for (let i = 0; i < headers.length; i++)
        if (headers[i][0] === a.header) {
          v = headers[i][1];
          break;
        }
      mixString(v);
    }
    const k1 = lane1 | 0;
    const k2 = lane2 | 1; // never 0: an all-zero slot is empty
    const slot = this.find(k1, k2, now);
    return this.count(slot, a, now);
  }

  /**
   * The counts added since the last call, `SHARE_ENTRY` numbers per key, for the other workers' `merge`. Allocates
   * once per call, never per request; at most one entry per slot. Counts of a window that ended before the call are
   * not sent (at most one round of a key's requests at each window edge).
   */
  collect(): number[] {
    const out: number[] = [];
    for (let n = 0; n < this.dirtyCount; n++) {
      const i = this.dirty[n];
      this.isDirty[i] = 0;
      const added = this.cur[i] - this.sent[i];
      if (added <= 0 || this.h2[i] === 0) continue;
      this.sent[i] = this.cur[i];
      out.push(this.h1[i], this.h2[i], this.win[i], added, this.period[i]);
    }
    this.dirtyCount = 0;
    return out;
  }

  /** Adds what another worker of the node counted (its `collect`): the keys' estimates here include it. */
  merge(entries: readonly number[], now: number): void {
    for (let j = 0; j + SHARE_ENTRY <= entries.length; j += SHARE_ENTRY) {
      const k1 = entries[j] | 0;
      const k2 = entries[j + 1] | 0;
      const w = entries[j + 2];
      const added = entries[j + 3];
      const period = entries[j + 4];
      if (k2 === 0 || !Number.isInteger(w) || !(added > 0) || !(period > 0)) continue;
      const i = this.find(k1, k2, now);
      const ow = this.owin[i];
      if (ow === w) this.others[i] += added;
      else if (ow < w) {
        this.others[i] = added;
        this.owin[i] = w;
      } else continue; // a window this worker has already left
      const end = (w + 2) * period;
      if (end > this.dead[i]) this.dead[i] = end;
    }
  }

  private find(k1: number, k2: number, now: number): number {
    const { h1, h2, dead, mask } = this;
    const start = k1 & mask;
    let free = -1;
    for (let p = 0; p < PROBES; p++) {
      const i = (start + p) & mask;
      if (h1[i] === k1 && h2[i] === k2) return i;
      if (free < 0 && (h2[i] === 0 || dead[i] <= now)) free = i;
    }
    if (free < 0) {
      // Every probed slot is live: evict the one that counted least and is not limited.
      let best = -1;
      let bestCount = Infinity;
      for (let p = 0; p < PROBES; p++) {
        const i = (start + p) & mask;
        const c = this.until[i] > now ? Infinity : this.cur[i] + this.prev[i];
        if (c < bestCount) {
          bestCount = c;
          best = i;
        }
      }
      free = best < 0 ? start : best;
      this.evictions++;
    }
    h1[free] = k1;
    h2[free] = k2;
    this.win[free] = -2;
    this.cur[free] = 0;
    this.prev[free] = 0;
    this.until[free] = 0;
    this.dead[free] = 0;
    this.others[free] = 0;
    this.owin[free] = -2;
    this.sent[free] = 0;
    return free;
  }

  private count(i: number, a: RateLimitAction, now: number): number {
    const until = this.until[i];
    if (until > now) return Math.max(1, Math.ceil((until - now) / 1000));
    const w = Math.floor(now / a.periodMs);
    const last = this.win[i];
    if (last !== w) {
      // What this worker counted in the window just over, and what the others told it they did.
      this.prev[i] = last === w - 1 ? this.cur[i] + (this.owin[i] === w - 1 ? this.others[i] : 0) : 0;
      this.cur[i] = 0;
      this.sent[i] = 0;
      this.win[i] = w;
    }
    const cur = this.cur[i] + 1;
    this.cur[i] = cur;
    this.period[i] = a.periodMs;
    if (this.sharing && this.isDirty[i] === 0) {
      this.isDirty[i] = 1;
      this.dirty[this.dirtyCount++] = i;
    }
    const elapsed = (now - w * a.periodMs) / a.periodMs;
    const estimate = this.prev[i] * (1 - elapsed) + cur + (this.owin[i] === w ? this.others[i] : 0);
    let end = (w + 2) * a.periodMs;
    let wait = 0;
    if (estimate > a.requests) {
      const limitedUntil = now + a.blockMs;
      this.until[i] = limitedUntil;
      if (limitedUntil > end) end = limitedUntil;
      wait = Math.max(1, Math.ceil(a.blockMs / 1000));
    }
    this.dead[i] = end;
    return wait;
  }
}

/** The table the edge counts in (one per process). */
export const rateLimits = new RateLimitTable();
