// Recommendations (spec "Further operations", Recommendations): a per-domain checklist computed from the domain's
// state at each read (checks.ts), the outstanding ones across the caller's domains, their count, the one-click fixes,
// dismiss and restore.
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { loadDomain } from '../../auth/domain-access.js';
import { errorResponses } from '../../openapi/schemas.js';
import { DomainParams } from '../domains/schemas.js';
import { Checklist, OutstandingCount, OutstandingList, OutstandingQuery, Recommendation } from './schemas.js';
import { applyFix, domainChecklist, outstandingCount, outstandingPage } from './service.js';
import { dismiss, restore } from './store.js';
import { CHECK_IDS, CHECKS, type CheckId } from './checks.js';

export default async function recommendationRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['recommendations'];
  // Dismiss (POST) and restore (DELETE): domain.settings; both answer the check as it stands.
  const dismissal = [
    {
      method: 'POST' as const,
      summary: 'Dismiss a recommendation',
      description: 'It stays listed as `dismissed` and is no longer counted. domain.settings.',
      write: (domainId: number, id: CheckId, userId: number) => dismiss(app.db, domainId, id, userId),
    },
    {
      method: 'DELETE' as const,
      summary: 'Restore a dismissed recommendation',
      description: 'Counted again while outstanding. Restoring one that is not dismissed changes nothing.',
      write: (domainId: number, id: CheckId) => restore(app.db, domainId, id),
    },
  ];

  app.get(
    '/domains/:domain/recommendations',
    {
      schema: {
        summary: "The domain's recommendations checklist",
        description:
          'Every check with its status, computed from the domain as it is now: HTTPS certificate, DNSSEC, origins ' +
          'answering errors, SPF, DMARC, cache rules that never match, WAF.',
        tags,
        params: DomainParams,
        response: { 200: Checklist, ...errorResponses(404) },
      },
    },
    async (request) => {
      const { domain } = await loadDomain(request, request.params.domain, 'domain.view');
      const list = await domainChecklist(app, domain);
      return {
        domain: domain.name,
        outstanding: list.filter((r) => r.status === 'outstanding').length,
        recommendations: list,
      };
    },
  );

  app.get(
    '/recommendations',
    {
      schema: {
        summary: 'Outstanding recommendations across your domains',
        description:
          'Domains by name, `limit` of them per page (1-100, 20 by default); `next_cursor` continues. Dismissed ' +
          'recommendations are left out.',
        tags,
        querystring: OutstandingQuery,
        response: { 200: OutstandingList, ...errorResponses(400) },
      },
    },
    async (request) => {
      const { limit = 20, cursor } = request.query;
      const page = await outstandingPage(app, request.principal.userId, cursor ?? null, limit);
      return { recommendations: page.items, next_cursor: page.next };
    },
  );

  app.get(
    '/recommendations/count',
    {
      schema: {
        summary: 'Count outstanding recommendations across your domains',
        description: 'Over your first 1,000 domains by name (`complete` false when there are more).',
        tags,
        response: { 200: OutstandingCount },
      },
    },
    async (request) => outstandingCount(app, request.principal.userId),
  );

  // One route per check (the path names it, as /rules/{type}/ does): fix for the checks that have one, dismiss
  // (POST) and restore (DELETE) for all.
  for (const id of CHECK_IDS) {
    const base = `/domains/:domain/recommendations/${id}`;
    const fix = CHECKS[id].fix;
    if (fix)
      app.post(
        `${base}/fix`,
        {
          schema: {
            summary: `Apply the one-click fix of ${id}`,
            description: `${fix.description} (${fix.permission}). 400 when the check is not outstanding. Answers the check afterwards.`,
            tags,
            params: DomainParams,
            response: { 200: Recommendation, ...errorResponses(400, 403, 404, 409) },
          },
        },
        async (request) => applyFix(request, request.params.domain, id),
      );
    for (const d of dismissal)
      app.route({
        method: d.method,
        url: `${base}/dismiss`,
        schema: {
          summary: `${d.summary}: ${id}`,
          description: d.description,
          tags,
          params: DomainParams,
          response: { 200: Recommendation, ...errorResponses(403, 404) },
        },
        handler: async (request) => {
          const { domain } = await loadDomain(request, request.params.domain, 'domain.settings');
          await d.write(domain.id, id, request.principal.userId);
          return (await domainChecklist(app, domain)).find((r) => r.id === id)!;
        },
      });
  }
}
