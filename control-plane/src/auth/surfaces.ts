// Which paths API keys may never reach (spec Authentication §6), and the one write a read-only key may make (§5).

const DENIED_PREFIXES = ['/users', '/auth', '/billing', '/admin'];
const DENIED_EXACT_POST = new Set([
  '/wallet/topup',
  '/subscriptions/purchase',
  '/subscriptions/switch',
  '/subscriptions/auto-renew',
]);
const DENIED_DOMAIN_POST = /^\/domains\/[^/]+\/subscriptions\/(?:purchase|switch|auto-renew)\/?$/;

/**
 * The path the router routes, percent-decoded, so that no spelling of a request target reaches a route while slipping
 * past the checks. Mirrors find-my-way: an absolute-form target (`GET http://host/users/me`, RFC 9112 §3.2.2) is
 * routed by its path, and the path ends at the first `?` or `#`.
 */
export function requestPath(url: string): string {
  let target = url;
  if (target.charCodeAt(0) !== 47 /* '/' */) {
    const absolute = /^https?:\/\/[^/?#]*/i.exec(target);
    if (absolute) target = target.slice(absolute[0].length) || '/';
    if (target.charCodeAt(0) === 63 /* '?' */) target = `/${target}`;
  }
  const end = target.search(/[?#]/);
  const path = end === -1 ? target : target.slice(0, end);
  try {
    return decodeURI(path);
  } catch {
    return path;
  }
}

export function isDeniedSurface(method: string, path: string): boolean {
  const p = path.toLowerCase();
  if (DENIED_PREFIXES.some((prefix) => p === prefix || p.startsWith(`${prefix}/`))) return true;
  if (method !== 'POST') return false;
  return DENIED_EXACT_POST.has(p.replace(/\/$/, '')) || DENIED_DOMAIN_POST.test(p);
}

export function isInternalPath(path: string): boolean {
  return path === '/internal' || path.startsWith('/internal/');
}

/** The API reference page (src/openapi/docs.ts) and its assets. */
export const DOCS_PATH = '/docs';

function isDocsPath(path: string): boolean {
  return path === DOCS_PATH || path.startsWith(`${DOCS_PATH}/`);
}

/** Paths served without any credential: the interface description and its reference page (/docs and its assets). */
export function isPublicPath(method: string, path: string): boolean {
  return (method === 'GET' || method === 'HEAD') && (path === '/openapi.json' || isDocsPath(path));
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

export function readOnlyMayCall(method: string, path: string): boolean {
  return SAFE_METHODS.has(method) || (method === 'POST' && path === '/analytics/query');
}
