// The edge cache: per-domain LRU maps bounded by the domain's cache_cap_mb, entries kept at most cache_l2_ttl_days,
// dropped whole when the domain's purge generation changes; all domains together bounded by EDGE_CACHE_MAX_BYTES,
// evicting the node's least recently used entry whatever its domain.

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

/** What an entry costs, its key included (keys are as long as the URLs clients send). */
function sizeOf(key: string, e: CacheEntry): number {
  let n = e.body.length + key.length + OVERHEAD;
  for (const [k, v] of e.headers) n += k.length + v.length;
  return n;
}

class DomainCache {
  readonly entries = new Map<string, CacheEntry>();
  bytes = 0;
  /** Highest selective purge id applied. */
  lastPurgeId = 0;
  constructor(
    readonly name: string,
    public generation: number,
  ) {}
}

/** Separates domain and key in the node-wide LRU (neither a host name nor a request target holds a newline). */
const SEP = '\n';

export class EdgeCache {
  private readonly domains = new Map<string, DomainCache>();
  /** Every entry of every domain in least-recently-used order: `domain SEP key` → its domain. */
  private readonly lru = new Map<string, DomainCache>();
  /** Bytes held across all domains (at most maxBytes). */
  bytes = 0;
  /** Entries dropped to stay within maxBytes (the node-wide cap, not a domain's). */
  evicted = 0;
  hits = 0;
  misses = 0;

  /** `maxBytes`: the node-wide cap (EDGE_CACHE_MAX_BYTES) over all domains, besides each domain's own cap. */
  constructor(private readonly maxBytes = Number.POSITIVE_INFINITY) {}

  private domain(name: string, generation: number): DomainCache {
    let d = this.domains.get(name);
    if (!d) {
      d = new DomainCache(name, generation);
      this.domains.set(name, d);
    } else if (d.generation !== generation) {
      this.clear(d);
      d.generation = generation;
    }
    return d;
  }

  private remove(d: DomainCache, key: string, e: CacheEntry): void {
    const size = sizeOf(key, e);
    d.entries.delete(key);
    d.bytes -= size;
    this.bytes -= size;
    this.lru.delete(d.name + SEP + key);
  }

  private clear(d: DomainCache): void {
    for (const key of d.entries.keys()) this.lru.delete(d.name + SEP + key);
    this.bytes -= d.bytes;
    d.entries.clear();
    d.bytes = 0;
  }

  /** The entry (fresh or stale) under `key`, or undefined; expired entries are dropped. */
  get(domain: string, generation: number, key: string, now: number): CacheEntry | undefined {
    const d = this.domain(domain, generation);
    const e = d.entries.get(key);
    if (!e) return undefined;
    if (now >= e.expiresAt) {
      this.remove(d, key, e);
      return undefined;
    }
    // LRU: move to the end, in the domain and node-wide.
    d.entries.delete(key);
    d.entries.set(key, e);
    const lruKey = d.name + SEP + key;
    this.lru.delete(lruKey);
    this.lru.set(lruKey, d);
    return e;
  }

  /**
   * Stores an entry, evicting the domain's least recently used ones beyond `capBytes`, then the node's least recently
   * used ones (any domain) beyond the node-wide cap.
   */
  set(domain: string, generation: number, key: string, entry: CacheEntry, capBytes: number): void {
    const size = sizeOf(key, entry);
    if (size > capBytes || size > this.maxBytes) return;
    const d = this.domain(domain, generation);
    const prev = d.entries.get(key);
    if (prev) this.remove(d, key, prev);
    d.entries.set(key, entry);
    d.bytes += size;
    this.bytes += size;
    this.lru.set(d.name + SEP + key, d);
    for (const [k, e] of d.entries) {
      if (d.bytes <= capBytes) break;
      this.remove(d, k, e);
    }
    for (const [lruKey, owner] of this.lru) {
      if (this.bytes <= this.maxBytes) break;
      const k = lruKey.slice(owner.name.length + SEP.length);
      this.remove(owner, k, owner.entries.get(k)!);
      this.evicted++;
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
        this.remove(d, k, e);
        dropped++;
      }
    }
    return dropped;
  }

  /** Drops a domain's whole cache (domain deleted). */
  drop(domain: string): void {
    const d = this.domains.get(domain);
    if (!d) return;
    this.clear(d);
    this.domains.delete(domain);
  }

  stats(domain: string): { entries: number; bytes: number } {
    const d = this.domains.get(domain);
    return { entries: d?.entries.size ?? 0, bytes: d?.bytes ?? 0 };
  }
}
