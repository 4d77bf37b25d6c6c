// The edge cache: per-domain LRU maps bounded by the domain's cache_cap_mb, entries kept at most cache_l2_ttl_days,
// dropped whole when the domain's purge generation changes; all domains together bounded by EDGE_CACHE_MAX_BYTES,
// evicting the node's least recently used entry whatever its domain. Keys are built by ./key.ts (scheme, host, path,
// query part, and the variant of a response that varies); the base key of an answer that varies holds a marker naming
// the request headers whose values complete the key, and linking to its variants by their variant part, so a hit on a
// variant builds and hashes no new string.
import { hostOffset } from './key.js';

export interface CacheEntry {
  status: number;
  headers: [string, string][];
  body: Buffer;
  storedAt: number;
  /** Fresh until this time (ms); after it the entry is stale (served only on origin errors with stale_on_error). */
  freshUntil: number;
  /** Dropped after this time (storedAt + cache_l2_ttl_days). */
  expiresAt: number;
  /** May be served to a request carrying Authorization (the origin said public, s-maxage or must-revalidate). */
  shared: boolean;
  /**
   * Set on a marker only (no response): the answers under this base key vary on these request headers, and are
   * stored under the base key plus the variant those headers give (`variantSuffix`).
   */
  vary?: readonly string[];
  /** The key it is stored under (set by EdgeCache.set; the node-wide LRU holds entries, not keys). */
  key?: string;
  /** On a marker (set by setVariant): its variants by variant part. */
  variants?: Map<string, CacheEntry>;
  /** On a variant (set by setVariant): its marker and variant part. */
  parent?: CacheEntry;
  suffix?: string;
  /**
   * Requests it answered fresh (counted by served; reported in the inventory). Set to 0 by EdgeCache.set with
   * `pass`, so every stored entry has both before any lookup (no shape change on the request path).
   */
  hits?: number;
  /** The inventory pass that counted it last (../cache/inventory.ts: an entry a hit moves is counted once). */
  pass?: number;
}

const EMPTY = Buffer.alloc(0);

/** The marker stored under a base key whose answers vary on `names`. */
export function varyMarker(names: readonly string[], now: number, expiresAt: number): CacheEntry {
  return { status: 0, headers: [], body: EMPTY, storedAt: now, freshUntil: 0, expiresAt, shared: true, vary: names };
}

function sameNames(a: readonly string[], b: readonly string[]): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
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
  /** The entry last in `entries` (most recently used), when known: touching it again moves nothing. */
  tail: CacheEntry | null = null;
  constructor(
    readonly name: string,
    public generation: number,
  ) {}
}

export class EdgeCache {
  private readonly domains = new Map<string, DomainCache>();
  /**
   * Every entry of every domain in least-recently-used order, → its domain. Keyed by the entry object: a hit moves it
   * without building or hashing a string.
   */
  private readonly lru = new Map<CacheEntry, DomainCache>();
  /** The entry last in `lru`, when known (a hot object hit again and again is moved once). */
  private lruTail: CacheEntry | null = null;
  /** Bytes held across all domains (at most maxBytes). */
  bytes = 0;
  /** Entries dropped to stay within maxBytes (the node-wide cap, not a domain's). */
  evicted = 0;
  hits = 0;
  misses = 0;

  /** A fresh entry answered a request: counted node-wide and on the entry (the inventory reports it). */
  served(entry: CacheEntry): void {
    this.hits++;
    entry.hits!++;
  }
  /** Bumped by every store, removal and refresh: the inventory reporter sends a snapshot only when it moved. */
  version = 0;

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
    this.version++;
    const size = sizeOf(key, e);
    d.entries.delete(key);
    d.bytes -= size;
    this.bytes -= size;
    this.lru.delete(e);
    if (this.lruTail === e) this.lruTail = null;
    if (d.tail === e) d.tail = null;
    const variants = e.parent?.variants;
    if (variants && variants.get(e.suffix!) === e) variants.delete(e.suffix!);
  }

  private clear(d: DomainCache): void {
    this.version++;
    for (const e of d.entries.values()) this.lru.delete(e);
    this.lruTail = null;
    d.tail = null;
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
    this.touch(d, key, e);
    return e;
  }

  /**
   * LRU: moves an entry to the end, in the domain and node-wide; nothing to do where it is last already. (A Map moves
   * an entry by delete and set, and every few moves it rebuilds its table: four such operations per hit were a seventh
   * of a cache hit's time in process, bench/RESULTS.md issue 12.)
   */
  private touch(d: DomainCache, key: string, e: CacheEntry): void {
    if (d.tail !== e) {
      d.entries.delete(key);
      d.entries.set(key, e);
      d.tail = e;
    }
    if (this.lruTail !== e) {
      this.lru.delete(e);
      this.lru.set(e, d);
      this.lruTail = e;
    }
  }

  /**
   * The variant `suffix` of `marker` (just returned by get for the same domain and generation), fresh or stale, or
   * undefined. Looked up through the marker by its variant part (for Accept-Encoding alone, a constant string).
   */
  getVariant(
    domain: string,
    generation: number,
    marker: CacheEntry,
    suffix: string,
    now: number,
  ): CacheEntry | undefined {
    const e = marker.variants?.get(suffix);
    if (!e) return undefined;
    const d = this.domain(domain, generation);
    if (d.entries.get(e.key!) !== e) {
      marker.variants!.delete(suffix);
      return undefined;
    }
    if (now >= e.expiresAt) {
      this.remove(d, e.key!, e);
      return undefined;
    }
    this.touch(d, e.key!, e);
    return e;
  }

  /**
   * Stores the variant `suffix` of an answer varying on `names` under `base + suffix`, and under `base` a marker
   * naming them (the one there is kept when it names the same headers, else replaced).
   */
  setVariant(
    domain: string,
    generation: number,
    base: string,
    names: readonly string[],
    suffix: string,
    entry: CacheEntry,
    capBytes: number,
  ): void {
    const d = this.domain(domain, generation);
    let marker = d.entries.get(base);
    if (!marker?.vary || !sameNames(marker.vary, names)) {
      marker = varyMarker(names, entry.storedAt, entry.expiresAt);
      this.set(domain, generation, base, marker, capBytes);
      if (d.entries.get(base) !== marker) return;
    } else {
      marker.expiresAt = Math.max(marker.expiresAt, entry.expiresAt);
      this.touch(d, base, marker);
    }
    entry.parent = marker;
    entry.suffix = suffix;
    this.set(domain, generation, base + suffix, entry, capBytes);
    if (d.entries.get(base + suffix) === entry) (marker.variants ??= new Map()).set(suffix, entry);
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
    this.version++;
    entry.key = key;
    entry.hits ??= 0;
    entry.pass ??= 0;
    d.entries.set(key, entry);
    d.tail = entry;
    d.bytes += size;
    this.bytes += size;
    this.lru.set(entry, d);
    this.lruTail = entry;
    for (const [k, e] of d.entries) {
      if (d.bytes <= capBytes) break;
      this.remove(d, k, e);
    }
    for (const [e, owner] of this.lru) {
      if (this.bytes <= this.maxBytes) break;
      this.remove(owner, e.key!, e);
      this.evicted++;
    }
  }

  /**
   * Applies the selective purges of a snapshot not applied yet: entries whose key after the scheme (host + path + '?' +
   * query, and any variant) starts with one of a purge's prefixes are dropped, for http and https alike; a refresh
   * (`refresh: true`) marks them stale instead, so the next request for one revalidates it with the origin and
   * replaces it (and an origin failure still serves the old copy where the cache rule has stale_on_error). Returns how
   * many entries were dropped or marked.
   */
  applyPurges(
    domain: string,
    generation: number,
    purges: readonly { id: number; prefixes: string[]; refresh?: boolean }[],
  ): number {
    const d = this.domain(domain, generation);
    let dropped = 0;
    for (const p of purges) {
      if (p.id <= d.lastPurgeId) continue;
      d.lastPurgeId = p.id;
      for (const [k, e] of d.entries) {
        const at = hostOffset(k);
        if (!p.prefixes.some((prefix) => k.startsWith(prefix, at))) continue;
        if (p.refresh) {
          if (e.vary !== undefined || e.freshUntil === 0) continue;
          e.freshUntil = 0;
          this.version++;
        } else this.remove(d, k, e);
        dropped++;
      }
    }
    return dropped;
  }

  /** The object stored under `key` of `domain` (not a vary marker, not expired), without touching the LRU order. */
  peek(domain: string, key: string, now: number): CacheEntry | undefined {
    const e = this.domains.get(domain)?.entries.get(key);
    if (!e || e.vary !== undefined || now >= e.expiresAt) return undefined;
    return e;
  }

  /** The domains holding entries, and their entries (vary markers included), least recently used first. */
  *domainEntries(): IterableIterator<[string, IterableIterator<CacheEntry>]> {
    for (const d of this.domains.values()) if (d.entries.size > 0) yield [d.name, d.entries.values()];
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
