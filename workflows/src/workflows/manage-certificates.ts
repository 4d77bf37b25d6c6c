// The certificate of one domain, for as long as it has names to cover: asks the control plane what to issue, runs an
// ACME order when nothing valid covers them (create → publish the dns-01 TXTs or http-01 key authorizations
// (acme-challenge-steps.ts) → wait until they are served → complete → finalize and store → withdraw), records every attempt and its reason, retries a failed order with a
// doubling backoff, and sleeps on a durable timer until renewal: 30 days before expiry, or at two thirds of the
// lifetime for short-lived certificates, whichever is later. A signal (new proxied name, POST ssl/issue) wakes it.
import {
  ActivityFailure,
  ApplicationFailure,
  condition,
  continueAsNew,
  defineSignal,
  proxyActivities,
  setHandler,
  sleep,
} from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';
import type { AcmeOrder, AcmePlan, IssuedCertificate } from '../types.js';
import { background, interactive } from './proxies.js';
import { publishChallenges, withdrawChallenges } from './acme-challenge-steps.js';

/** Something changed (a proxied name was added, POST ssl/issue): look again at once. */
export const issueCertificateSignal = defineSignal('issueCertificate');

export interface ManageCertificatesInput {
  domain: string;
  /** After a failed order: first wait, doubling up to the max. */
  backoff: { initialMs: number; maxMs: number };
  /** How long our DNS nodes get to serve the challenge TXTs, asked every pollMs. */
  challengeWait: { pollMs: number; maxMs: number };
  /** Renew this long before expiry (or at two thirds of the lifetime, when that is later). */
  renewBeforeMs: number;
  /** Failed orders in a row, carried across continueAsNew. */
  failures?: number;
}

/** Calls to the CA: a few attempts each, then the order fails with the reason and the workflow's backoff takes over. */
const acmeCalls = proxyActivities<Activities>({
  startToCloseTimeout: '3 minutes',
  retry: { initialInterval: '2 seconds', backoffCoefficient: 2, maximumInterval: '20 seconds', maximumAttempts: 3 },
});

/** Cycles (orders or renewals) of one run before its history is carried into a fresh one. */
const CYCLES_PER_RUN = 25;

/** When a certificate valid from notBefore to notAfter is renewed. */
export function renewAt(notBeforeMs: number, notAfterMs: number, renewBeforeMs: number): number {
  return Math.max(notAfterMs - renewBeforeMs, notBeforeMs + ((notAfterMs - notBeforeMs) * 2) / 3);
}

function covers(current: AcmePlan['current'], wanted: string[]): boolean {
  if (!current) return false;
  const have = new Set(current.hostnames);
  return wanted.every((h) => have.has(h));
}

function why(err: unknown): string {
  if (err instanceof ActivityFailure) return err.cause?.message ?? err.message;
  return err instanceof Error ? err.message : String(err);
}

/** The CA's "retry after" of a rate-limited call (acme activities put it in the failure's details). */
function retryAtOf(err: unknown): number | undefined {
  const cause = err instanceof ActivityFailure ? err.cause : undefined;
  const detail = cause instanceof ApplicationFailure ? (cause.details?.[0] as { retryAtMs?: unknown }) : undefined;
  return typeof detail?.retryAtMs === 'number' ? detail.retryAtMs : undefined;
}

async function runOrder(
  input: ManageCertificatesInput,
  plan: AcmePlan,
): Promise<IssuedCertificate | { error: string; retryAtMs?: number }> {
  const { domain } = input;
  let order: AcmeOrder | undefined;
  let published = false;
  try {
    // An external domain's CNAME is looked at first: an order that cannot validate only costs the CA's failure limits.
    if (plan.delegation) {
      const { target, canary, zone } = plan.delegation;
      const check = await interactive.checkAcmeDelegation({ domain, target, canary, delegationZone: zone });
      if (!check.ok) return { error: `the ssl_delegation CNAME is not in place: ${check.error ?? 'not seen'}` };
    }
    const fulldomain = plan.acme_dns?.fulldomain;
    if (fulldomain) {
      const cname = { name: `_acme-challenge.${domain}`, type: 'CNAME', target: fulldomain };
      const seen = await interactive.lookupVerification({ verification: null, sslDelegation: cname });
      if (seen.found !== 'cname')
        return { error: `the _acme-challenge CNAME does not lead to the acme-dns account: ${seen.seen}` };
    }
    order = await acmeCalls.acmeNewOrder({
      directoryUrl: plan.directory_url,
      hostnames: plan.hostnames,
      ...(plan.email ? { email: plan.email } : {}),
      ...(plan.challenge === 'http-01' ? { challengeType: 'http-01' as const } : {}),
    });
    if (order.challenges.length > 0) {
      published = true;
      const steps = await publishChallenges(plan.challenge, domain, order.challenges);
      const deadline = Date.now() + input.challengeWait.maxMs;
      for (;;) {
        const seen = await steps.served();
        if (seen.served) break;
        if (Date.now() >= deadline)
          throw ApplicationFailure.nonRetryable(
            `${steps.notServed} within ${Math.round(input.challengeWait.maxMs / 1000)} s ` +
              `(${seen.missing.slice(0, 5).join(', ')})`,
          );
        await sleep(input.challengeWait.pollMs);
      }
      await acmeCalls.acmeCompleteChallenges({ directoryUrl: plan.directory_url, challenges: order.challenges });
    }
    return await acmeCalls.acmeFinalizeAndStore({ domain, directoryUrl: plan.directory_url, order });
  } catch (err) {
    const retryAtMs = retryAtOf(err);
    return retryAtMs === undefined ? { error: why(err) } : { error: why(err), retryAtMs };
  } finally {
    if (published && order) await withdrawChallenges(plan.challenge, domain, order.challenges);
  }
}

export async function manageCertificates(input: ManageCertificatesInput): Promise<string> {
  const { domain } = input;
  let failures = input.failures ?? 0;
  let woken = false;
  setHandler(issueCertificateSignal, () => {
    woken = true;
  });
  for (let cycle = 0; cycle < CYCLES_PER_RUN; cycle++) {
    woken = false;
    const plan = await background.acmePlan(domain);
    if (!plan) return 'deleted';
    if (!plan.directory_url || plan.hostnames.length === 0) {
      const reason = plan.reason ?? (plan.directory_url ? 'no names to cover' : 'no certificate issuer configured');
      if (plan.manual) await background.reportAcmeAttempt(domain, { status: 'failed', hostnames: [], error: reason });
      return `idle: ${reason}`;
    }
    let waitMs: number;
    const due =
      plan.manual ||
      !covers(plan.current, plan.hostnames) ||
      Date.now() >=
        renewAt(Date.parse(plan.current!.not_before), Date.parse(plan.current!.not_after), input.renewBeforeMs);
    if (due) {
      await background.reportAcmeAttempt(domain, { status: 'pending', hostnames: plan.hostnames });
      const outcome = await runOrder(input, plan);
      if ('error' in outcome) {
        failures++;
        // The doubling backoff, or the CA's rate-limit time when that is later.
        waitMs = Math.max(
          Math.min(input.backoff.initialMs * 2 ** (failures - 1), input.backoff.maxMs),
          (outcome.retryAtMs ?? 0) - Date.now(),
        );
        await background.reportAcmeAttempt(domain, {
          status: 'failed',
          hostnames: plan.hostnames,
          error: outcome.error,
          next_retry_at_ms: Date.now() + waitMs,
        });
      } else {
        failures = 0;
        await background.reportAcmeAttempt(domain, { status: 'issued', hostnames: outcome.hostnames });
        waitMs = renewAt(outcome.notBeforeMs, outcome.notAfterMs, input.renewBeforeMs) - Date.now();
      }
    } else {
      waitMs =
        renewAt(Date.parse(plan.current!.not_before), Date.parse(plan.current!.not_after), input.renewBeforeMs) -
        Date.now();
    }
    await condition(() => woken, Math.max(waitMs, 1000));
  }
  return continueAsNew<typeof manageCertificates>({ ...input, failures });
}
