// The node's read view of the config: per-domain compiled domains (records by name, rule indexes), each replaced by
// one Map write when the node store applies an entry (DomainSet brings them up to date; DomainBuilder compiles).
import type { DomainSnapshot, ZoneRecord } from '@platform/shared/config';
import { DomainBuilder, type CompiledDomain } from './domain-builder.js';
import { StringSlotMemo } from '../string-slot.js';

export type { CompiledDomain } from './domain-builder.js';

/** The longest DNS name in text (RFC 1035: 255 octets on the wire). */
export const MAX_HOST_LENGTH = 253;

/** Domains in these states are not served by the edge (421 like an unknown host). */
export const NOT_SERVED: ReadonlySet<string> = new Set(['disabled', 'banned']);

/** Compiles a snapshot from scratch. */
export function compileDomain(snapshot: DomainSnapshot): CompiledDomain {
  return new DomainBuilder(snapshot).domain;
}

export interface HostMatch {
  domain: CompiledDomain;
  record: ZoneRecord;
  /** The host looked up, as a string the table keeps (a request may use it instead of its own equal one). */
  host: string;
}

/** Slots of the table's memo of recent lookups (a power of two). */
const MEMO_SLOTS = 512;

export class DomainTable {
  private readonly domains = new Map<string, CompiledDomain>();
  /**
   * Recent lookups, direct-mapped by stringSlot: the host and what lookup returned for it (undefined too). A request's
   * Host is a new string each time (uWS), so a Map lookup by it hashed the whole string (and a subdomain's record
   * name sliced from it) per request; a slot is found from its characters and confirmed by one comparison. Emptied
   * by every change of the table (set, delete): a domain's records change only with a new CompiledDomain.
   */
  private readonly memo = new StringSlotMemo<HostMatch | undefined>(MEMO_SLOTS, (host) => this.find(host), undefined);

  get size(): number {
    return this.domains.size;
  }

  get(name: string): CompiledDomain | undefined {
    return this.domains.get(name);
  }

  all(): IterableIterator<CompiledDomain> {
    return this.domains.values();
  }

  /** Installs or replaces one domain: one Map write, so a request starting now sees the old or the new one. */
  set(domain: CompiledDomain): void {
    this.domains.set(domain.name, domain);
    this.forgetLookups();
  }

  delete(name: string): void {
    this.domains.delete(name);
    this.forgetLookups();
  }

  /**
   * Empties the memo of lookups: after set and delete, and after a domain failed to compile (domain-set.ts), whose
   * builder may have changed the served domain's records before it threw.
   */
  forgetLookups(): void {
    this.memo.clear();
  }

  /**
   * The domain and proxied record serving `host` (exact name first, then DNS-style wildcards), or undefined. A host
   * longer than a DNS name (253 characters) is served by nobody: looked up, a Host of thousands of labels would cost
   * time quadratic in its length (one suffix per dot), about a second of the worker's time for a 16 KB header.
   */
  lookup(host: string): HostMatch | undefined {
    if (host.length > MAX_HOST_LENGTH) return undefined;
    return this.memo.get(host);
  }

  private find(host: string): HostMatch | undefined {
    for (let i = -1; ;) {
      const name = i < 0 ? host : host.slice(i + 1);
      const domain = name === '' ? undefined : this.domains.get(name);
      if (domain) {
        if (NOT_SERVED.has(domain.snapshot.state)) return undefined;
        const rel = name === host ? '@' : host.slice(0, host.length - name.length - 1);
        const record = findRecord(domain.records, rel);
        return record && record.proxied ? { domain, record, host } : undefined;
      }
      i = host.indexOf('.', i + 1);
      if (i < 0) return undefined;
    }
  }
}

function findRecord(records: Map<string, ZoneRecord>, rel: string): ZoneRecord | undefined {
  const exact = records.get(rel);
  if (exact) return exact;
  if (rel === '@') return undefined;
  // `a.b.dev` → `*.b.dev`, `*.dev`, `*`
  for (let i = rel.indexOf('.'); i >= 0; i = rel.indexOf('.', i + 1)) {
    const w = records.get(`*${rel.slice(i)}`);
    if (w) return w;
  }
  return records.get('*');
}
