// Builds the control-plane HTTP API (no listen): error model, authentication, rate limit, OpenAPI, route areas.
import Fastify, { LogController, type FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Database } from './db/index.js';
import type { ControlPlaneConfig } from './config.js';
import { createConfigLog, type ConfigLog } from './config-log/index.js';
import { WorkflowOutbox } from './workflow-outbox/outbox.js';
import context from './plugins/context.js';
import { installErrorHandlers, installNotFoundHandler } from './plugins/error-handler.js';
import authenticate from './auth/authenticate.js';
import rateLimit from './plugins/rate-limit.js';
import openapi from './openapi/index.js';
import { validationSchemaController } from './plugins/validation.js';
import { installJsonBodyParser } from './plugins/json-body.js';
import { ROUTER_OPTIONS, trackRoutes } from './plugins/route-hints.js';
import domainRoutes from './areas/domains/routes.js';
import accountRoutes from './areas/account/routes.js';
import temporal from './plugins/temporal.js';
import domainLifecycleRoutes from './areas/domain-lifecycle/routes.js';
import internalRoutes from './internal/routes.js';
import ruleRoutes from './areas/rules/routes.js';
import cacheRoutes from './areas/cache/routes.js';
import sslRoutes from './areas/ssl/routes.js';
import uptimeRoutes from './areas/uptime/routes.js';
import securityRoutes from './areas/security/routes.js';
import attackRoutes from './areas/security/attacks.js';
import sslIssueRoutes from './areas/ssl/issue.js';
import opsRoutes from './ops/routes.js';
import { analyticsPlugin } from './areas/analytics/service.js';
import analyticsRoutes from './areas/analytics/routes.js';
import notificationRoutes from './areas/notifications/routes.js';
import supportRoutes from './areas/support/routes.js';
import recommendationRoutes from './areas/recommendations/routes.js';
import domainOpsRoutes from './areas/domain-ops/routes.js';
import billingRoutes from './areas/billing/routes.js';
import sharingRoutes from './areas/sharing/routes.js';
import gatewayRoutes from './areas/gateways/routes.js';
import ssoRoutes from './areas/sso/routes.js';
import dnssecRoutes from './areas/dnssec/routes.js';
import loginRoutes from './areas/login/routes.js';
import zoneTransferRoutes from './areas/zone-transfers/routes.js';
import apiKeyRoutes from './areas/api-keys/routes.js';
import panelRoutes from './areas/panel/routes.js';
import type { SyncHub } from './sync/index.js';

export interface BuildOptions {
  config: Readonly<ControlPlaneConfig>;
  database: Database;
  /** Share one config log with the sync hub; a new one by default. */
  configLog?: ConfigLog;
  /** Share one workflow outbox with the dispatcher; a new one (nobody dispatches) by default. */
  workflowOutbox?: WorkflowOutbox;
  /** The sync hub this process runs, once started (after the API is built): /readyz and /metrics report it. */
  syncHub?: () => SyncHub | undefined;
  /** Fastify logger option; by default a pino logger at config.logLevel. */
  logger?: boolean | { level: string };
}

export async function build(opts: BuildOptions): Promise<FastifyInstance> {
  const { config } = opts;
  const app = Fastify({
    logger: opts.logger ?? { level: config.logLevel },
    // Two lines per request flood a terminal: request logs only at debug (errors are logged by the error handler).
    logController: new LogController({ disableRequestLogging: !['debug', 'trace'].includes(config.logLevel) }),
    bodyLimit: config.bodyLimitBytes,
    // Trailing slashes are significant (spec Global conventions §3): /domains is not /domains/.
    routerOptions: ROUTER_OPTIONS,
    // The client address (per-address rate limit) is the TCP peer unless it is one of these proxies.
    trustProxy: config.trustProxy.length > 0 ? config.trustProxy : false,
    schemaController: validationSchemaController(),
  }).withTypeProvider<TypeBoxTypeProvider>();

  // Request bodies are application/json only (spec Global conventions §6); anything else is 415.
  installJsonBodyParser(app);
  installErrorHandlers(app, config.bodyLimitBytes);

  await app.register(context, {
    db: opts.database.db,
    config,
    configLog: opts.configLog ?? createConfigLog(config),
    workflowOutbox: opts.workflowOutbox ?? new WorkflowOutbox(),
  });
  // The analytics store (opened at first use) for request-log ingest, domain deletes and POST /analytics/query.
  await app.register(analyticsPlugin);
  // Every route from here on is mirrored: the 404/405 answers and the key check of a public path's 405 ask it.
  const routes = trackRoutes(app);
  // On Postgres the rate-limit counters are shared (rate-limit-store.ts): the key lookup counts the request too.
  await app.register(authenticate, { routes, countKeyHits: opts.database.driver === 'postgres' });
  await app.register(temporal);
  await app.register(rateLimit, {
    perMinute: config.rateLimitPerMinute,
    anonymousPerMinute: config.anonymousRateLimitPerMinute,
    panelPerMinute: config.panelRateLimitPerMinute,
    shared: opts.database.driver === 'postgres',
  });
  installNotFoundHandler(app, app.rateLimit(), routes);
  await app.register(openapi, { serverUrl: config.publicBaseUrl });
  // GET /, /healthz, /readyz, /metrics (no key); its request metrics cover every route.
  await app.register(opsRoutes, { syncHub: opts.syncHub });

  // Route areas: one line each.
  await app.register(domainRoutes);
  await app.register((await import('./areas/records/routes.js')).default);
  await app.register((await import('./areas/import-sessions/routes.js')).default);
  await app.register(accountRoutes);
  await app.register(domainLifecycleRoutes);
  await app.register(internalRoutes);
  await app.register(ruleRoutes);
  await app.register(cacheRoutes);
  await app.register(sslRoutes);
  await app.register(uptimeRoutes);
  await app.register(securityRoutes);
  await app.register(attackRoutes);
  await app.register(sslIssueRoutes);
  await app.register(analyticsRoutes);
  await app.register(notificationRoutes);
  await app.register(supportRoutes);
  await app.register(recommendationRoutes);
  await app.register(domainOpsRoutes);
  await app.register(billingRoutes);
  await app.register(sharingRoutes);
  await app.register(gatewayRoutes);
  await app.register(ssoRoutes);
  await app.register(dnssecRoutes);
  await app.register(loginRoutes);
  await app.register(zoneTransferRoutes);
  await app.register((await import('./areas/email/routes.js')).default);
  await app.register(apiKeyRoutes);
  await app.register(panelRoutes);

  return app;
}
