// Domain lifecycle routes: check-ns, verify, verify/retry, ssl/delegation/check, enable and developer mode.
// DNS lookups run as Temporal workflows (ids `<purpose>:<domain>`); state changes are in transitions.ts.
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { eq } from 'drizzle-orm';
import type * as wf from '../../../../workflows/src/workflows/index.js';
import { domains } from '../../db/schema.js';
import { loadDomain } from '../../auth/domain-access.js';
import { changeDomain } from '../../config-log/index.js';
import { ApiError, isApiError, MESSAGES } from '../../errors.js';
import { errorResponses } from '../../openapi/schemas.js';
import { workflowId } from '../../plugins/temporal.js';
import { presentDomain } from '../domains/present.js';
import { DomainDetail, DomainParams } from '../domains/schemas.js';
import { newVerification } from '../domains/service.js';
import { DeveloperMode, NsCheckResult, SslDelegationCheckResult, VerifyFailure, VerifyResult } from './schemas.js';
import {
  awaitingVerification,
  claimCheckSlot,
  recordCheckResult,
  releaseCheckSlot,
  setDeveloperMode,
  tokenExpired,
  type DomainRow,
} from './transitions.js';

type Result<F extends (...a: never[]) => unknown> = Awaited<ReturnType<F>>;

export default async function domainLifecycleRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['domains'];
  const params = DomainParams;

  /** Claims the per-domain slot (spec Limits) or answers 429 with Retry-After. */
  async function limited<T>(
    reply: FastifyReply,
    row: DomainRow,
    kind: 'check-ns' | 'delegation',
    intervalMs: number,
    run: () => Promise<T>,
  ): Promise<T> {
    const waitMs = await claimCheckSlot(app, row.id, kind, intervalMs);
    if (waitMs > 0) {
      reply.header('retry-after', String(Math.ceil(waitMs / 1000)));
      throw new ApiError('CP_ERR_RATE_LIMITED', MESSAGES.rateLimited, { retry_after: Math.ceil(waitMs / 1000) });
    }
    try {
      return await run();
    } catch (err) {
      if (isApiError(err) && err.code === 'CP_ERR_UNAVAILABLE') await releaseCheckSlot(app, row.id, kind);
      throw err;
    }
  }

  const gone = () => new ApiError('CP_ERR_NOT_FOUND', MESSAGES.domainNotFound);

  app.post(
    '/domains/:domain/check-ns',
    {
      schema: {
        summary: 'Check the nameserver delegation now (managed DNS; once per hour per domain)',
        tags,
        params,
        response: { 200: NsCheckResult, ...errorResponses(400, 403, 404, 503) },
      },
    },
    async (request, reply) => {
      const { domain } = await loadDomain(request, request.params.domain, 'domain.settings');
      if (domain.dnsMode !== 'managed') throw new ApiError('CP_ERR_WRONG_STATE', 'domain does not use managed DNS');
      if (domain.state !== 'pending' && domain.state !== 'moved')
        throw new ApiError('CP_ERR_WRONG_STATE', `domain is not awaiting nameserver changes (state ${domain.state})`);
      const result = await limited(reply, domain, 'check-ns', app.config.temporal.checkNsIntervalMs, () =>
        app.temporal.execute<Result<typeof wf.checkNameservers>>('checkNameservers', workflowId.checkNs(domain.name), [
          { domain: domain.name },
        ]),
      );
      if (!result) throw gone();
      return result;
    },
  );

  /** 409 for an expired token, marking verification failed if the timer has not done it yet. */
  async function refuseExpired(row: DomainRow): Promise<void> {
    if (!tokenExpired(row)) return;
    if (row.verificationState !== 'failed') {
      await app.db
        .update(domains)
        .set({ verificationState: 'failed', updatedAt: new Date() })
        .where(eq(domains.id, row.id));
    }
    throw new ApiError(
      'CP_ERR_TOKEN_EXPIRED',
      `verification token expired; request a new one with POST /domains/${row.name}/verify/retry`,
    );
  }

  app.post(
    '/domains/:domain/verify',
    {
      schema: {
        summary: 'Verify an external-DNS domain by its ssl_delegation CNAME or verification TXT',
        tags,
        params,
        response: { 200: VerifyResult, 422: VerifyFailure, ...errorResponses(400, 403, 404, 409, 503) },
      },
    },
    async (request, reply) => {
      const { domain } = await loadDomain(request, request.params.domain, 'domain.settings');
      if (domain.dnsMode !== 'external') throw new ApiError('CP_ERR_WRONG_STATE', 'domain does not use external DNS');
      if (domain.state !== 'unverified')
        throw new ApiError('CP_ERR_WRONG_STATE', `domain is not awaiting verification (state ${domain.state})`);
      await refuseExpired(domain);
      const result = await limited(reply, domain, 'delegation', app.config.temporal.delegationCheckIntervalMs, () =>
        app.temporal.execute<Result<typeof wf.verifyDomain>>('verifyDomain', workflowId.verify(domain.name), [
          {
            domain: domain.name,
            verification: domain.verification as never,
            sslDelegation: domain.sslDelegation as never,
          },
        ]),
      );
      if (!result) throw gone();
      if (!result.verified) {
        await changeDomain(app, domain.id, async (tx, row) => {
          await recordCheckResult(tx, row.id, 'delegation', {
            ok: false,
            error: result.error ?? '',
            checked_at: new Date().toISOString(),
          });
          return { value: null };
        });
        throw new ApiError('CP_ERR_CHECK_FAILED', result.error ?? 'no verification record found', { verified: false });
      }
      return { verified: true, method: result.method, state: result.state };
    },
  );

  app.post(
    '/domains/:domain/verify/retry',
    {
      schema: {
        summary: 'Start verification again with a new TXT token after it failed',
        tags,
        params,
        response: { 200: DomainDetail, ...errorResponses(400, 403, 404) },
      },
    },
    async (request) => {
      const access = await loadDomain(request, request.params.domain, 'domain.settings');
      const row = await changeDomain(app, access.domain.id, async (tx, current) => {
        if (current.dnsMode !== 'external')
          throw new ApiError('CP_ERR_WRONG_STATE', 'domain does not use external DNS');
        if (current.state !== 'unverified' || !tokenExpired(current))
          throw new ApiError('CP_ERR_WRONG_STATE', 'domain is not in failed verification; nothing to retry');
        const [updated] = await tx
          .update(domains)
          .set({
            verification: newVerification(current.name, app.config.verificationTokenDays),
            verificationState: 'awaiting',
            updatedAt: new Date(),
          })
          .where(eq(domains.id, current.id))
          .returning();
        return { value: updated!, workflows: [app.temporal.starts.verificationWatch(updated!)] };
      });
      return presentDomain(row, access.role, access.permissions, app.config);
    },
  );

  app.post(
    '/domains/:domain/ssl/delegation/check',
    {
      schema: {
        summary:
          'Check the ssl_delegation CNAME (TXT at _acme-challenge through public resolvers); once a minute per domain, shared with verify',
        tags: ['ssl'],
        params,
        response: {
          200: SslDelegationCheckResult,
          422: SslDelegationCheckResult,
          ...errorResponses(400, 403, 404, 503),
        },
      },
    },
    async (request, reply) => {
      const { domain } = await loadDomain(request, request.params.domain, 'ssl.manage');
      if (domain.dnsMode !== 'external') throw new ApiError('CP_ERR_WRONG_STATE', 'domain does not use external DNS');
      if (domain.state === 'disabled' || domain.state === 'banned')
        throw new ApiError('CP_ERR_WRONG_STATE', `domain is ${domain.state}`);
      const d = domain.sslDelegation as { target?: string; canary?: string } | null;
      if (!d?.target || !d.canary) throw new ApiError('CP_ERR_WRONG_STATE', 'domain has no ssl_delegation');
      const activate = awaitingVerification(domain) && !tokenExpired(domain);
      const result = await limited(reply, domain, 'delegation', app.config.temporal.delegationCheckIntervalMs, () =>
        app.temporal.execute<Result<typeof wf.checkSslDelegation>>(
          'checkSslDelegation',
          workflowId.sslDelegationCheck(domain.name),
          [
            {
              domain: domain.name,
              target: d.target!,
              canary: d.canary!,
              delegationZone: app.config.acmeDelegationZone,
              activate,
            },
          ],
        ),
      );
      if (!result) throw gone();
      await changeDomain(app, domain.id, async (tx, row) => {
        await recordCheckResult(tx, row.id, 'delegation', { ...result, checked_at: new Date().toISOString() });
        return { value: null };
      });
      if (!result.ok) throw new ApiError('CP_ERR_CHECK_FAILED', result.error ?? 'delegation not found', { ok: false });
      return { ok: true };
    },
  );

  app.post(
    '/domains/:domain/enable',
    {
      schema: {
        summary: 'Enable a disabled domain (managed: back to pending and re-checked against the service nameservers)',
        tags,
        params,
        response: { 200: DomainDetail, ...errorResponses(400, 403, 404) },
      },
    },
    async (request) => {
      const access = await loadDomain(request, request.params.domain, 'domain.settings');
      const row = await changeDomain(app, access.domain.id, async (tx, current) => {
        if (current.state !== 'disabled') throw new ApiError('CP_ERR_WRONG_STATE', 'domain is not disabled');
        const set =
          current.dnsMode === 'managed'
            ? { state: 'pending', nsSetIndex: null }
            : {
                state: 'unverified',
                verificationState: 'awaiting',
                verification: newVerification(current.name, app.config.verificationTokenDays),
              };
        const [updated] = await tx
          .update(domains)
          .set({ ...set, updatedAt: new Date() })
          .where(eq(domains.id, current.id))
          .returning();
        const watch =
          updated!.dnsMode === 'managed'
            ? app.temporal.starts.delegationWatch(updated!.name, { restart: true })
            : app.temporal.starts.verificationWatch(updated!);
        return { value: updated!, change: { domain: true }, workflows: [watch] };
      });
      return presentDomain(row, access.role, access.permissions, app.config);
    },
  );

  app.post(
    '/domains/:domain/developer-mode',
    {
      schema: {
        summary: 'Turn developer mode on (cache bypassed); it switches itself off at expires_at',
        tags,
        params,
        response: { 200: DeveloperMode, ...errorResponses(403, 404) },
      },
    },
    async (request) => {
      const { domain } = await loadDomain(request, request.params.domain, 'domain.settings');
      const until = new Date(Date.now() + app.config.temporal.developerModeMs);
      const body = await setDeveloperMode(app, domain.name, until);
      return body;
    },
  );

  app.delete(
    '/domains/:domain/developer-mode',
    {
      schema: {
        summary: 'Turn developer mode off now',
        tags,
        params,
        response: { 200: DeveloperMode, ...errorResponses(403, 404) },
      },
    },
    async (request) => {
      const { domain } = await loadDomain(request, request.params.domain, 'domain.settings');
      const body = await setDeveloperMode(app, domain.name, null);
      return body;
    },
  );
}
