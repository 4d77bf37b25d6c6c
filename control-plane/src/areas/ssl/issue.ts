// Route of POST /domains/{domain}/ssl/issue (issue-service.ts has the rules).
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { loadDomain } from '../../auth/domain-access.js';
import { isApiError } from '../../errors.js';
import { errorResponses } from '../../openapi/schemas.js';
import { DomainParams } from '../domains/schemas.js';
import { manualIssue } from './issue-service.js';

export const ManualIssueResult = Type.Object(
  {
    message: Type.String(),
    status: Type.Literal('pending', { description: 'Always `pending`: the order runs in the background' }),
    last_issue_attempt_at: Type.String({ format: 'date-time' }),
  },
  { title: 'ManualIssueResult' },
);

export default async function sslIssueRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  app.post(
    '/domains/:domain/ssl/issue',
    {
      schema: {
        summary:
          'Start a manual ACME order (SSL missing or failed, DNS not external, no issuance running, cooldown elapsed); ' +
          'the outcome is polled with GET ssl/',
        description:
          '400: external DNS, or SSL not missing/failed, or the domain not active. 409: an issuance is in progress, ' +
          'or the domain is disabled. 429: the per-domain cooldown has not elapsed (`next_manual_issue_at` in the body, ' +
          '`Retry-After`). 503: the certificate issuer is unavailable.',
        tags: ['ssl'],
        params: DomainParams,
        response: { 200: ManualIssueResult, ...errorResponses(400, 403, 404, 409, 503) },
      },
    },
    async (request, reply) => {
      const { domain } = await loadDomain(request, request.params.domain, 'ssl.manage');
      try {
        return await manualIssue(app, domain);
      } catch (err) {
        if (isApiError(err) && typeof err.extra?.retry_after === 'number')
          reply.header('retry-after', String(err.extra.retry_after));
        throw err;
      }
    },
  );
}
