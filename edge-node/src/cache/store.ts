// The edge cache: per-domain LRU maps bounded by the domain's cache_cap_mb, entries kept at most cache_l2_ttl_days,
// dropped whole when the domain's purge generation changes.

export interface CacheEntry {
  status: number;
  headers: [string, string][];
  body: Buffer;
  storedAt: number;
  /** Fresh until this time (ms); after it the entry is stale (served only on origin errors with stale_on_error). */
  freshUntil: number;
  /** Dropped after this time (storedAt + cache_l2_ttl_days). */
  expiresAt: number;
}

const OVERHEAD = 256;

function sizeOf(e: CacheEntry): number {
  let n = e.body.length + OVERHEAD;
  for (const [k, v] of e.headers) n += k.length + v.length;
  return n;
}

class DomainCache {
  readonly entries = new Map<string, CacheEntry>();
  bytes = 0;
  /** Highest selective purge id applied. */
  lastPurgeId = 0;
  constructor(public generation: number) {}

  clear(): void {
    this.entries.clear();
    this.bytes = 0;
  }
}

export class EdgeCache {
  private readonly domains = new Map<string, DomainCache>();
  hits = 0;
  misses = 0;

  private domain(name: string, generation: number): DomainCache {
    let d = this.domains.get(name);
    if (!d) {
      d = new DomainCache(generation);
      this.domains.set(name, d);
    } else if (d.generation !== generation) {
      d.clear();
      d.generation = generation;
    }
    return d;
  }

  /** The entry (fresh or stale) under `key`, or undefined; expired entries are dropped. */
  get(domain: string, generation: number, key: string, now: number): CacheEntry | undefined {
    const d = this.domain(domain, generation);
    const e = d.entries.get(key);
    if (!e) return undefined;
    if (now >= e.expiresAt) {
      d.entries.delete(key);
      d.bytes -= sizeOf(e);
      return undefined;
    }
    // LRU: move to the end.
    d.entries.delete(key);
    d.entries.set(key, e);
    return e;
  }

  /** Stores an entry, evicting the least recently used ones beyond `capBytes`. */
  set(domain: string, generation: number, key: string, entry: CacheEntry, capBytes: number): void {
    const size = sizeOf(entry);
    if (size > capBytes) return;
    const d = this.domain(domain, generation);
    const prev = d.entries.get(key);
    if (prev) {
      d.entries.delete(key);
      d.bytes -= sizeOf(prev);
    }
    d.entries.set(key, entry);
    d.bytes += size;
    for (const [k, e] of d.entries) {
      if (d.bytes <= capBytes) break;
      d.entries.delete(k);
      d.bytes -= sizeOf(e);
    }
  }

  /**
   * Applies the selective purges of a snapshot not applied yet: entries whose key (host + path + '?' + query) starts
   * with one of a purge's prefixes are dropped. Returns how many entries were dropped.
   */
  applyPurges(domain: string, generation: number, purges: readonly { id: number; prefixes: string[] }[]): number {
    const d = this.domain(domain, generation);
    let dropped = 0;
    for (const p of purges) {
      if (p.id <= d.lastPurgeId) continue;
      d.lastPurgeId = p.id;
      for (const [k, e] of d.entries) {
        if (!p.prefixes.some((prefix) => k.startsWith(prefix))) continue;
        d.entries.delete(k);
        d.bytes -= sizeOf(e);
        dropped++;
      }
    }
    return dropped;
  }

  /** Drops a domain's whole cache (domain deleted). */
  drop(domain: string): void {
    this.domains.delete(domain);
  }

  stats(domain: string): { entries: number; bytes: number } {
    const d = this.domains.get(domain);
    return { entries: d?.entries.size ?? 0, bytes: d?.bytes ?? 0 };
  }
}
