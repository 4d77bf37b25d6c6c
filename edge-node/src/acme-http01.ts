// ACME http-01 at the edge: GET (or HEAD) /.well-known/acme-challenge/<token> on a proxied hostname answers the key
// authorization of an order the platform runs for that hostname, carried in the domain's snapshot
// (acmeHttpChallenges), before any rule or the origin. Only an exact (hostname, token) pair of the domain's own
// snapshot is answered: a token of another hostname or domain, or any other path, goes on like any request (so an
// origin that renews its own certificates by http-01 keeps working).
import type { HttpResponse } from 'uWebSockets.js';
import { ACME_HTTP01_PREFIX, ACME_TOKEN } from '@platform/shared/config';
import type { RequestContext } from './context.js';
import type { CompiledDomain } from './store/snapshot.js';
import type { EdgeState } from './phases.js';
import { respond } from './proxy/respond.js';

/** The key authorization the domain publishes for `host` and the token in `path`, or undefined. */
export function acmeHttp01Answer(domain: CompiledDomain, host: string, path: string): string | undefined {
  const challenges = domain.snapshot.acmeHttpChallenges;
  if (!challenges || challenges.length === 0 || !path.startsWith(ACME_HTTP01_PREFIX)) return undefined;
  const token = path.slice(ACME_HTTP01_PREFIX.length);
  if (!ACME_TOKEN.test(token)) return undefined;
  // At most MAX_ACME_HTTP_CHALLENGES entries (the control plane's bound), looked at only on this path.
  for (const c of challenges) if (c.token === token && c.hostname === host) return c.keyAuthorization;
  return undefined;
}

/** Answers the request when it asks for a published key authorization; true when it did. */
export function answerAcmeHttp01(
  res: HttpResponse,
  ctx: RequestContext,
  domain: CompiledDomain,
  state: Pick<EdgeState, 'log'>,
): boolean {
  if (ctx.method !== 'GET' && ctx.method !== 'HEAD') return false;
  const keyAuthorization = acmeHttp01Answer(domain, ctx.host, ctx.path);
  if (keyAuthorization === undefined) return false;
  respond(
    res,
    ctx,
    200,
    [
      ['content-type', 'text/plain'],
      ['cache-control', 'no-store'],
    ],
    keyAuthorization,
    null,
  );
  state.log(ctx);
  return true;
}
