// Cache routes: DELETE /domains/{domain}/cache/ (purge the whole cache through a new purge generation in the config
// log), and the internal endpoint where edge nodes ship request logs.
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { sql } from 'drizzle-orm';
import { loadDomain } from '../../auth/domain-access.js';
import { effectiveFeatures, requireFeature } from '../../plans/entitlements.js';
import { errorResponses, MessageBody } from '../../openapi/schemas.js';
import { DomainParams } from '../domains/schemas.js';
import requestLogRoutes from './request-logs.js';

export default async function cacheRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  app.delete('/domains/:domain/cache/', {
    schema: {
      summary: 'Purge the whole cache of the domain', tags: ['cache'], params: DomainParams,
      description: 'Every edge node drops the domain\'s cached objects when it applies the config entry this call appends.',
      response: { 200: MessageBody, ...errorResponses(403, 404) },
    },
  }, async (request) => {
    const { domain } = await loadDomain(request, request.params.domain, 'cache.purge');
    requireFeature(await effectiveFeatures(app.db, domain.id), 'cache_purge_enabled');
    await app.db.transaction(async (tx) => {
      await tx.execute(sql`INSERT INTO cache_purges (domain_id, generation, purged_at) VALUES (${domain.id}, 1, now())
        ON CONFLICT (domain_id) DO UPDATE SET generation = cache_purges.generation + 1, purged_at = now()`);
      await app.configLog.appendSnapshot(tx, domain.id);
    });
    app.configLog.nudge();
    return { message: 'cache purged' };
  });

  await app.register(requestLogRoutes);
}
