// POST /domains/{domain}/ssl/issue: a manual ACME order, allowed only when SSL is `missing` or `failed`, DNS is not
// external, no issuance runs and the per-domain cooldown has elapsed (spec Certificate table; 400/409/429/503). The
// order itself is the domain's certificate workflow, started (or woken) through the outbox in the same transaction
// that marks the issuance pending.
import type { FastifyInstance } from 'fastify';
import { ApiError } from '../../errors.js';
import { changeDomain } from '../../config-log/index.js';
import { assertNotFrozen } from '../domain-lifecycle/transitions.js';
import { certificatesWorkflow } from '../../internal/acme-plan.js';
import { recordIssuance, sslStatus } from './service.js';
import { getIssuance } from './store.js';
import type { domains } from '../../db/schema.js';

type DomainRow = typeof domains.$inferSelect;

/** How long the ACME directory may take to answer before the issuer counts as unavailable. */
const ISSUER_PROBE_MS = 5000;

export interface ManualIssueResult {
  message: string;
  status: 'pending';
  last_issue_attempt_at: string;
}

function cooldown(until: Date): ApiError {
  const seconds = Math.max(1, Math.ceil((until.getTime() - Date.now()) / 1000));
  return new ApiError('CP_ERR_RATE_LIMITED', `manual issuance is allowed again at ${until.toISOString()}`, {
    next_manual_issue_at: until.toISOString(),
    retry_after: seconds,
  });
}

/** 503 unless the configured ACME directory answers (an order started now would only fail). */
export async function probeIssuer(directoryUrl: string): Promise<void> {
  if (!directoryUrl)
    throw new ApiError('CP_ERR_UNAVAILABLE', 'certificate issuer unavailable: no ACME directory is configured');
  let why: string;
  try {
    const res = await fetch(directoryUrl, { signal: AbortSignal.timeout(ISSUER_PROBE_MS) });
    await res.arrayBuffer();
    if (res.ok) return;
    why = `its directory answered ${res.status}`;
  } catch (err) {
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    why = cause?.code ?? cause?.message ?? (err instanceof Error ? err.message : String(err));
  }
  throw new ApiError('CP_ERR_UNAVAILABLE', `certificate issuer temporarily unavailable (${why}); try again later`);
}

/** Checks the spec's conditions in its order, probes the issuer, then records the order under the domain's lock. */
export async function manualIssue(
  app: FastifyInstance,
  domain: DomainRow,
  now = new Date(),
): Promise<ManualIssueResult> {
  assertNotFrozen(domain);
  if (domain.dnsMode === 'external')
    throw new ApiError(
      'CP_ERR_WRONG_STATE',
      'manual issuance is not available for external-DNS domains: certificates are issued through the ssl_delegation CNAME',
    );
  if (domain.state !== 'active')
    throw new ApiError(
      'CP_ERR_WRONG_STATE',
      `the domain is ${domain.state}; certificates are issued for active domains`,
    );
  const status = await sslStatus(app.db, domain, now);
  if (status.issuance.status === 'pending')
    throw new ApiError('CP_ERR_ISSUANCE_RUNNING', 'certificate issuance is already in progress');
  if (status.summary.status !== 'missing' && status.summary.status !== 'failed')
    throw new ApiError(
      'CP_ERR_WRONG_STATE',
      `SSL is ${status.summary.status}: manual issuance is only for a domain whose SSL is missing or failed`,
    );
  const until = status.issuance.nextManualIssueAt;
  if (until && until.getTime() > now.getTime()) throw cooldown(until);
  if (!app.temporal.enabled)
    throw new ApiError('CP_ERR_UNAVAILABLE', 'workflow service unavailable (TEMPORAL_ADDRESS is not set)');
  await probeIssuer(app.config.acme.directoryUrl);

  return changeDomain(app, domain.id, async (tx, row) => {
    assertNotFrozen(row);
    // Again under the lock: two requests at once start one order.
    const issuance = await getIssuance(tx, row.id);
    if (issuance.status === 'pending')
      throw new ApiError('CP_ERR_ISSUANCE_RUNNING', 'certificate issuance is already in progress');
    if (issuance.nextManualIssueAt && issuance.nextManualIssueAt.getTime() > now.getTime())
      throw cooldown(issuance.nextManualIssueAt);
    await recordIssuance(tx, row.id, {
      status: 'pending',
      lastIssueAttemptAt: now,
      nextManualIssueAt: new Date(now.getTime() + app.config.acme.manualCooldownMs),
      lastError: null,
    });
    return {
      value: {
        message: 'certificate issuance started; poll GET /domains/{domain}/ssl/ for the outcome',
        status: 'pending' as const,
        last_issue_attempt_at: now.toISOString(),
      },
      workflows: [certificatesWorkflow(app.config.acme, row.name)],
    };
  });
}
