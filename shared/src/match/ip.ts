// IP address lists of rules: canonicalisation on write (spec "IP rules") and matching with sorted ranges + binary search.
import { isIPv4, isIPv6 } from 'node:net';

/** At most this many entries in ip_includes and in ip_excludes (spec Limits). */
export const MAX_IP_ENTRIES = 256;

const V4_MAX = 0xffffffffn;
const V6_MAX = (1n << 128n) - 1n;

/** A parsed address: IPv4 values are 32-bit, IPv6 values 128-bit. */
export interface IpValue {
  v6: boolean;
  value: bigint;
}

/** Parses one textual address (no prefix) and unmaps IPv4-mapped IPv6 (`::ffff:a.b.c.d`). */
export function parseIp(text: string): IpValue | undefined {
  if (isIPv4(text)) return { v6: false, value: v4ToBigint(text) };
  if (!isIPv6(text)) return undefined;
  const value = v6ToBigint(text);
  if (value >> 32n === 0xffffn) return { v6: false, value: value & V4_MAX };
  return { v6: true, value };
}

function v4ToBigint(text: string): bigint {
  const p = text.split('.');
  return BigInt(((+p[0] << 24) >>> 0) + (+p[1] << 16) + (+p[2] << 8) + +p[3]);
}

function v6ToBigint(text: string): bigint {
  let s = text.toLowerCase();
  const zone = s.indexOf('%');
  if (zone >= 0) s = s.slice(0, zone);
  // An embedded IPv4 tail (::ffff:1.2.3.4, 64:ff9b::1.2.3.4) becomes two hextets.
  const lastColon = s.lastIndexOf(':');
  const tail = s.slice(lastColon + 1);
  if (tail.includes('.')) {
    const v4 = Number(v4ToBigint(tail));
    s = `${s.slice(0, lastColon + 1)}${(v4 >>> 16).toString(16)}:${(v4 & 0xffff).toString(16)}`;
  }
  const [head, rest] = s.split('::') as [string, string | undefined];
  const headParts = head === '' ? [] : head.split(':');
  const restParts = rest === undefined || rest === '' ? [] : rest.split(':');
  const fill = rest === undefined ? 0 : 8 - headParts.length - restParts.length;
  const parts = [...headParts, ...new Array<string>(fill).fill('0'), ...restParts];
  let value = 0n;
  for (const part of parts) value = (value << 16n) | BigInt(parseInt(part, 16));
  return value;
}

/** Formats an address in its canonical text form (RFC 5952 for IPv6: lower case, longest zero run compressed). */
export function formatIp(ip: IpValue): string {
  if (!ip.v6) {
    const n = Number(ip.value);
    return `${n >>> 24}.${(n >>> 16) & 255}.${(n >>> 8) & 255}.${n & 255}`;
  }
  const hextets: number[] = [];
  for (let i = 7; i >= 0; i--) hextets.push(Number((ip.value >> BigInt(i * 16)) & 0xffffn));
  let bestStart = -1,
    bestLen = 0;
  for (let i = 0; i < 8;) {
    if (hextets[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && hextets[j] === 0) j++;
    if (j - i > bestLen && j - i >= 2) {
      bestStart = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = hextets.map((h) => h.toString(16));
  if (bestStart < 0) return hex.join(':');
  return `${hex.slice(0, bestStart).join(':')}::${hex.slice(bestStart + bestLen).join(':')}`;
}

/** One entry of an IP list as an inclusive range. */
export interface IpRange {
  v6: boolean;
  low: bigint;
  high: bigint;
}

/** Parses one entry (address, CIDR `a/n` or range `a-b`) into its canonical text and range; a string is an error. */
export function canonicaliseIpEntry(raw: string): { text: string; range: IpRange } | string {
  const entry = raw.trim();
  if (entry === '') return 'empty entry';
  const dash = entry.indexOf('-');
  if (dash >= 0) {
    const a = parseIp(entry.slice(0, dash).trim());
    const b = parseIp(entry.slice(dash + 1).trim());
    if (!a || !b) return `invalid IP range "${raw}"`;
    if (a.v6 !== b.v6) return `IP range "${raw}" mixes IPv4 and IPv6`;
    const [lo, hi] = a.value <= b.value ? [a, b] : [b, a];
    const text = lo.value === hi.value ? formatIp(lo) : `${formatIp(lo)}-${formatIp(hi)}`;
    return { text, range: { v6: lo.v6, low: lo.value, high: hi.value } };
  }
  const slash = entry.indexOf('/');
  if (slash >= 0) {
    const addrText = entry.slice(0, slash);
    const prefixText = entry.slice(slash + 1);
    const addr = parseIp(addrText);
    if (!addr || !/^\d{1,3}$/.test(prefixText)) return `invalid CIDR "${raw}"`;
    let prefix = Number(prefixText);
    // A mapped IPv6 CIDR (::ffff:10.0.0.0/104) is unmapped together with its prefix.
    const mapped = !addr.v6 && isIPv6(addrText);
    if (mapped) {
      if (prefix < 96 || prefix > 128) return `invalid CIDR "${raw}": an IPv4-mapped prefix must be 96 to 128`;
      prefix -= 96;
    }
    const bits = addr.v6 ? 128 : 32;
    if (prefix > bits) return `invalid CIDR "${raw}": prefix longer than ${bits}`;
    const max = addr.v6 ? V6_MAX : V4_MAX;
    const hostMask = (1n << BigInt(bits - prefix)) - 1n;
    const low = addr.value & (max ^ hostMask);
    return {
      text: `${formatIp({ v6: addr.v6, value: low })}/${prefix}`,
      range: { v6: addr.v6, low, high: low | hostMask },
    };
  }
  const addr = parseIp(entry);
  if (!addr) return `invalid IP address "${raw}"`;
  return { text: formatIp(addr), range: { v6: addr.v6, low: addr.value, high: addr.value } };
}

/**
 * Canonicalises an ip_includes / ip_excludes list exactly as the spec says: CIDR host bits masked, ranges
 * ordered low to high, IPv4-mapped IPv6 unmapped, duplicates dropped, order of the rest preserved.
 * Returns the canonical list or the problems, each with the index of its entry.
 */
export function canonicaliseIpList(
  entries: readonly string[],
): { ok: true; value: string[] } | { ok: false; problems: { index: number; message: string }[] } {
  const problems: { index: number; message: string }[] = [];
  if (entries.length > MAX_IP_ENTRIES) problems.push({ index: -1, message: `at most ${MAX_IP_ENTRIES} entries` });
  const seen = new Set<string>();
  const value: string[] = [];
  entries.forEach((raw, index) => {
    const r = typeof raw === 'string' ? canonicaliseIpEntry(raw) : 'not a string';
    if (typeof r === 'string') {
      problems.push({ index, message: r });
      return;
    }
    if (seen.has(r.text)) return;
    seen.add(r.text);
    value.push(r.text);
  });
  return problems.length > 0 ? { ok: false, problems } : { ok: true, value };
}

/**
 * A compiled IP list: merged, sorted ranges per family, looked up by binary search.
 * IPv4 ranges are kept as plain numbers (no bigint on the hot path for IPv4 peers).
 */
export class IpRangeSet {
  readonly size: number;
  private readonly v4Low: Float64Array;
  private readonly v4High: Float64Array;
  private readonly v6Low: bigint[];
  private readonly v6High: bigint[];

  constructor(canonicalEntries: readonly string[]) {
    const v4: [number, number][] = [];
    const v6: [bigint, bigint][] = [];
    for (const e of canonicalEntries) {
      const r = canonicaliseIpEntry(e);
      if (typeof r === 'string') continue;
      if (r.range.v6) v6.push([r.range.low, r.range.high]);
      else v4.push([Number(r.range.low), Number(r.range.high)]);
    }
    const m4 = mergeRanges(v4);
    const m6 = mergeRanges(v6);
    this.v4Low = Float64Array.from(m4, (r) => r[0]);
    this.v4High = Float64Array.from(m4, (r) => r[1]);
    this.v6Low = m6.map((r) => r[0]);
    this.v6High = m6.map((r) => r[1]);
    this.size = canonicalEntries.length;
  }

  /** True when `ip` falls in one of the ranges. */
  has(ip: PeerAddress): boolean {
    if (ip.v4 >= 0) return search(this.v4Low, this.v4High, ip.v4);
    if (ip.v6 === undefined) return false;
    return search(this.v6Low, this.v6High, ip.v6);
  }
}

function mergeRanges<T extends number | bigint>(ranges: [T, T][]): [T, T][] {
  ranges.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  const out: [T, T][] = [];
  for (const r of ranges) {
    const last = out[out.length - 1];
    // Adjacent or overlapping ranges merge (integer addresses: high + 1 touches the next low).
    if (
      last &&
      (typeof r[0] === 'bigint' ? r[0] <= (last[1] as bigint) + 1n : (r[0] as number) <= (last[1] as number) + 1)
    ) {
      if (r[1] > last[1]) last[1] = r[1];
    } else out.push([r[0], r[1]]);
  }
  return out;
}

function search<T extends number | bigint>(low: ArrayLike<T>, high: ArrayLike<T>, x: T): boolean {
  let lo = 0,
    hi = low.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    if (x < low[mid]) hi = mid - 1;
    else if (x > high[mid]) lo = mid + 1;
    else return true;
  }
  return false;
}

/** A client address prepared once per request: `v4` is the IPv4 value or -1; `v6` the IPv6 value when not IPv4. */
export interface PeerAddress {
  v4: number;
  v6: bigint | undefined;
  text: string;
}

/** Parses the TCP peer's text address once per request (IPv4-mapped IPv6 peers count as IPv4). */
export function parsePeerAddress(text: string): PeerAddress {
  const v4 = fastV4(text);
  if (v4 >= 0) return { v4, v6: undefined, text };
  const p = parseIp(text);
  if (!p) return { v4: -1, v6: undefined, text };
  if (!p.v6) return { v4: Number(p.value), v6: undefined, text: formatIp(p) };
  return { v4: -1, v6: p.value, text };
}

/** Dotted-quad IPv4 to its 32-bit value without bigint or regex (the per-request path), -1 when not IPv4. */
function fastV4(text: string): number {
  let value = 0,
    part = 0,
    digits = 0,
    dots = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 46) {
      if (digits === 0 || ++dots > 3) return -1;
      value = value * 256 + part;
      part = 0;
      digits = 0;
    } else if (c >= 48 && c <= 57) {
      if (digits > 0 && part === 0) return -1; // no leading zeros, as isIPv4
      part = part * 10 + (c - 48);
      if (++digits > 3 || part > 255) return -1;
    } else return -1;
  }
  if (dots !== 3 || digits === 0) return -1;
  return value * 256 + part;
}
