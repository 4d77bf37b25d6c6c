// Country and network (AS number and organisation) of a client address, looked up at ingest from offline databases
// shipped by npm packages (docs/decisions.md "Request-log fields"): the country from
// @ip-location-db/geo-whois-asn-country-mmdb (CC0, read with mmdb-lib), the network from @ip-location-db/asn
// (RouteViews and DB-IP data, CC BY 4.0). Both are read once per process, at the first lookup, into memory; a lookup
// is a walk of at most 128 tree levels (country) and a binary search (network), whatever the address.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { Reader, type CountryResponse } from 'mmdb-lib';
import { formatIp, parseIp } from '@platform/shared/match';

export interface ClientNetwork {
  /** ISO 3166-1 alpha-2, '' unknown. */
  country: string;
  /** 0 unknown. */
  asn: number;
  asOrg: string;
}

/** The package's records: `{ country_code: 'US' }` (not MaxMind's nested country record). */
type CountryCode = CountryResponse & { country_code?: string };

const UNKNOWN: ClientNetwork = Object.freeze({ country: '', asn: 0, asOrg: '' });
/** The longest text an IP address can be (an IPv4-mapped IPv6 address with a zone is cut before its zone). */
const MAX_ADDRESS_CHARS = 45;
/** Characters of an organisation name kept. */
const MAX_ORG_CHARS = 128;

const require = createRequire(import.meta.url);
const packageDir = (name: string): string => dirname(require.resolve(`${name}/package.json`));

/**
 * Address ranges: start, end (inclusive) and what they map to, sorted by start, not overlapping. IPv4 ranges are one
 * 32-bit number each; IPv6 ranges four 32-bit words each (word 4i is the most significant of range i), compared
 * without BigInt.
 */
interface RangeTable {
  start: Uint32Array;
  end: Uint32Array;
  asn: Uint32Array;
  org: Uint32Array;
}

interface Databases {
  country: Reader<CountryCode>;
  v4: RangeTable;
  v6: RangeTable;
  orgs: string[];
}

let loaded: Databases | null = null;

/** An organisation field of the CSV: quoted ("a, b" with "" for a quote) or bare. */
function orgField(text: string): string {
  const t =
    text.startsWith('"') && text.endsWith('"') && text.length >= 2 ? text.slice(1, -1).replace(/""/g, '"') : text;
  return t.length > MAX_ORG_CHARS ? t.slice(0, MAX_ORG_CHARS) : t;
}

/** Reads `start,end,asn,org` lines (numbers as decimal integers) of the package's *-num.csv file. */
function readRanges(file: string, orgIndex: Map<string, number>, orgs: string[]) {
  const text = readFileSync(file, 'latin1');
  const starts: bigint[] = [];
  const ends: bigint[] = [];
  const asns: number[] = [];
  const orgIds: number[] = [];
  let at = 0;
  while (at < text.length) {
    let nl = text.indexOf('\n', at);
    if (nl < 0) nl = text.length;
    const line = text.slice(at, nl).replace(/\r$/, '');
    at = nl + 1;
    const c1 = line.indexOf(',');
    const c2 = line.indexOf(',', c1 + 1);
    const c3 = line.indexOf(',', c2 + 1);
    if (c1 <= 0 || c2 <= c1 || c3 <= c2) continue;
    const asn = Number(line.slice(c2 + 1, c3));
    if (!Number.isInteger(asn) || asn < 0 || asn > 0xffffffff) continue;
    const org = orgField(line.slice(c3 + 1));
    let id = orgIndex.get(org);
    if (id === undefined) {
      id = orgs.length;
      orgs.push(org);
      orgIndex.set(org, id);
    }
    starts.push(BigInt(line.slice(0, c1)));
    ends.push(BigInt(line.slice(c1 + 1, c2)));
    asns.push(asn);
    orgIds.push(id);
  }
  return { starts, ends, asns, orgIds };
}

function load(): Databases {
  const countryDir = packageDir('@ip-location-db/geo-whois-asn-country-mmdb');
  const country = new Reader<CountryCode>(readFileSync(join(countryDir, 'geo-whois-asn-country.mmdb')));
  const asnDir = packageDir('@ip-location-db/asn');
  const orgs: string[] = [];
  const orgIndex = new Map<string, number>();
  const r4 = readRanges(join(asnDir, 'asn-ipv4-num.csv'), orgIndex, orgs);
  const v4: RangeTable = {
    start: Uint32Array.from(r4.starts, Number),
    end: Uint32Array.from(r4.ends, Number),
    asn: Uint32Array.from(r4.asns),
    org: Uint32Array.from(r4.orgIds),
  };
  const r6 = readRanges(join(asnDir, 'asn-ipv6-num.csv'), orgIndex, orgs);
  const words = (values: bigint[]): Uint32Array => {
    const out = new Uint32Array(values.length * 4);
    values.forEach((v, i) => out.set(v6Words(v), i * 4));
    return out;
  };
  const v6: RangeTable = {
    start: words(r6.starts),
    end: words(r6.ends),
    asn: Uint32Array.from(r6.asns),
    org: Uint32Array.from(r6.orgIds),
  };
  return { country, v4, v6, orgs };
}

/** The databases, read at the first call (about a second) and kept for the life of the process. */
export function geoDatabases(): Databases {
  return (loaded ??= load());
}

/** A 128-bit IPv6 address as four 32-bit words, most significant first. */
function v6Words(v: bigint): [number, number, number, number] {
  return [0, 1, 2, 3].map((k) => Number((v >> BigInt(96 - 32 * k)) & 0xffffffffn)) as [number, number, number, number];
}

/** Compares range word group i of `table` with the address words: negative, 0 or positive. */
function compareV6(table: Uint32Array, i: number, w: readonly number[]): number {
  for (let k = 0; k < 4; k++) {
    const d = table[i * 4 + k] - w[k];
    if (d !== 0) return d;
  }
  return 0;
}

function findV4(t: RangeTable, n: number): number {
  let lo = 0;
  let hi = t.start.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    if (t.start[mid] <= n) lo = mid + 1;
    else hi = mid - 1;
  }
  return hi >= 0 && t.end[hi] >= n ? hi : -1;
}

function findV6(t: RangeTable, w: readonly number[]): number {
  let lo = 0;
  let hi = t.asn.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    if (compareV6(t.start, mid, w) <= 0) lo = mid + 1;
    else hi = mid - 1;
  }
  return hi >= 0 && compareV6(t.end, hi, w) >= 0 ? hi : -1;
}

/**
 * Country and network of a client address as the edge logged it (IPv4, IPv6, an IPv4-mapped IPv6 address, a zone
 * after `%` ignored). Anything that is not an address, or longer than an address can be, is unknown.
 */
export function lookupClient(address: string): ClientNetwork {
  if (typeof address !== 'string' || address.length === 0 || address.length > MAX_ADDRESS_CHARS + 16) return UNKNOWN;
  let ip = address;
  const zone = ip.indexOf('%');
  if (zone >= 0) ip = ip.slice(0, zone);
  if (ip.length > MAX_ADDRESS_CHARS) return UNKNOWN;
  // An IPv4-mapped IPv6 address (dotted or hex) is its IPv4 address, as in the rules' address lists.
  const addr = parseIp(ip);
  if (!addr) return UNKNOWN;
  const db = geoDatabases();
  let country = '';
  try {
    const c = db.country.get(addr.v6 ? ip : formatIp(addr))?.country_code;
    if (typeof c === 'string' && /^[A-Z]{2}$/.test(c)) country = c;
  } catch {
    /* an address the reader does not take: unknown */
  }
  const i = addr.v6 ? findV6(db.v6, v6Words(addr.value)) : findV4(db.v4, Number(addr.value));
  const table = addr.v6 ? db.v6 : db.v4;
  if (i < 0) return country === '' ? UNKNOWN : { country, asn: 0, asOrg: '' };
  return { country, asn: table.asn[i], asOrg: db.orgs[table.org[i]] };
}
