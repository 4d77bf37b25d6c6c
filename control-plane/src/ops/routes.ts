// GET /, /healthz, /readyz and /metrics: served without a key (config.public: counted against the client address's
// request budget like every public route), documented in the OpenAPI document under the `meta` tag.
import fp from 'fastify-plugin';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { Type } from '@sinclair/typebox';
import { ALIVE_BODY, checkReadiness, scrapeMetrics } from '@platform/shared/ops';
import { ErrorBody } from '../openapi/schemas.js';
import { INTERFACE_VERSION } from '../openapi/index.js';
import type { SyncHub } from '../sync/index.js';
import { controlPlaneRegistry } from './metrics.js';
import { controlPlaneChecks } from './readiness.js';

export interface OpsRoutesOptions {
  /** The sync hub once this process runs one (it starts after the API is built); undefined: no sync check. */
  syncHub?: () => SyncHub | undefined;
}

const CheckResult = Type.Object({ ready: Type.Boolean(), detail: Type.String() });
const ReadinessReport = Type.Object(
  {
    status: Type.Unsafe<'ready' | 'not ready'>({ type: 'string', enum: ['ready', 'not ready'] }),
    failing: Type.Array(Type.String(), { description: 'Names of the checks that are not ready' }),
    checks: Type.Record(Type.String(), CheckResult, {
      description: 'database, temporal, and sync (the hub of this process): each ready or not, with what it saw',
    }),
  },
  { title: 'Readiness' },
);

const publicRoute = { public: true };
const noKey = { tags: ['meta'], security: [] as never[] };

async function opsRoutes(app: FastifyInstance, opts: OpsRoutesOptions) {
  const syncHub = opts.syncHub ?? (() => undefined);
  const registry = controlPlaneRegistry(app, syncHub);
  const checks = controlPlaneChecks(app, opts.syncHub);
  const alive = (reply: FastifyReply) => reply.type('application/json; charset=utf-8').send(ALIVE_BODY);

  app.get(
    '/',
    {
      config: publicRoute,
      schema: {
        ...noKey,
        summary: 'Where to start: links to the API reference, the OpenAPI document and the health endpoints',
        response: {
          200: Type.Object({
            name: Type.String(),
            version: Type.String(),
            docs: Type.String(),
            openapi: Type.String(),
            healthz: Type.String(),
            readyz: Type.String(),
            metrics: Type.String(),
            authentication: Type.String(),
          }),
          429: ErrorBody,
        },
      },
    },
    async () => ({
      name: 'Edge, DNS and Certificate Management API',
      version: INTERFACE_VERSION,
      docs: '/docs',
      openapi: '/openapi.json',
      healthz: '/healthz',
      readyz: '/readyz',
      metrics: '/metrics',
      authentication:
        'Every other route takes an API key: Authorization: Bearer <key> or X-Api-Key: <key>. ' +
        'Make one with: npm run admin -- key create <email>',
    }),
  );

  app.get(
    '/healthz',
    {
      config: publicRoute,
      schema: {
        ...noKey,
        summary: 'Liveness: 200 while the process serves requests (checks nothing else)',
        response: {
          200: Type.Object({ status: Type.Literal('alive') }),
          429: ErrorBody,
        },
      },
    },
    async (_request, reply) => alive(reply),
  );
  // The name people try first (issue 9 item 7 found it answering 401); not in the document: /healthz is the one.
  app.get('/health', { config: publicRoute, schema: { hide: true } }, async (_request, reply) => alive(reply));

  app.get(
    '/readyz',
    {
      config: publicRoute,
      schema: {
        ...noKey,
        summary: 'Readiness: 200 when the database, Temporal and the sync hub answer; 503 naming what does not',
        response: { 200: ReadinessReport, 503: ReadinessReport, 429: ErrorBody },
      },
    },
    async (_request, reply) => {
      const report = await checkReadiness(checks);
      return reply
        .code(report.status === 'ready' ? 200 : 503)
        .header('cache-control', 'no-store')
        .send(report);
    },
  );

  app.get(
    '/metrics',
    {
      config: publicRoute,
      schema: {
        ...noKey,
        summary: 'Prometheus metrics (text exposition format 0.0.4)',
        response: {
          200: {
            description:
              'Requests and latencies per route, config-log head, hub connections and node lag, outbox backlog',
            content: { 'text/plain': { schema: { type: 'string' } } },
          },
          429: ErrorBody,
        },
      },
    },
    async (_request, reply) =>
      reply
        .type(registry.contentType)
        .header('cache-control', 'no-store')
        .send(await scrapeMetrics(registry)),
  );
}

export default fp(opsRoutes, { name: 'ops-routes', dependencies: ['database', 'temporal'] });
