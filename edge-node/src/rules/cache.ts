// cache: whether and how long matching responses are kept at the edge and in browsers, and the cache key's query part.
import type { RuleBody } from '@platform/shared/match';

export interface CacheAction {
  bypass: boolean;
  edgeTtlSec: number;
  browserTtlSec: number;
  respectOrigin: boolean;
  staleOnError: boolean;
  query: 'include' | 'ignore' | 'sort' | 'only';
  queryKeys: Set<string>;
}

export function compileCache(f: RuleBody): CacheAction {
  return {
    bypass: f.action === 'bypass',
    edgeTtlSec: Number(f.edge_ttl ?? 0),
    browserTtlSec: Number(f.browser_ttl ?? 0),
    respectOrigin: f.respect_origin !== false,
    staleOnError: f.stale_on_error !== false,
    query: (f.query as CacheAction['query']) ?? 'include',
    queryKeys: new Set((f.query_keys as string[]) ?? []),
  };
}

/** The query part of the cache key. */
export function cacheKeyQuery(a: CacheAction, query: string): string {
  if (query === '' || a.query === 'ignore') return '';
  if (a.query === 'include') return query;
  let parts = query.split('&');
  if (a.query === 'only') parts = parts.filter((p) => a.queryKeys.has(p.split('=')[0]));
  return parts.sort().join('&');
}

/**
 * Seconds a response may be kept at the edge: the rule's edge TTL, else the origin's s-maxage/max-age.
 * 0 means not storable (no-store/private/Set-Cookie under respect_origin, or nothing says how long).
 */
export function edgeTtl(a: CacheAction, status: number, headers: Record<string, string | string[]>): number {
  if (status !== 200 && status !== 301 && status !== 404) return 0;
  const cc = String(headers['cache-control'] ?? '').toLowerCase();
  if (a.respectOrigin && (/(^|,)\s*(no-store|private|no-cache)\b/.test(cc) || headers['set-cookie'] !== undefined))
    return 0;
  if (a.edgeTtlSec > 0) return a.edgeTtlSec;
  const m = /s-maxage=(\d+)/.exec(cc) ?? /max-age=(\d+)/.exec(cc);
  return m ? Number(m[1]) : 0;
}
