// The lifecycle workflow's call (/internal, node token, hidden from the OpenAPI document), and on start the
// lifecycles of live subscriptions ensured through the outbox, so a Temporal that lost its state loses no workflow.
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { requireNodeToken } from '../../auth/node-token.js';
import { ApiError } from '../../errors.js';
import { enqueueMissingWorkflows } from '../../workflow-outbox/outbox.js';
import { advanceSubscription, subscriptionsWithLifecycle } from './lifecycle.js';
import { lifecycleStart } from './lifecycle-starts.js';
import { IdParams } from './schemas.js';

const ENSURE_CHUNK = 1000;

export default async function lifecycleRoutes(fastify: FastifyInstance) {
  requireNodeToken(fastify);
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  app.post('/internal/subscriptions/:id/advance', { schema: { hide: true, params: IdParams } }, async (request) => {
    const r = await advanceSubscription(app, request.params.id);
    if (!r) throw new ApiError('CP_ERR_NOT_FOUND', 'subscription not found');
    return r;
  });

  fastify.addHook('onReady', async () => {
    if (!app.temporal.enabled) return;
    void (async () => {
      const views = await subscriptionsWithLifecycle(app);
      let added = 0;
      for (let i = 0; i < views.length; i += ENSURE_CHUNK)
        added += await enqueueMissingWorkflows(
          app.db,
          views.slice(i, i + ENSURE_CHUNK).map((v) => lifecycleStart(v.sub.id)),
        );
      if (added > 0) {
        app.workflowOutbox.nudge();
        app.log.info({ subscriptions: added }, 'subscription lifecycles queued');
      }
    })().catch((err: unknown) => app.log.warn({ err }, 'could not queue the subscription lifecycles'));
  });
}
