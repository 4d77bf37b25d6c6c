// The edge's `sso` requirement (issue 19, a basic_auth rule's `sso` block), control-plane side: GET /sso/edge/session
// mints, for the signed-in browser (areas/login's session), a short-lived RS256 token signed with the SSO signing key
// and sends the browser back to the hostname it came from, whose edge verifies the token against /sso/jwks and sets
// its own session cookie (edge-node/src/rules/sso.ts). A token is minted only for a hostname of a platform domain
// with an enabled basic_auth rule that lists the signed-in account: the route is no open redirect, and a domain cannot
// learn who visits it unless it already names that account.
import { createPrivateKey, randomBytes, type KeyObject } from 'node:crypto';
import { isIP } from 'node:net';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Type, type Static } from '@sinclair/typebox';
import { SignJWT } from 'jose';
import { sql } from 'drizzle-orm';
import { EDGE_SSO_PATH, EDGE_SSO_STATE, EDGE_SSO_TOKEN_TYPE, MAX_SSO_RETURN_TO } from '@platform/shared/match';
import { ApiError, MESSAGES } from '../../errors.js';
import { ErrorBody } from '../../openapi/schemas.js';
import { rowsOf } from '../../db/migrate.js';
import { enclosingNames } from '../domains/domain-name.js';
import { resolveBrowserSession } from '../login/session.js';
import { SIGNING_ALG } from './keys.js';
import type { Sso } from './provider.js';
import { refuseApiKeys } from './routes.js';
import { escapeHtml } from './interaction.js';
import { SSO_PREFIX } from './provider.js';

export const EDGE_SESSION_PATH = `${SSO_PREFIX}/edge/session`;
/**
 * Seconds an edge session token is good for: it only carries the sign-in across one redirect (and never longer than
 * an ID token, so a rotated-out key stays published while its edge tokens live).
 */
export const EDGE_TOKEN_SECONDS = 120;

const Query = Type.Object({
  return_to: Type.String({
    minLength: 1,
    maxLength: MAX_SSO_RETURN_TO,
    description:
      'The absolute http(s) URL the browser asked for at the edge; its hostname must be a proxied hostname of a ' +
      'platform domain with a basic_auth rule whose `sso` block lists the signed-in account',
    'x-expected': 'an absolute http(s) URL of a hostname protected by an sso rule',
  }),
  state: Type.String({
    pattern: EDGE_SSO_STATE.source,
    maxLength: 64,
    description: "The edge's sign-in state: carried in the token (`nonce`), checked against the browser's cookie",
  }),
});

/**
 * The URL to send the browser back to and its host name (no trailing dot): http(s), no credentials, a host name (no IP
 * address) ≤ 253 characters.
 */
function parseReturnTo(value: string): { url: URL; host: string } {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ApiError('CP_ERR_INVALID_INPUT', 'return_to must be an absolute http(s) URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new ApiError('CP_ERR_INVALID_INPUT', 'return_to must be an absolute http(s) URL');
  if (url.username !== '' || url.password !== '')
    throw new ApiError('CP_ERR_INVALID_INPUT', 'return_to must not carry credentials');
  const host = url.hostname.replace(/\.$/, '');
  if (host === '' || host.length > 253 || isIP(host.replace(/^\[|\]$/g, '')) !== 0 || !host.includes('.'))
    throw new ApiError('CP_ERR_INVALID_INPUT', 'return_to must name a hostname of a domain on this platform');
  return { url, host };
}

const notOnPlatform = () =>
  new ApiError('CP_ERR_INVALID_INPUT', 'return_to must name a hostname of a domain on this platform');

/** Whether some domain holding `host` has an enabled basic_auth rule whose sso.emails lists `email`. */
async function listedAt(request: FastifyRequest, domainIds: number[], email: string): Promise<boolean> {
  const rows = rowsOf(
    await request.server.db.execute(sql`
      SELECT 1 FROM rules
      WHERE domain_id IN (${sql.join(
        domainIds.map((id) => sql`${id}`),
        sql`, `,
      )}) AND type = 'basic_auth' AND enabled
        AND fields->'sso'->'emails' @> ${JSON.stringify([email])}::jsonb
      LIMIT 1`),
  );
  return rows.length > 0;
}

/** Not signed in: a page asking to sign in to the panel in this browser, then to come back here (JSON: 401). */
function signInPage(request: FastifyRequest, reply: FastifyReply, host: string) {
  if (/application\/json/.test(request.headers.accept ?? ''))
    throw new ApiError('CP_ERR_NOT_SIGNED_IN', 'not signed in');
  const again = escapeHtml(request.url);
  return reply
    .code(401)
    .type('text/html; charset=utf-8')
    .send(
      `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>Sign in to continue</title></head><body><main>
<p><strong>${escapeHtml(host)}</strong> lets through only signed-in accounts.</p>
<p>Sign in to the <a href="/panel/">panel</a> in this browser, then <a href="${again}">continue</a>.</p>
</main></body></html>`,
    );
}

export async function edgeSessionRoutes(scope: FastifyInstance, sso: Sso) {
  const keys = new Map<string, KeyObject>();
  scope.addHook('onRequest', refuseApiKeys);
  scope.addHook('onSend', async (_request, reply) => {
    reply.header('cache-control', 'no-store');
    // The token travels in the Location: no page of ours hands it on in a Referer.
    reply.header('referrer-policy', 'no-referrer');
    reply.header('x-frame-options', 'DENY');
    reply.header('content-security-policy', "default-src 'none'; frame-ancestors 'none'; base-uri 'none'");
  });

  scope.get(
    EDGE_SESSION_PATH,
    {
      config: { public: true },
      schema: {
        // A browser surface like the other SSO pages (routes.ts): no API key, out of the OpenAPI document.
        tags: ['sso'],
        security: [],
        hide: true,
        summary: 'SSO sign a browser in at an edge hostname',
        description:
          "Where the edge sends a browser that has no edge session for a hostname protected by a basic_auth rule's " +
          '`sso` block. For a browser signed in to the panel as an account the rule lists, redirects (302) to ' +
          `\`<hostname>${EDGE_SSO_PATH}?token=…&return_to=<path>\` with a token valid ${EDGE_TOKEN_SECONDS} s, ` +
          'signed with the SSO signing key (`/sso/jwks`), its audience the hostname. Not signed in: 401 (a page ' +
          'asking to sign in, or JSON for `Accept: application/json`); another account: 403. API keys: 403.',
        querystring: Query,
        response: {
          302: Type.Null({ description: 'To the edge hostname, carrying the token' }),
          400: ErrorBody,
          401: ErrorBody,
          403: ErrorBody,
        },
      },
    },
    async (request, reply) => {
      const { return_to: returnTo, state } = request.query as Static<typeof Query>;
      const { url, host } = parseReturnTo(returnTo);
      const domains = rowsOf<{ id: number }>(
        await scope.db.execute(sql`
          SELECT id FROM domains WHERE name IN (${sql.join(
            enclosingNames(host).map((n) => sql`${n}`),
            sql`, `,
          )})`),
      );
      if (domains.length === 0) throw notOnPlatform();
      const session = await resolveBrowserSession(request);
      if (!session) return signInPage(request, reply, host);
      if (!session.active) throw new ApiError('CP_ERR_ACCOUNT_INACTIVE', MESSAGES.inactive);
      if (
        !(await listedAt(
          request,
          domains.map((d) => d.id),
          session.email,
        ))
      )
        throw new ApiError('CP_ERR_SSO_NOT_ALLOWED', `${session.email} is not allowed at ${host}`);
      const key = await sso.signingKey();
      let privateKey = keys.get(key.kid);
      if (!privateKey) {
        privateKey = createPrivateKey({ key: key.privateJwk, format: 'jwk' });
        keys.clear();
        keys.set(key.kid, privateKey);
      }
      const token = await new SignJWT({ email: session.email, nonce: state })
        .setProtectedHeader({ alg: SIGNING_ALG, kid: key.kid, typ: EDGE_SSO_TOKEN_TYPE })
        .setIssuer(sso.issuer)
        .setAudience(host)
        .setSubject(String(session.userId))
        .setIssuedAt()
        .setExpirationTime(`${Math.min(EDGE_TOKEN_SECONDS, scope.config.sso.idTokenSeconds)}s`)
        .setJti(randomBytes(16).toString('base64url'))
        .sign(privateKey);
      const back = `${url.pathname}${url.search}`;
      const to = `${url.protocol}//${url.host}${EDGE_SSO_PATH}?token=${token}&return_to=${encodeURIComponent(back)}`;
      return reply.code(302).header('location', to).send();
    },
  );
}
