// Router settings shared by the API and its 404 hints, and the hints themselves: `GET /domains` is not found, but
// `GET /domains/` is (trailing slashes are significant, spec Global conventions §3), so the 404 says so; and
// `PATCH /domains/` names a path that exists with other methods, so it is 405 with `Allow` (RFC 9110 §15.5.6).
import Router from 'find-my-way';
import type { FastifyInstance } from 'fastify';
import { isPublicPath } from '../auth/surfaces.js';

/**
 * Longest path parameter the router matches (find-my-way's default is 100): a domain name may have 253 characters
 * (RFC 1035), and a percent-encoded or Unicode spelling of one is longer. Longer segments are answered by the
 * routes' own validation (404 `domain not found`, 400 for an id) rather than by `route not found`.
 */
export const MAX_PARAM_LENGTH = 1024;

export const ROUTER_OPTIONS = { ignoreTrailingSlash: false, maxParamLength: MAX_PARAM_LENGTH } as const;

/** What the 404 handler and the authentication ask of the routes. */
export interface RouteLookup {
  /** `GET /domains/` for `GET /domains`: the route that differs only by its trailing slash, if there is one. */
  trailingSlashHint(method: string, url: string): string | undefined;
  /** The methods some route answers on this path (an empty list when no route matches it by any method). */
  allowedMethods(url: string): string[];
  /** Every route of this path is served without a key (GET /healthz): its 405 needs no key either. */
  isPublicResource(url: string): boolean;
}

/** A route served without a key: `config: { public: true }`, or a path surfaces.ts names public. */
function isPublicRoute(method: string, url: string, config: unknown): boolean {
  return (config as { public?: boolean } | undefined)?.public === true || isPublicPath(method, url);
}

/**
 * Mirrors every route the app registers from now on (each with whether it is public); returns the lookups. Create
 * it before the routes are registered.
 */
export function trackRoutes(app: FastifyInstance): RouteLookup {
  const mirror = Router(ROUTER_OPTIONS);
  const methods = new Set<Router.HTTPMethod>();
  const noop = () => undefined;
  app.addHook('onRoute', (route) => {
    for (const method of [route.method].flat().map((m) => m.toUpperCase() as Router.HTTPMethod)) {
      methods.add(method);
      // A route registered twice (Fastify adds HEAD for GET) is already in the mirror.
      if (!mirror.hasRoute(method, route.url))
        mirror.on(method, route.url, noop, { public: isPublicRoute(method, route.url, route.config) });
    }
  });
  const pathOf = (url: string) => url.split(/[?#]/, 1)[0] ?? '/';
  // The routes written for a path are those with the fewest parameters: `/records/export` also matches
  // `/records/{id}` by the router's rules alone, and `/domains/` matches `/domains/{domain}` with an empty name;
  // both are answered by the route's own checks, but neither is a method of this resource.
  const resource = (url: string) => {
    const path = pathOf(url);
    const matches = [...methods].flatMap((method) => {
      const found = mirror.find(method, path);
      if (found === null || Object.values(found.params).some((value) => value === '')) return [];
      const isPublic = (found.store as { public?: boolean } | null)?.public === true;
      return [{ method, params: Object.keys(found.params).length, isPublic }];
    });
    const fewest = Math.min(...matches.map((m) => m.params));
    return matches.filter((m) => m.params === fewest).sort((a, b) => a.method.localeCompare(b.method));
  };
  return {
    trailingSlashHint(method, url) {
      const path = pathOf(url);
      const other = path.endsWith('/') ? path.slice(0, -1) : `${path}/`;
      if (other === '' || mirror.find(method as Router.HTTPMethod, other) === null) return undefined;
      return `${method} ${other}`;
    },
    allowedMethods: (url) => resource(url).map((m) => m.method),
    isPublicResource(url) {
      const routes = resource(url);
      return routes.length > 0 && routes.every((m) => m.isPublic);
    },
  };
}
