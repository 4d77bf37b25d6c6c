// Decorates the instance with what every route uses: the database, the configuration and the config log.
import fp from 'fastify-plugin';
import type { FastifyInstance } from 'fastify';
import type { Db } from '../db/index.js';
import type { ControlPlaneConfig } from '../config.js';
import type { ConfigLog } from '../config-log/index.js';

declare module 'fastify' {
  interface FastifyInstance {
    db: Db;
    config: Readonly<ControlPlaneConfig>;
    configLog: ConfigLog;
  }
}

export interface ContextOptions { db: Db; config: Readonly<ControlPlaneConfig>; configLog: ConfigLog }

async function context(app: FastifyInstance, opts: ContextOptions) {
  app.decorate('db', opts.db);
  app.decorate('config', opts.config);
  app.decorate('configLog', opts.configLog);
}

export default fp(context, { name: 'database' });
