// SSO (spec "What the service does", SSO; Authentication §8): the OpenID Connect provider mounted at /sso. Each
// endpoint authenticates with its own credential (client secret or PKCE at the token endpoint, the access token at
// userinfo, the browser session at the interaction and connected-apps endpoints); API keys are refused with 403.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { ApiError } from '../../errors.js';
import { KEY_PREFIX } from '../../auth/api-keys.js';
import { presentedKey } from '../../auth/authenticate.js';
import { createSso, SSO_PREFIX, type Sso } from './provider.js';
import { interactionRoutes } from './interaction.js';
import { appsRoutes } from './apps-routes.js';
import { edgeSessionRoutes } from './edge-session.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** The SSO provider of this process (key rotation from the admin command line runs through it). */
    sso: Sso;
  }
}

export const SSO_REFUSES_KEYS = 'SSO endpoints do not accept API keys';
const publicRoute = { public: true };
/**
 * Hidden from the OpenAPI document, like the panel's sign-in: they take no API key, and the discovery document
 * describes the provider's endpoints (their OAuth grammar is beyond what the API fuzzer can state).
 */
const noKey = { tags: ['sso'], security: [] as never[], hide: true };

/** 403 for any API key, in either header, on every SSO endpoint (spec Authentication §8). */
export async function refuseApiKeys(request: FastifyRequest): Promise<void> {
  const key = presentedKey(request.headers);
  const xKey = request.headers['x-api-key'];
  if ((typeof key === 'string' && key.startsWith(KEY_PREFIX)) || xKey !== undefined)
    throw new ApiError('CP_ERR_DENIED_SURFACE', SSO_REFUSES_KEYS);
}

/** The provider's endpoints, each a route of its own (documented, exact 404s), handed to oidc-provider unparsed. */
const PROVIDER_ROUTES: { method: 'GET' | 'POST'; url: string; summary: string; description: string }[] = [
  {
    method: 'GET',
    url: '/.well-known/openid-configuration',
    summary: 'SSO discovery document',
    description: 'OpenID Connect Discovery 1.0: the issuer, its endpoints and what it supports.',
  },
  {
    method: 'GET',
    url: '/jwks',
    summary: 'SSO signing keys',
    description:
      'The JWKS: the key that signs ID tokens now, and a rotated-out key until the last token it signed has expired.',
  },
  {
    method: 'GET',
    url: '/auth',
    summary: 'SSO authorization request',
    description:
      'Authorization code flow only (`response_type=code`), PKCE with S256 required, the redirect URI exactly as ' +
      'registered. Redirects the browser to the interaction (sign-in and consent).',
  },
  { method: 'POST', url: '/auth', summary: 'SSO authorization request (form post)', description: 'As GET /sso/auth.' },
  {
    method: 'GET',
    url: '/auth/:uid',
    summary: 'SSO authorization request, resumed after the interaction',
    description: 'Where an approved or denied interaction returns the browser; redirects to the client.',
  },
  {
    method: 'POST',
    url: '/token',
    summary: 'SSO code exchange or token refresh',
    description:
      'grant_type authorization_code (with code_verifier) or refresh_token. The client authenticates with its ' +
      'secret (HTTP Basic) or, a public client, with its client_id alone. A refresh token is rotated on each use; ' +
      'presenting a used one revokes the whole grant.',
  },
  {
    method: 'POST',
    url: '/token/revocation',
    summary: 'SSO revoke a refresh or access token',
    description: 'RFC 7009. Revoking a refresh token revokes its grant (every token issued through it).',
  },
  {
    method: 'GET',
    url: '/me',
    summary: "SSO signed-in user's claims",
    description: 'OpenID Connect userinfo; the credential is the access token (`Authorization: Bearer`).',
  },
  { method: 'POST', url: '/me', summary: "SSO signed-in user's claims (POST)", description: 'As GET /sso/me.' },
];

/** The request target relative to the provider's mount, from an origin-form or absolute-form target. */
function mountedTarget(url: string): string {
  const target = url.startsWith('/') ? url : url.replace(/^https?:\/\/[^/?#]*/i, '') || '/';
  return target.slice(SSO_PREFIX.length) || '/';
}

async function ssoRoutes(app: FastifyInstance) {
  const sso = createSso({
    db: app.db,
    publicBaseUrl: app.config.publicBaseUrl,
    dataDir: app.config.dataDir,
    certificateKey: app.config.certificateKey,
    sso: app.config.sso,
  });
  app.decorate('sso', sso);
  const issuer = new URL(sso.issuer);
  const callbacks = new WeakMap<object, (req: unknown, res: unknown) => Promise<void>>();

  // The provider reads its own bodies (form or JSON, at most 56 KiB): in this scope nothing parses them first.
  await app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', (_request, _payload, done) => done(null));
    scope.addHook('onRequest', refuseApiKeys);
    for (const r of PROVIDER_ROUTES) {
      scope.route({
        method: r.method,
        url: `${SSO_PREFIX}${r.url}`,
        config: publicRoute,
        schema: {
          ...noKey,
          summary: r.summary,
          description: r.description,
        },
        handler: async (request, reply) => {
          const provider = await sso.provider();
          let callback = callbacks.get(provider);
          if (!callback) {
            callback = provider.callback() as unknown as (req: unknown, res: unknown) => Promise<void>;
            callbacks.set(provider, callback);
          }
          const raw = request.raw as typeof request.raw & { originalUrl?: string };
          const target = mountedTarget(raw.url ?? '/');
          raw.originalUrl = `${SSO_PREFIX}${target}`;
          raw.url = target;
          // URLs the provider writes (discovery, redirects) come from PUBLIC_BASE_URL, not from the request.
          raw.headers.host = issuer.host;
          raw.headers['x-forwarded-proto'] = issuer.protocol.slice(0, -1);
          delete raw.headers['x-forwarded-host'];
          delete raw.headers['x-forwarded-port'];
          reply.hijack();
          await callback(raw, reply.raw);
        },
      });
    }
  });
  // Sign-in and consent of the signed-in browser, then its connected apps (JSON bodies, parsed as everywhere).
  await app.register(async (scope) => interactionRoutes(scope, sso));
  await app.register(appsRoutes);
  // The edge's sso requirement: a signed-in browser gets a token for a protected hostname.
  await app.register(async (scope) => edgeSessionRoutes(scope, sso));
}

// Not encapsulated: `app.sso` is the admin command line's too; the provider's routes keep their own scope.
export default fp(ssoRoutes, { name: 'sso', dependencies: ['database'] });
export { SSO_PREFIX };
