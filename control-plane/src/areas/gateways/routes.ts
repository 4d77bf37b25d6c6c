// Gateway routes (spec "Further operations", Gateways; paths chosen Cloudflare-like, docs/decisions.md "Gateways"):
// GET /domains/{domain}/gateways/, GET /gateways/terms, POST /gateways/terms/accept,
// POST|PUT|DELETE /domains/{domain}/gateways/{gateway}, GET /gateways/{gateway}/icon.
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { KEY_CHECKED_BY_WRITE, loadDomain, writeAs } from '../../auth/domain-access.js';
import { errorResponses } from '../../openapi/schemas.js';
import { DomainParams } from '../domains/schemas.js';
import { Gateway, GatewayList, GatewayOn, GatewayParams, GatewayRename, GatewayTerms, IconParams } from './schemas.js';
import { acceptTerms, gatewayIcon, listGateways, renameGateway, switchOff, switchOn, termsStatus } from './service.js';

export default async function gatewayRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['gateways'];
  const one = '/domains/:domain/gateways/:gateway';

  app.get(
    '/domains/:domain/gateways/',
    {
      schema: {
        summary: 'The gateway catalogue with the state of each on this domain',
        tags,
        params: DomainParams,
        response: { 200: GatewayList, ...errorResponses(404) },
      },
    },
    async (request) => {
      const { domain } = await loadDomain(request, request.params.domain, 'domain.view');
      return { gateways: await listGateways(app.db, domain) };
    },
  );

  app.get(
    '/gateways/terms',
    {
      schema: {
        summary: "Whether the calling account accepted the gateways' terms of use",
        tags,
        response: { 200: GatewayTerms, ...errorResponses() },
      },
    },
    async (request) => termsStatus(app.db, request.principal.userId),
  );

  app.post(
    '/gateways/terms/accept',
    {
      schema: {
        summary: "Accept the current version of the gateways' terms of use (for the calling account)",
        tags,
        response: { 200: GatewayTerms, ...errorResponses(403) },
      },
    },
    async (request) => acceptTerms(app.db, request.principal.userId),
  );

  app.post(
    one,
    {
      config: KEY_CHECKED_BY_WRITE,
      // The body is optional: none (or an empty one) is `{}`.
      preValidation: async (request) => {
        request.body ??= {};
      },
      schema: {
        summary: 'Switch a gateway on: its records are created in the zone',
        description:
          "Needs domain.settings, the plan's gateways_enabled, the caller's acceptance of the current terms of use " +
          '(403 CP_ERR_TERMS_NOT_ACCEPTED) and a domain neither disabled nor banned (409). A gateway already on is ' +
          '409. Its records are checked as creates: an identical record already in the zone is left alone (and not ' +
          'removed by switching off); a conflict (CNAME exclusivity, another SPF policy at the apex) is 400 and ' +
          'stores nothing; the plan record limit is 403. The body is optional.',
        tags,
        params: GatewayParams,
        body: GatewayOn,
        response: { 200: Gateway, ...errorResponses(400, 403, 404, 409, 415) },
      },
    },
    async (request) =>
      switchOn(
        app,
        writeAs(request, request.params.domain, 'domain.settings'),
        request.principal.userId,
        request.params.gateway,
        request.body.name,
      ),
  );

  app.put(
    one,
    {
      config: KEY_CHECKED_BY_WRITE,
      schema: {
        summary: 'Rename a gateway that is on (its display name; the records stay)',
        tags,
        params: GatewayParams,
        body: GatewayRename,
        response: { 200: Gateway, ...errorResponses(400, 403, 404, 415) },
      },
    },
    async (request) =>
      renameGateway(
        app,
        writeAs(request, request.params.domain, 'domain.settings'),
        request.params.gateway,
        request.body.name,
      ),
  );

  app.delete(
    one,
    {
      config: KEY_CHECKED_BY_WRITE,
      schema: {
        summary: 'Switch a gateway off: the records it created are removed',
        tags,
        params: GatewayParams,
        response: { 200: Gateway, ...errorResponses(403, 404) },
      },
    },
    async (request) =>
      switchOff(app, writeAs(request, request.params.domain, 'domain.settings'), request.params.gateway),
  );

  app.get(
    '/gateways/:gateway/icon',
    {
      schema: {
        summary: "A gateway's icon (SVG)",
        tags,
        params: IconParams,
        response: {
          200: {
            description: 'The icon, at most a few hundred bytes, defined in the catalogue',
            content: { 'image/svg+xml': { schema: Type.String() } },
          },
          ...errorResponses(404),
        },
      },
    },
    async (request, reply) =>
      reply
        .type('image/svg+xml')
        .header('x-content-type-options', 'nosniff')
        // An SVG opened on its own must not run anything, nor load anything.
        .header('content-security-policy', "default-src 'none'; style-src 'unsafe-inline'; sandbox")
        .header('cache-control', 'public, max-age=86400')
        .send(gatewayIcon(request.params.gateway)),
  );
}
