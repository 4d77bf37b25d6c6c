// Router settings shared by the API and its 404 hints, and the hint itself: `GET /domains` is not found, but
// `GET /domains/` is (trailing slashes are significant, spec Global conventions §3), so the 404 says so.
import Router from 'find-my-way';
import type { FastifyInstance } from 'fastify';

/**
 * Longest path parameter the router matches (find-my-way's default is 100): a domain name may have 253 characters
 * (RFC 1035), and a percent-encoded or Unicode spelling of one is longer. Longer segments are answered by the
 * routes' own validation (404 `domain not found`, 400 for an id) rather than by `route not found`.
 */
export const MAX_PARAM_LENGTH = 1024;

export const ROUTER_OPTIONS = { ignoreTrailingSlash: false, maxParamLength: MAX_PARAM_LENGTH } as const;

/** Mirrors every route the app registers from now on; returns the lookup the 404 handler asks for a hint. */
export function trackRoutesForHints(app: FastifyInstance): (method: string, url: string) => string | undefined {
  const mirror = Router(ROUTER_OPTIONS);
  const noop = () => undefined;
  app.addHook('onRoute', (route) => {
    for (const method of [route.method].flat().map((m) => m.toUpperCase() as Router.HTTPMethod)) {
      // A route registered twice (Fastify adds HEAD for GET) is already in the mirror.
      if (!mirror.hasRoute(method, route.url)) mirror.on(method, route.url, noop);
    }
  });
  return (method, url) => {
    const path = url.split(/[?#]/, 1)[0] ?? '/';
    const other = path.endsWith('/') ? path.slice(0, -1) : `${path}/`;
    if (other === '' || mirror.find(method as Router.HTTPMethod, other) === null) return undefined;
    return `${method} ${other}`;
  };
}
