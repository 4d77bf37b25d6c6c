// Routes of the remaining domain operations (spec "Further operations", Domains; paths chosen as Cloudflare names
// them, docs/decisions.md "Domain operations of issue 16"): GET checks, GET|PUT|DELETE analytics-tag,
// GET|PUT custom-pages, GET origin-protocols.
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { KEY_CHECKED_BY_WRITE, loadDomain, writeAs } from '../../auth/domain-access.js';
import { errorResponses } from '../../openapi/schemas.js';
import { DomainParams } from '../domains/schemas.js';
import {
  AnalyticsTag,
  AnalyticsTagUpdate,
  CustomPages,
  CustomPagesUpdate,
  ManualChecks,
  OriginProtocols,
  type CustomPagesUpdateT,
} from './schemas.js';
import { originProtocols } from './origins.js';
import {
  deleteAnalyticsTag,
  manualChecks,
  putAnalyticsTag,
  putCustomPages,
  readAnalyticsTag,
  readCustomPages,
} from './service.js';

export default async function domainOpsRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['domains'];
  const params = DomainParams;

  app.get(
    '/domains/:domain/checks',
    {
      schema: {
        summary: 'The last result of each manual check (check-ns, verify and delegation check, acme-dns test)',
        tags,
        params,
        response: { 200: ManualChecks, ...errorResponses(404) },
      },
    },
    async (request) => {
      const { domain } = await loadDomain(request, request.params.domain, 'domain.view');
      return manualChecks(app, domain.id);
    },
  );

  const tagPath = '/domains/:domain/analytics-tag';
  app.get(
    tagPath,
    {
      schema: {
        summary: "The domain's web analytics site tag",
        description:
          'A stored site tag (as Cloudflare Web Analytics names a site): `enabled` false and nulls when none is set.',
        tags,
        params,
        response: { 200: AnalyticsTag, ...errorResponses(404) },
      },
    },
    async (request) => {
      const { domain } = await loadDomain(request, request.params.domain, 'domain.view');
      return readAnalyticsTag(app.db, domain.id);
    },
  );

  app.put(
    tagPath,
    {
      config: KEY_CHECKED_BY_WRITE,
      schema: {
        summary: 'Create the analytics site tag (kept when it exists; `regenerate` draws a new one)',
        tags,
        params,
        body: AnalyticsTagUpdate,
        response: { 200: AnalyticsTag, ...errorResponses(400, 403, 404, 415) },
      },
    },
    async (request) =>
      putAnalyticsTag(
        app,
        writeAs(request, request.params.domain, 'domain.settings'),
        request.body.regenerate === true,
      ),
  );

  app.delete(
    tagPath,
    {
      config: KEY_CHECKED_BY_WRITE,
      schema: {
        summary: 'Remove the analytics site tag',
        tags,
        params,
        response: { 200: AnalyticsTag, ...errorResponses(403, 404) },
      },
    },
    async (request) => deleteAnalyticsTag(app, writeAs(request, request.params.domain, 'domain.settings')),
  );

  const pagesPath = '/domains/:domain/custom-pages';
  app.get(
    pagesPath,
    {
      schema: {
        summary: "The domain's custom pages (its own HTML for pages the edge makes)",
        tags,
        params,
        response: { 200: CustomPages, ...errorResponses(404) },
      },
    },
    async (request) => {
      const { domain } = await loadDomain(request, request.params.domain, 'domain.view');
      return readCustomPages(app.db, domain.id);
    },
  );

  app.put(
    pagesPath,
    {
      config: KEY_CHECKED_BY_WRITE,
      schema: {
        summary: 'Set or reset custom pages',
        description:
          'Each named kind gets its HTML (at most `max_bytes` UTF-8 bytes, no control characters; a ' +
          '`managed_challenge` page must hold `::CHALLENGE_BOX::` once, the others may hold `::ERROR_BOX::` once) ' +
          'or null for the default page. The edge nodes serve them from the next config entry on.',
        tags,
        params,
        body: CustomPagesUpdate,
        response: { 200: CustomPages, ...errorResponses(400, 403, 404, 413, 415) },
      },
    },
    async (request) =>
      putCustomPages(
        app,
        writeAs(request, request.params.domain, 'domain.settings'),
        request.body as CustomPagesUpdateT,
      ),
  );

  app.get(
    '/domains/:domain/origin-protocols',
    {
      schema: {
        summary: 'Which HTTP versions each origin behind the proxied records speaks',
        description:
          'For every distinct origin (scheme, address, port, SNI) of the proxied records: a TLS handshake offering ' +
          'h2 and http/1.1 (ALPN) and one HEAD / (HTTP/1.1; HTTP/3 from an h3 Alt-Svc advertisement: Node 20 has ' +
          'no QUIC client, so `http3_via` is `alt-svc`). Answers younger than 20 seconds are reused. Origins the ' +
          'platform does not connect to (internal or its own addresses) are reported with the refusal as `error`.',
        tags,
        params,
        response: { 200: OriginProtocols, ...errorResponses(404) },
      },
    },
    async (request) => {
      const { domain } = await loadDomain(request, request.params.domain, 'domain.view');
      return originProtocols(app, domain);
    },
  );
}
