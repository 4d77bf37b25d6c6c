// Client lookup and connected apps (spec "Further operations", SSO): the signed-in browser's own apps. The credential
// is the browser session (areas/login) with its CSRF token on changes; API keys are refused (403).
import type { FastifyInstance } from 'fastify';
import { Type } from '@sinclair/typebox';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { ApiError } from '../../errors.js';
import { errorResponses } from '../../openapi/schemas.js';
import { requireBrowserSession } from '../login/routes.js';
import { disconnectApp, listConnectedApps, MAX_APP_DOMAINS, MAX_DOMAIN_CHARS, setAppDomains } from './apps.js';
import { findClient, MAX_CLIENT_ID_CHARS } from './clients.js';
import { SSO_PREFIX } from './provider.js';
import { refuseApiKeys } from './routes.js';

const tags = ['sso'];
const browserOnly = { tags, security: [] as never[], hide: true };
const ClientParams = Type.Object({
  clientId: Type.String({ pattern: '^[A-Za-z0-9_-]+$', maxLength: MAX_CLIENT_ID_CHARS }),
});
const ClientInfo = Type.Object(
  {
    client_id: Type.String(),
    name: Type.String(),
    type: Type.String({ description: '`confidential` (has a secret) or `public` (PKCE only)' }),
    redirect_uris: Type.Array(Type.String()),
  },
  { title: 'SsoClient' },
);
const ConnectedApp = Type.Object(
  {
    client_id: Type.String(),
    name: Type.String(),
    scopes: Type.Array(Type.String()),
    domains: Type.Array(Type.String(), { description: 'Domains the app may see (the `domains` claim)' }),
    connected_at: Type.String({ format: 'date-time' }),
  },
  { title: 'SsoConnectedApp' },
);
const DomainsBody = Type.Object(
  {
    domains: Type.Array(Type.String({ minLength: 1, maxLength: MAX_DOMAIN_CHARS }), { maxItems: MAX_APP_DOMAINS }),
  },
  { additionalProperties: false },
);

export async function appsRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  app.addHook('onRequest', refuseApiKeys);
  const config = { public: true };

  app.get(
    `${SSO_PREFIX}/clients/:clientId`,
    {
      config,
      schema: {
        ...browserOnly,
        summary: 'SSO client lookup',
        description: 'The app behind a client_id, for the consent page of a signed-in browser.',
        params: ClientParams,
        response: { 200: ClientInfo, ...errorResponses(401, 404) },
      },
    },
    async (request) => {
      await requireBrowserSession(request);
      const client = await findClient(app.db, request.params.clientId);
      if (!client) throw new ApiError('CP_ERR_NOT_FOUND', 'app not found');
      return {
        client_id: client.clientId,
        name: client.name,
        type: client.secretHash ? 'confidential' : 'public',
        redirect_uris: client.redirectUris,
      };
    },
  );

  app.get(
    `${SSO_PREFIX}/apps`,
    {
      config,
      schema: {
        ...browserOnly,
        summary: 'SSO connected apps',
        description: 'The apps the signed-in user has approved and not disconnected.',
        response: { 200: Type.Array(ConnectedApp), ...errorResponses(401) },
      },
    },
    async (request) => listConnectedApps(app.db, (await requireBrowserSession(request)).userId),
  );

  app.put(
    `${SSO_PREFIX}/apps/:clientId/domains`,
    {
      config,
      schema: {
        ...browserOnly,
        summary: "SSO change an app's domain access",
        description:
          'Replaces the domains the app may see (each one the user sees); the next ID token or userinfo answer ' +
          'carries them in the `domains` claim when the app asked for the `domains` scope.',
        params: ClientParams,
        body: DomainsBody,
        response: { 200: ConnectedApp, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => {
      const session = await requireBrowserSession(request);
      return setAppDomains(app.db, session.userId, request.params.clientId, request.body.domains);
    },
  );

  app.delete(
    `${SSO_PREFIX}/apps/:clientId`,
    {
      config,
      schema: {
        ...browserOnly,
        summary: 'SSO disconnect an app',
        description: 'Revokes every grant of the app for this user with its codes, access and refresh tokens.',
        params: ClientParams,
        response: { 200: Type.Object({ message: Type.String() }), ...errorResponses(401, 403, 404) },
      },
    },
    async (request) => {
      const session = await requireBrowserSession(request);
      await disconnectApp(app.db, session.userId, request.params.clientId);
      return { message: 'app disconnected' };
    },
  );
}
