// Response rate limiting (RRL) for UDP answers, the scheme NSD and Knot use against reflection and amplification:
// answers are counted per bucket = (client prefix, response class, name, qtype); a bucket over its rate has its
// answers dropped, and every `slip`-th of them sent as a tiny TC=1 answer so a real client behind a forged-against
// prefix retries over TCP (which cannot be spoofed).
//
// Hot path: no allocation. The client address is parsed from its text form in place, the bucket key is a 32-bit
// hash, and the table is a fixed set of typed arrays (2-way set associative, the idler of the two slots replaced on a
// miss). Each bucket is one GCRA cell (the theoretical arrival time of its next answer), i.e. a token bucket of
// `rate` tokens refilled at `rate` per second.
import { IpRangeSet, parsePeerAddress } from '@platform/shared/match';

export interface RrlConfig {
  /** Answers per second per bucket; 0 turns rate limiting off. */
  rate: number;
  /** Every slip-th limited answer is sent truncated (TC=1); 0: all dropped, 1: all truncated. */
  slip: number;
  /** Client address bits that form the bucket's prefix. */
  ipv4Prefix: number;
  /** Client address bits that form the bucket's prefix (at most 64). */
  ipv6Prefix: number;
  /** Buckets (rounded up to a power of two). */
  tableSize: number;
  /** Canonical CIDRs whose clients are never limited (NSD's rrl-whitelist, Knot's whitelist); looked up only for an
   *  answer that would otherwise be limited. */
  exempt?: readonly string[];
}

/** What to do with one answer. */
export const RRL = { ALLOW: 0, DROP: 1, SLIP: 2 } as const;

/** Response classes (NSD's and Knot's): a name is counted with its class, so one flood does not starve another. */
export const RRL_CLASS = {
  /** An answer (or referral) for a name present in the zone: keyed by the name and qtype. */
  POSITIVE: 1,
  /** NOERROR without data: keyed by the name and qtype. */
  NODATA: 2,
  /** Any name that does not exist: keyed by the zone, so random names share one bucket. */
  NXDOMAIN: 3,
  /** REFUSED, FORMERR, NOTIMP, BADVERS: keyed by the client prefix only. */
  ERROR: 4,
  /** Answers synthesised from a wildcard or below a delegation: keyed by the zone and qtype (random names again). */
  SYNTHESISED: 5,
} as const;

const words = new Uint16Array(8);

/**
 * The limiter's clock (ms, performance.now), refreshed every 10 ms by an unref'd timer while a limiter exists: reading
 * the clock for every answer cost about as much as the rest of the check. Token refills are 10 ms coarse.
 */
let coarseNow = performance.now();
let ticker: NodeJS.Timeout | undefined;
function startClock(): void {
  if (ticker) return;
  ticker = setInterval(() => {
    coarseNow = performance.now();
  }, 10);
  ticker.unref();
}

export class ResponseRateLimiter {
  private readonly mask: number;
  private readonly fingerprint: Uint32Array;
  /** GCRA theoretical arrival time of the bucket's next answer, in ms (performance.now); 0 = empty slot. */
  private readonly tat: Float64Array;
  private readonly slipCount: Uint8Array;
  private readonly interval: number;
  private readonly tolerance: number;
  private readonly slip: number;
  private readonly v4Mask: number;
  private readonly v6Mask0: number;
  private readonly v6Mask1: number;
  private readonly exempt: IpRangeSet | null;

  constructor(cfg: RrlConfig) {
    let size = 2;
    while (size < cfg.tableSize) size *= 2;
    this.mask = size - 2; // even index: the first slot of a pair
    this.fingerprint = new Uint32Array(size);
    this.tat = new Float64Array(size);
    this.slipCount = new Uint8Array(size);
    this.interval = 1000 / cfg.rate;
    // The slack absorbs the rounding of `tat + interval` summed up over a burst: without it the rate-th answer of a
    // fresh bucket was refused now and then (950.0000000001 > 950).
    this.tolerance = 1000 - this.interval + 1e-6;
    this.slip = cfg.slip;
    this.v4Mask = prefixMask(cfg.ipv4Prefix);
    this.v6Mask0 = prefixMask(Math.min(cfg.ipv6Prefix, 32));
    this.v6Mask1 = prefixMask(Math.max(cfg.ipv6Prefix - 32, 0));
    this.exempt = cfg.exempt && cfg.exempt.length > 0 ? new IpRangeSet(cfg.exempt) : null;
    startClock();
  }

  /** Buckets in the table. */
  get size(): number {
    return this.tat.length;
  }

  /**
   * Counts one UDP answer of class `cls` for `name`/`qtype` to `address` (as node:dgram reports it) and says whether
   * to send it (ALLOW), drop it (DROP) or send it truncated (SLIP).
   */
  check(address: string, cls: number, name: string, qtype: number, now = coarseNow): number {
    let h = 0x811c9dc5 ^ cls;
    const v4 = address.indexOf(':') < 0 ? parseIpv4(address, 0, address.length) : -1;
    if (v4 >= 0) h = mix(h, (v4 & this.v4Mask) >>> 0);
    else if (!parseAddress(address)) return RRL.ALLOW;
    else if (
      words[0] === 0 &&
      words[1] === 0 &&
      words[2] === 0 &&
      words[3] === 0 &&
      words[4] === 0 &&
      words[5] === 0xffff
    )
      h = mix(h, (((words[6] << 16) | words[7]) & this.v4Mask) >>> 0); // IPv4-mapped IPv6
    else {
      h = mix(h ^ 0x6, (((words[0] << 16) | words[1]) & this.v6Mask0) >>> 0);
      h = mix(h, (((words[2] << 16) | words[3]) & this.v6Mask1) >>> 0);
    }
    if (cls !== RRL_CLASS.ERROR) {
      h = mix(h, qtype);
      for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 16777619);
    }
    h >>>= 0;
    const tat = this.tat;
    const fp = this.fingerprint;
    let i = fmix(h) & this.mask;
    if (fp[i] !== h || tat[i] === 0) {
      if (fp[i + 1] === h && tat[i + 1] !== 0) i++;
      else {
        // A new bucket: replace the idler of the two slots (the one whose next answer was due earliest).
        if (tat[i + 1] < tat[i]) i++;
        fp[i] = h;
        tat[i] = now;
        this.slipCount[i] = 0;
      }
    }
    const t = tat[i] > now ? tat[i] : now;
    if (t - now <= this.tolerance) {
      tat[i] = t + this.interval;
      return RRL.ALLOW;
    }
    if (this.exempt !== null && this.exempt.has(parsePeerAddress(address))) return RRL.ALLOW;
    if (this.slip === 0) return RRL.DROP;
    const n = this.slipCount[i] + 1;
    if (n >= this.slip) {
      this.slipCount[i] = 0;
      return RRL.SLIP;
    }
    this.slipCount[i] = n;
    return RRL.DROP;
  }
}

function prefixMask(bits: number): number {
  return bits === 0 ? 0 : (0xffffffff << (32 - bits)) >>> 0;
}

function mix(h: number, word: number): number {
  return Math.imul(h ^ word, 16777619);
}

/** murmur3's finaliser: spreads the FNV hash's bits before they pick a slot. */
function fmix(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/**
 * Parses an IPv4 (dotted) or IPv6 address into `words` (IPv4 as IPv4-mapped IPv6) without allocating; false when
 * the text is neither. A zone index (`%eth0`) is ignored.
 */
export function parseAddress(s: string): boolean {
  words.fill(0);
  if (s.indexOf(':') < 0) {
    const v4 = parseIpv4(s, 0, s.length);
    if (v4 < 0) return false;
    words[5] = 0xffff;
    words[6] = v4 >>> 16;
    words[7] = v4 & 0xffff;
    return true;
  }
  let end = s.indexOf('%');
  if (end < 0) end = s.length;
  // Groups before "::" go from the front; after it they are collected, then moved to the back.
  let n = 0;
  let gap = -1;
  let i = 0;
  if (end >= 2 && s.charCodeAt(0) === 58 && s.charCodeAt(1) === 58) {
    gap = 0;
    i = 2;
  }
  while (i < end) {
    let v = 0;
    let digits = 0;
    const start = i;
    for (; i < end; i++) {
      const c = s.charCodeAt(i);
      const d = c >= 48 && c <= 57 ? c - 48 : c >= 97 && c <= 102 ? c - 87 : c >= 65 && c <= 70 ? c - 55 : -1;
      if (d < 0) break;
      v = v * 16 + d;
      digits++;
    }
    if (i < end && s.charCodeAt(i) === 46) {
      // Embedded IPv4 in the last two groups.
      const v4 = parseIpv4(s, start, end);
      if (v4 < 0 || n > 6) return false;
      words[n++] = v4 >>> 16;
      words[n++] = v4 & 0xffff;
      i = end;
      break;
    }
    if (digits === 0 || digits > 4 || n >= 8) return false;
    words[n++] = v;
    if (i === end) break;
    if (s.charCodeAt(i) !== 58) return false;
    i++;
    if (i < end && s.charCodeAt(i) === 58) {
      if (gap >= 0) return false;
      gap = n;
      i++;
    }
  }
  if (gap < 0) return n === 8;
  if (n >= 8) return false;
  const tail = n - gap;
  for (let k = 0; k < tail; k++) words[7 - k] = words[n - 1 - k];
  for (let k = gap; k < 8 - tail; k++) words[k] = 0;
  return true;
}

/** The address read by the last successful parseAddress (tests). */
export function parsedWords(): readonly number[] {
  return Array.from(words);
}

function parseIpv4(s: string, from: number, to: number): number {
  let v = 0;
  let part = 0;
  let digits = 0;
  let dots = 0;
  for (let i = from; i < to; i++) {
    const c = s.charCodeAt(i);
    if (c === 46) {
      if (digits === 0 || part > 255) return -1;
      v = v * 256 + part;
      part = 0;
      digits = 0;
      dots++;
    } else if (c >= 48 && c <= 57 && digits < 3) {
      part = part * 10 + c - 48;
      digits++;
    } else return -1;
  }
  if (dots !== 3 || digits === 0 || part > 255) return -1;
  return v * 256 + part;
}
