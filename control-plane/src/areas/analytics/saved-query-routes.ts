// Saved analytics queries (saved-queries.ts): CRUD under /analytics/saved-queries, the on-demand run, the alert
// workflow's evaluation call (/internal, node token, hidden from the OpenAPI document), and on start the workflows
// of every alert ensured through the outbox (a Temporal that lost its state loses no alert).
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { requireNodeToken } from '../../auth/node-token.js';
import { ApiError } from '../../errors.js';
import { errorResponses, idSegment, MessageBody } from '../../openapi/schemas.js';
import { enqueueMissingWorkflows } from '../../workflow-outbox/outbox.js';
import { QueryAnswer } from './schemas.js';
import {
  alertStart,
  createSavedQuery,
  deleteSavedQuery,
  evaluateSavedQuery,
  getSavedQuery,
  listSavedQueries,
  runSavedQuery,
  SAVED_QUERY_NOT_FOUND,
  updateSavedQuery,
} from './saved-queries.js';
import { alertIds } from './saved-queries-store.js';
import {
  MAX_SAVED_QUERIES,
  MAX_SAVED_QUERY_NAME,
  SavedQuery,
  SavedQueryCreate,
  SavedQueryList,
  SavedQueryParams,
  SavedQueryUpdate,
} from './saved-query-schemas.js';

const tags = ['analytics'];
const ItemPath = `/analytics/saved-queries/${idSegment('savedQueryId')}`;
const ENSURE_CHUNK = 1000;

const CHECKED =
  'The query is checked as POST /analytics/query checks it, with the same 400 texts (nothing is run); 403 when no domain of yours has a plan with analytics and logs (`error` names the feature).';

export default async function savedQueryRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  app.get(
    '/analytics/saved-queries',
    {
      schema: {
        summary: 'List your saved analytics queries (with the per-account cap)',
        description: `Oldest first; at most ${MAX_SAVED_QUERIES} per account, so one page holds them all.`,
        tags,
        response: { 200: SavedQueryList },
      },
    },
    async (request) => listSavedQueries(app, request.principal.userId),
  );

  app.post(
    '/analytics/saved-queries',
    {
      schema: {
        summary: 'Save an analytics query, optionally with an alert',
        description: [
          CHECKED,
          `400 also: a blank name (at most ${MAX_SAVED_QUERY_NAME} characters), the account at its cap of ${MAX_SAVED_QUERIES} saved queries, an alert column the query does not answer or that is not numeric, an interval below ANALYTICS_ALERT_MIN_INTERVAL_SECONDS, an alert without a target, a webhook_domain without a saved webhook_url. 403 read-only key, or a role without domain.settings on webhook_domain; 404 webhook_domain not found. 429 too many queries being checked at once; 503 the analytics store cannot be opened.`,
        ].join('\n\n'),
        tags,
        body: SavedQueryCreate,
        response: { 200: SavedQuery, ...errorResponses(400, 403, 404, 503) },
      },
    },
    async (request) => createSavedQuery(request, request.body),
  );

  app.get(
    ItemPath,
    {
      schema: {
        summary: 'Get a saved analytics query and its alert state',
        tags,
        params: SavedQueryParams,
        response: { 200: SavedQuery, ...errorResponses(400, 404) },
      },
    },
    async (request) => getSavedQuery(app, request.principal.userId, request.params.savedQueryId),
  );

  app.put(
    ItemPath,
    {
      schema: {
        summary: 'Update a saved analytics query',
        description: `Omitted fields are kept. ${CHECKED} A new query or alert starts the alert afresh (state \`unknown\`, evaluated at once). Other errors as on create.`,
        tags,
        params: SavedQueryParams,
        body: SavedQueryUpdate,
        response: { 200: SavedQuery, ...errorResponses(400, 403, 404, 503) },
      },
    },
    async (request) => updateSavedQuery(request, request.params.savedQueryId, request.body),
  );

  app.delete(
    ItemPath,
    {
      schema: {
        summary: 'Delete a saved analytics query (and its alert)',
        tags,
        params: SavedQueryParams,
        response: { 200: MessageBody, ...errorResponses(400, 403, 404) },
      },
    },
    async (request) => {
      await deleteSavedQuery(app, request.principal.userId, request.params.savedQueryId);
      return { message: 'saved query deleted' };
    },
  );

  app.get(
    `${ItemPath}/result`,
    {
      schema: {
        summary: 'Run a saved analytics query',
        description:
          'Runs it now as POST /analytics/query would, over the logs you may read now: the same limits (time, memory, rows), the same answer and errors (400 a query the engine rejects or stops at a limit; 403 no domain with analytics and logs; 429 too many queries at once; 503 the store). A read-only key may call it.',
        tags,
        params: SavedQueryParams,
        response: { 200: QueryAnswer, ...errorResponses(400, 403, 404, 503) },
      },
    },
    async (request) => runSavedQuery(app, request.principal.userId, request.params.savedQueryId),
  );

  await app.register(async (internal) => {
    requireNodeToken(internal);
    internal
      .withTypeProvider<TypeBoxTypeProvider>()
      .post(
        `/internal/analytics/saved-queries/${idSegment('savedQueryId')}/evaluate`,
        { schema: { hide: true, params: SavedQueryParams } },
        async (request) => {
          const r = await evaluateSavedQuery(app, request.params.savedQueryId);
          if (!r) throw new ApiError('CP_ERR_NOT_FOUND', SAVED_QUERY_NOT_FOUND);
          return r;
        },
      );
  });

  fastify.addHook('onReady', async () => {
    if (!app.temporal.enabled) return;
    void (async () => {
      const ids = await alertIds(app.db);
      let added = 0;
      for (let i = 0; i < ids.length; i += ENSURE_CHUNK)
        added += await enqueueMissingWorkflows(
          app.db,
          ids.slice(i, i + ENSURE_CHUNK).map((id) => ({ ...alertStart(id), kind: 'start' as const })),
        );
      if (added > 0) {
        app.workflowOutbox.nudge();
        app.log.info({ alerts: added }, 'saved-query alert workflows queued');
      }
    })().catch((err: unknown) => app.log.warn({ err }, 'could not queue the saved-query alert workflows'));
  });
}
