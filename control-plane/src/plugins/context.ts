// Decorates the instance with what every route uses: the database, the configuration, the config log and the
// workflow outbox.
import fp from 'fastify-plugin';
import type { FastifyInstance } from 'fastify';
import type { Db } from '../db/index.js';
import type { ControlPlaneConfig } from '../config.js';
import type { ConfigLog } from '../config-log/index.js';
import type { WorkflowOutbox } from '../workflow-outbox/outbox.js';

declare module 'fastify' {
  interface FastifyInstance {
    db: Db;
    config: Readonly<ControlPlaneConfig>;
    configLog: ConfigLog;
    /** Nudge it after committing a write that recorded workflow starts (enqueueWorkflows). */
    workflowOutbox: WorkflowOutbox;
    /** Every route registered after this plugin (method, url, hidden from OpenAPI), for checks and startup logs. */
    routeTable: RouteEntry[];
  }
}

export interface RouteEntry {
  method: string;
  url: string;
  hidden: boolean;
}

export interface ContextOptions {
  db: Db;
  config: Readonly<ControlPlaneConfig>;
  configLog: ConfigLog;
  workflowOutbox: WorkflowOutbox;
}

async function context(app: FastifyInstance, opts: ContextOptions) {
  app.decorate('db', opts.db);
  app.decorate('config', opts.config);
  app.decorate('configLog', opts.configLog);
  app.decorate('workflowOutbox', opts.workflowOutbox);
  const routeTable: RouteEntry[] = [];
  app.decorate('routeTable', routeTable);
  app.addHook('onRoute', (route) => {
    const hidden = (route.schema as { hide?: boolean } | undefined)?.hide === true || route.url.startsWith('/internal');
    for (const method of [route.method].flat()) routeTable.push({ method, url: route.url, hidden });
  });
}

export default fp(context, { name: 'database' });
