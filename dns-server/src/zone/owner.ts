// One owner name's records → its RRsets: the part of zone compilation that depends on that name's records alone.
import type { ZoneRecord, ZoneRecordCore } from '@platform/shared/config';
import { TYPE, TYPE_BY_NAME, PROXIED_TTL } from '../wire/constants.js';
import { parseRdata, normaliseName, ipv4Number, ipv6Bytes } from '../wire/rdata.js';
import type { RRset } from './model.js';
import { compactRRsets, OneAddress, OneRRset, type SingleRRset, type RRsets } from './rrsets.js';

export interface CompileOptions {
  /** Edge addresses proxied names answer with. */
  edgeIpv4: readonly string[];
  edgeIpv6: readonly string[];
  /** The node token DNSSEC keys are sealed under (read when a signed zone is compiled). */
  nodeToken?: () => string;
}

/** The fields of a record its owner's answers depend on (what a zone builder keeps of each record). */
export type OwnerRecord = ZoneRecordCore;

/** The problems of an owner without any (shared: never written to). */
const NO_PROBLEMS: string[] = [];
/** The targets of an RRset whose type has none (A, AAAA, TXT, CAA): shared, frozen (a type has targets always or never). */
const NO_TARGETS = Object.freeze([]) as unknown as string[];

export interface OwnerContent {
  /** RRsets by type, each non-empty (the apex's SOA and NS are added by the zone, not here); held compactly
   *  (rrsets.ts): a name of a large zone holds one RRset. */
  rrsets: RRsets;
  /** True when at least one record compiled (valid, or proxied): the name exists in the zone. */
  exists: boolean;
  /** Records skipped or trimmed, each with its record id or the name. */
  problems: string[];
}

/** The absolute owner name of a record (lower case), or null when its name is not a valid domain name. */
export function ownerOf(record: Pick<ZoneRecord, 'name'>, apex: string): string | null {
  return record.name === '@' || record.name === '' ? apex : normaliseName(`${record.name}.${apex}`, apex);
}

/**
 * The content of an owner holding one RRset and no problem (most names of a large zone): the RRsets' map is the
 * content itself, so that such a name costs one small object here, not a content object beside its map.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- a mixin's constructor takes any[] (TS2545)
function asContent<T extends abstract new (...args: any[]) => SingleRRset>(Base: T) {
  abstract class Content extends Base implements OwnerContent {
    get rrsets(): RRsets {
      return this;
    }

    get exists(): boolean {
      return true;
    }

    get problems(): string[] {
      return NO_PROBLEMS;
    }
  }
  return Content;
}

/** One RRset held as an object. */
class OneRRsetContent extends asContent(OneRRset) {}
/** One A record and nothing else (most names of a large zone): its TTL and address, the RRset made on first read. */
class OneAddressContent extends asContent(OneAddress) {}

/** What compileOwner makes of an owner holding one A record (not proxied) with this TTL and address. */
export function oneAddressContent(ttl: number, address: number): OwnerContent {
  return new OneAddressContent(Math.max(0, ttl || 120), address);
}

/** Compiles the records of one owner, given in id order (RRset order and "the first CNAME" follow it). */
export function compileOwner(
  owner: string,
  apex: string,
  records: readonly OwnerRecord[],
  opts: CompileOptions,
): OwnerContent {
  if (records.length === 1) {
    // One A record, not proxied, its address in the usual form: kept as two numbers (the answers are the same).
    const r = records[0]!;
    if (r.type === 'A' && !r.proxied) {
      const address = ipv4Number(r.destination.trim());
      if (address !== null) return oneAddressContent(r.ttl, address);
    }
  }
  // No closures here: this runs once per owner name (a million times for a large zone), and each closure made per
  // call is an allocation (and under tsx a call naming it).
  let problems = NO_PROBLEMS;
  const rrsets = new Map<number, RRset>();
  let proxied = false;
  for (const r of records) {
    const type = TYPE_BY_NAME[r.type.toUpperCase()];
    if (type === undefined) {
      problems = withProblem(problems, `record ${r.id}: unsupported type "${r.type}"`);
      continue;
    }
    if (owner === apex && type === TYPE.NS) continue; // the apex NS set comes from the accepted nameservers
    if (r.proxied && (type === TYPE.A || type === TYPE.AAAA || type === TYPE.CNAME)) {
      proxied = true;
      continue;
    }
    const parsed = parseRdata(type, r.destination, r.mxPriority, apex);
    if (typeof parsed === 'string') {
      problems = withProblem(problems, `record ${r.id}: ${parsed}`);
      continue;
    }
    const ttl = Math.max(0, r.ttl || 120);
    const set = rrsets.get(type);
    // Arrays made with their first element are exactly that long; a pushed-into empty one reserves 17 places.
    if (!set)
      rrsets.set(type, {
        type,
        ttl,
        rdatas: [parsed.rdata],
        targets: parsed.target !== undefined ? [parsed.target] : NO_TARGETS,
      });
    else {
      set.ttl = Math.min(set.ttl, ttl);
      set.rdatas.push(parsed.rdata);
      if (parsed.target !== undefined) set.targets.push(parsed.target);
    }
  }

  // Proxied names answer with the edge addresses only, for both A and AAAA.
  if (proxied) {
    rrsets.delete(TYPE.A);
    rrsets.delete(TYPE.AAAA);
    rrsets.delete(TYPE.CNAME);
    for (const ip of opts.edgeIpv4)
      rrsetAt(rrsets, TYPE.A, PROXIED_TTL).rdatas.push([Buffer.from(ip.split('.').map(Number))]);
    for (const ip of opts.edgeIpv6)
      rrsetAt(rrsets, TYPE.AAAA, PROXIED_TTL).rdatas.push([ipv6Bytes(ip) ?? Buffer.alloc(16)]);
  }

  // A CNAME owns its name alone (RFC 1034 §3.6.2); at the apex it cannot stand beside the SOA.
  const cname = rrsets.get(TYPE.CNAME);
  if (cname && owner === apex) {
    rrsets.delete(TYPE.CNAME);
    problems = withProblem(problems, `${owner}: CNAME at the apex ignored`);
  } else if (cname) {
    if (rrsets.size > 1) {
      problems = withProblem(problems, `${owner}: CNAME beside other data; only the CNAME is served`);
      for (const t of [...rrsets.keys()]) if (t !== TYPE.CNAME) rrsets.delete(t);
    }
    if (cname.rdatas.length > 1) {
      cname.rdatas.length = 1;
      cname.targets.length = 1;
      problems = withProblem(problems, `${owner}: several CNAMEs; the first is served`);
    }
  }
  if (rrsets.size === 1 && problems === NO_PROBLEMS) return new OneRRsetContent(rrsets.values().next().value!);
  return { rrsets: compactRRsets(rrsets), exists: proxied || rrsets.size > 0, problems };
}

/** `problems` with `p` added (a new list in place of the shared empty one). */
function withProblem(problems: string[], p: string): string[] {
  const out = problems === NO_PROBLEMS ? [] : problems;
  out.push(p);
  return out;
}

/** The RRset of `type`, made empty when absent, its TTL lowered to `ttl` (RFC 2181 §5.2: one TTL per RRset). */
function rrsetAt(rrsets: Map<number, RRset>, type: number, ttl: number): RRset {
  let set = rrsets.get(type);
  if (!set) rrsets.set(type, (set = { type, ttl, rdatas: [], targets: [] }));
  set.ttl = Math.min(set.ttl, ttl);
  return set;
}
