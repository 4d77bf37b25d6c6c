// Analytics routes: POST /analytics/query, one sandboxed SELECT over the caller's own request logs (sandbox.ts), and
// the per-domain reads (read-routes.ts), the account-wide reads and the rest (account-read-routes.ts).
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { errorResponses } from '../../openapi/schemas.js';
import { LOG_COLUMNS_TABLE, QueryAnswer, QueryBody } from './schemas.js';
import { runQuery } from './service.js';
import { MAX_PAREN_DEPTH, MAX_QUERY_CHARS } from './sandbox.js';
import analyticsReadRoutes from './read-routes.js';
import accountReadRoutes from './account-read-routes.js';
import savedQueryRoutes from './saved-query-routes.js';

const tags = ['analytics'];

export default async function analyticsRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  await app.register(analyticsReadRoutes);
  await app.register(accountReadRoutes);
  await app.register(savedQueryRoutes);
  app.post(
    '/analytics/query',
    {
      schema: {
        summary: 'Query your request logs with SQL',
        description: [
          'Runs exactly one SELECT (DuckDB SQL) over the relation `logs`: the request logs of every domain you own or are a member of whose plan includes analytics and logs. CTEs, subqueries, joins of `logs` with itself, VALUES, window functions and the scalar and aggregate functions are allowed. A read-only key may call it.',
          '',
          `400: anything else — another relation or catalog (information_schema, pg_catalog, duckdb_* and sqlite_* views), a table function (read_csv, glob, range, …), file or network access, several statements, SET, PRAGMA, ATTACH, COPY, EXPORT, INSTALL, LOAD, writes and DDL, recursive CTEs, parameters, functions that read settings or build huge values (repeat, lpad, …); a query over ${MAX_QUERY_CHARS} characters, with parentheses nested deeper than ${MAX_PAREN_DEPTH}, with control, invisible or bidirectional-override characters; a query the engine rejects (unknown column), or one stopped at the time or memory limit (ANALYTICS_QUERY_TIMEOUT_MS, ANALYTICS_MEMORY_MB). At most ANALYTICS_QUERY_MAX_ROWS rows (10000 by default) are answered; \`truncated\` says there were more. 403 when no domain's plan includes the feature (\`error\` names it). 429 when too many queries run at once. 503 when the analytics store cannot be opened.`,
          '',
          'Columns of `logs`:',
          '',
          LOG_COLUMNS_TABLE,
        ].join('\n'),
        tags,
        body: QueryBody,
        response: { 200: QueryAnswer, ...errorResponses(400, 403, 429, 503) },
      },
    },
    async (request) => runQuery(request, request.body.query),
  );
}
