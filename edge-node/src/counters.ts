// Requests counted per (status, cache result) in one preallocated array: the hot path does one increment, nothing else.
import type { CacheStatus } from './context.js';

/** Cache results in label order; '' (no cache rule looked at the request) is reported as NONE. */
export const CACHE_RESULTS: readonly CacheStatus[] = ['', 'HIT', 'MISS', 'STALE', 'BYPASS', 'EXPIRED', 'DYNAMIC'];
/** CACHE_RESULTS.indexOf(cache) by a switch: no keyed load by a string (a megamorphic lookup per request). */
function cacheIndex(cache: CacheStatus): number {
  switch (cache) {
    case '':
      return 0;
    case 'HIT':
      return 1;
    case 'MISS':
      return 2;
    case 'STALE':
      return 3;
    case 'BYPASS':
      return 4;
    case 'EXPIRED':
      return 5;
    case 'DYNAMIC':
      return 6;
  }
}
/** Statuses 0–599 (0: the client went away before a status was chosen); anything else is counted as 0. */
const STATUSES = 600;

export class RequestCounters {
  readonly counts = new Float64Array(STATUSES * CACHE_RESULTS.length);

  count(status: number, cache: CacheStatus): void {
    const s = status > 0 && status < STATUSES ? status : 0;
    this.counts[s * CACHE_RESULTS.length + cacheIndex(cache)]!++;
  }

  /** Non-zero cells as [index, count] (what a cluster worker sends its primary). */
  nonZero(): Array<[number, number]> {
    const out: Array<[number, number]> = [];
    for (let i = 0; i < this.counts.length; i++) if (this.counts[i]! > 0) out.push([i, this.counts[i]!]);
    return out;
  }

  /** Labelled samples for prom-client: one per non-zero (status, cache) cell. */
  samples(): Array<[{ status: string; cache: string }, number]> {
    return this.nonZero().map(([i, n]) => {
      const cache = CACHE_RESULTS[i % CACHE_RESULTS.length]!;
      return [{ status: String(Math.floor(i / CACHE_RESULTS.length)), cache: cache || 'NONE' }, n];
    });
  }
}

/** Sums the cells workers sent into `into` (cleared first). */
export function sumRequestCounters(parts: Iterable<Array<[number, number]>>, into: RequestCounters): RequestCounters {
  into.counts.fill(0);
  for (const cells of parts) for (const [i, n] of cells) into.counts[i] = (into.counts[i] ?? 0) + n;
  return into;
}
