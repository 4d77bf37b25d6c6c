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
 * 0 means not storable:
 * - a status other than 200, 301, 404;
 * - a `Set-Cookie` header, always (respect_origin false included: the cache rule has no field that allows it, see
 *   docs/decisions.md), since the cookie would be handed to every client served from the entry;
 * - a request that carried `Authorization` (`authorized`), unless the origin marks the answer shareable with `public`,
 *   `s-maxage` or `must-revalidate` (RFC 9111 §3.5), whatever respect_origin says;
 * - under respect_origin, `no-store`, `private` or `no-cache`;
 * - nothing says how long.
 */
export function edgeTtl(
  a: CacheAction,
  status: number,
  headers: Record<string, string | string[]>,
  authorized = false,
): number {
  if (status !== 200 && status !== 301 && status !== 404) return 0;
  if (headers['set-cookie'] !== undefined) return 0;
  const cc = String(headers['cache-control'] ?? '').toLowerCase();
  if (authorized && !sharedWithAuthorization(cc)) return 0;
  if (a.respectOrigin && /(^|,)\s*(no-store|private|no-cache)\b/.test(cc)) return 0;
  if (a.edgeTtlSec > 0) return a.edgeTtlSec;
  const m = /s-maxage=(\d+)/.exec(cc) ?? /max-age=(\d+)/.exec(cc);
  return m ? Number(m[1]) : 0;
}

/**
 * Whether a response (its Cache-Control, lower case) may be stored for, and served to, requests that carry
 * Authorization: `public`, `s-maxage` or `must-revalidate` (RFC 9111 §3.5).
 */
export function sharedWithAuthorization(cacheControl: string): boolean {
  return /(^|,)\s*(public|must-revalidate|s-maxage\s*=)/.test(cacheControl);
}
