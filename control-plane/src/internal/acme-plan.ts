// What a domain's ACME certificate must cover and where its issuance stands: the plan the certificate workflow asks
// for, the attempts it reports (into the ssl area's issuance state), the workflow start, and the sweep that starts
// the workflows of domains whose proxied names lack a certificate (or whose renewal is overdue).
import type { FastifyInstance } from 'fastify';
import { sql } from 'drizzle-orm';
import type { Db, Tx } from '../db/index.js';
import { rowsOf } from '../db/migrate.js';
import type { domains } from '../db/schema.js';
import { coveringName } from '../areas/ssl/pem.js';
import { proxiedHostnames, recordIssuance } from '../areas/ssl/service.js';
import { getIssuance, listCertificates, type HostnameIssuance } from '../areas/ssl/store.js';
import { getAcmeDnsAccount } from '../areas/ssl/acme-dns-store.js';
import { delegationLabel } from '../areas/ssl/delegation-zone.js';
import { notifyDomain } from '../areas/notifications/store.js';
import { enqueueMissingWorkflows, type WorkflowStart } from '../workflow-outbox/outbox.js';
import type { AcmeConfig } from './acme-config.js';
import { delegatedSql, delegationInPlace, http01Names } from './acme-http01-store.js';
import type * as wf from '../../../workflows/src/workflows/index.js';
import type { AcmeAttemptReport, AcmePlan } from '../../../workflows/src/types.js';

type DomainRow = typeof domains.$inferSelect;

/** Names one certificate holds at most (Let's Encrypt's limit). */
export const MAX_CERTIFICATE_NAMES = 100;

/** Workflow id of a domain's certificate workflow. */
export const certificatesWorkflowId = (domain: string) => `certificates:${domain}`;

/** Starts the domain's certificate workflow, or wakes the running one (signal issueCertificate). */
export function certificatesWorkflow(cfg: AcmeConfig, domain: string): WorkflowStart {
  const input: Parameters<typeof wf.manageCertificates>[0] = {
    domain,
    backoff: { initialMs: cfg.retryFirstMs, maxMs: cfg.retryMaxMs },
    challengeWait: { pollMs: cfg.challengePollMs, maxMs: cfg.challengeWaitMs },
    renewBeforeMs: cfg.renewBeforeMs,
  };
  return {
    kind: 'signal-with-start',
    workflowType: 'manageCertificates',
    workflowId: certificatesWorkflowId(domain),
    args: [input],
    signal: 'issueCertificate',
    signalArgs: [],
  };
}

/**
 * The names a managed domain's certificate covers: the apex and its wildcard (as Cloudflare's Universal SSL: every
 * proxied name one label deep, present and future, without a new order), plus proxied names deeper than that, up to
 * MAX_CERTIFICATE_NAMES. An external domain's: the apex and its wildcard only, the names whose dns-01 TXT lives at
 * the one `_acme-challenge.<domain>` its CNAME (or acme-dns account) answers for.
 */
export function wantedHostnames(domain: string, proxied: readonly string[], mode = 'managed'): string[] {
  const names = new Set([domain, `*.${domain}`]);
  if (mode === 'external') return [...names];
  for (const p of proxied) {
    if (names.size >= MAX_CERTIFICATE_NAMES) break;
    if (coveringName(names, p) === undefined) names.add(p);
  }
  return [...names];
}

/** When a certificate valid from notBefore to notAfter is due for renewal (the workflow's rule, repeated). */
export function renewalDue(notBefore: Date, notAfter: Date, renewBeforeMs: number): number {
  const a = notBefore.getTime();
  const b = notAfter.getTime();
  return Math.max(b - renewBeforeMs, a + ((b - a) * 2) / 3);
}

/** The plan body the workflow reads (its type lives with the workflows: one contract). */
export type AcmePlanBody = AcmePlan;

/** The newest unexpired issued certificate of the domain. */
async function currentIssued(db: Db | Tx, domainId: number, now: number) {
  const rows = (await listCertificates(db, domainId)).filter(
    (c) => c.source === 'issued' && c.notAfter.getTime() > now,
  );
  return rows.at(-1);
}

export async function acmePlan(app: FastifyInstance, row: DomainRow, now = Date.now()): Promise<AcmePlanBody> {
  const cfg = app.config.acme;
  const [issuance, current, proxied] = await Promise.all([
    getIssuance(app.db, row.id),
    currentIssued(app.db, row.id, now),
    proxiedHostnames(app.db, row),
  ]);
  const manual = issuance.status === 'pending';
  const base = {
    directory_url: cfg.directoryUrl,
    email: cfg.email,
    manual,
    current: current
      ? {
          hostnames: current.hostnames,
          not_before: current.notBefore.toISOString(),
          not_after: current.notAfter.toISOString(),
        }
      : null,
  };
  const none = (reason: string): AcmePlanBody => ({ ...base, hostnames: [], reason });
  if (!cfg.directoryUrl) return none('no certificate issuer is configured (ACME_DIRECTORY_URL)');
  if (row.state !== 'active') return none(`the domain is ${row.state}, not active`);
  let via: Pick<AcmePlanBody, 'challenge' | 'delegation' | 'acme_dns'> = {};
  if (row.dnsMode === 'external') {
    const zone = app.config.acmeDelegationZone;
    const d = row.sslDelegation as { target?: string; canary?: string } | null;
    const account = await getAcmeDnsAccount(app.db, row.id);
    // No acme-dns account and no CNAME seen in place: the proxied names are validated through the edge.
    const http01 = http01Names(
      { dnsMode: row.dnsMode, acmeDns: account !== undefined, delegated: await delegationInPlace(app.db, row.id) },
      proxied,
    );
    if (http01.length > 0) return { ...base, hostnames: http01, challenge: 'http-01' };
    if (account) via = { challenge: 'acme-dns', acme_dns: { fulldomain: account.fulldomain } };
    else if (delegationLabel(d, zone) === undefined || !d?.canary)
      return none(`the ssl_delegation CNAME target is not inside the ACME delegation zone ${zone}`);
    else via = { challenge: 'delegation', delegation: { target: d.target!, canary: d.canary, zone } };
  }
  if (proxied.length === 0 && !manual) return none('the domain has no proxied records');
  return { ...base, ...via, hostnames: wantedHostnames(row.name, proxied, row.dnsMode) };
}

export type AttemptReport = AcmeAttemptReport;

/**
 * Writes a reported attempt into the domain's issuance state; a failure is recorded per name (attempts, last error,
 * next retry) for the names ordered and the proxied names they would cover (GET ssl/ `coverage`).
 */
export async function recordAttempt(
  db: Db,
  domain: { id: number; name: string },
  report: AttemptReport,
  now = new Date(),
): Promise<void> {
  const domainId = domain.id;
  if (report.status === 'pending') {
    await recordIssuance(db, domainId, { status: 'pending', lastIssueAttemptAt: now });
    return;
  }
  if (report.status === 'issued') {
    await recordIssuance(db, domainId, { status: 'idle', lastError: null });
    return;
  }
  const current = await getIssuance(db, domainId);
  const next = report.next_retry_at_ms ? new Date(report.next_retry_at_ms).toISOString() : null;
  const hostnames: Record<string, HostnameIssuance> = { ...current.hostnames };
  const ordered = report.hostnames.slice(0, MAX_CERTIFICATE_NAMES);
  const orderedSet = new Set(ordered);
  const proxied = (await proxiedHostnames(db, domain)).filter((p) => coveringName(orderedSet, p) !== undefined);
  for (const h of [...new Set([...ordered, ...proxied.slice(0, COVERAGE_RECORDED)])]) {
    hostnames[h] = {
      attempts: (current.hostnames[h]?.attempts ?? 0) + 1,
      last_error: report.error ?? null,
      next_retry_at: next,
    };
  }
  const lastError = report.error ?? 'issuance failed';
  await db.transaction(async (tx) => {
    await recordIssuance(tx, domainId, { status: 'failed', lastError, hostnames });
    // Once per failure, not per retry: the owner hears again only after an issuance succeeded or was asked anew.
    if (current.status !== 'failed')
      await notifyDomain(tx, domainId, {
        category: 'ssl',
        kind: 'ssl.failed',
        title: `Certificate issuance for ${domain.name} failed`,
        body: `${lastError.slice(0, 500)}${next ? ` Next attempt at ${next}.` : ''}`,
        domain: domain.name,
        data: { hostnames: ordered.slice(0, 10) },
      });
  });
}

/** Proxied names a failure is recorded for at most (GET ssl/ lists the first names of its coverage). */
const COVERAGE_RECORDED = 1000;

/** Domains looked at per sweep at most (the rest wait for the next one). */
const SWEEP_BATCH = 500;
/** A `pending` state older than this is taken as a workflow that was lost. */
const STALE_PENDING_MS = 3_600_000;

/** Where a sweep goes on: domains after `afterId` (0: from the start), at most `batch` of them. */
export interface SweepCursor {
  afterId: number;
  batch?: number;
}

/**
 * The certificate workflows the sweep ensures: active domains (managed or external) with proxied names whose issued certificate
 * does not cover them all or is due for renewal, unless an order runs or a failed one waits for its retry. Looks at
 * one batch of domains after the cursor and moves it on (back to the start after the last domain), so every domain
 * is looked at however many there are.
 */
export async function sweepCertificates(
  app: FastifyInstance,
  cursor: SweepCursor = { afterId: 0 },
  now = Date.now(),
): Promise<WorkflowStart[]> {
  const cfg = app.config.acme;
  if (!cfg.directoryUrl) return [];
  const batch = cursor.batch ?? SWEEP_BATCH;
  const res = await app.db.execute(sql`
    SELECT d.id, d.name, d.dns_mode, i.status, i.updated_at, i.hostnames, ${delegatedSql(sql`d.id`)} AS delegated,
      EXISTS (SELECT 1 FROM acme_dns_accounts a WHERE a.domain_id = d.id) AS acme_dns
    FROM domains d LEFT JOIN ssl_issuance i ON i.domain_id = d.id
    WHERE d.state = 'active' AND d.id > ${cursor.afterId}
      AND EXISTS (SELECT 1 FROM dns_records r WHERE r.domain_id = d.id AND r.proxied)
    ORDER BY d.id LIMIT ${batch}`);
  const rows = rowsOf<{
    id: number;
    name: string;
    dns_mode: string;
    delegated: boolean;
    acme_dns: boolean;
    status: string | null;
    updated_at: string | Date | null;
    hostnames: Record<string, HostnameIssuance> | string | null;
  }>(res);
  cursor.afterId = rows.length < batch ? 0 : rows.at(-1)!.id;
  const starts: WorkflowStart[] = [];
  for (const d of rows) {
    if (d.status === 'pending' && now - new Date(d.updated_at!).getTime() < STALE_PENDING_MS) continue;
    if (d.status === 'failed') {
      const hs = typeof d.hostnames === 'string' ? JSON.parse(d.hostnames) : (d.hostnames ?? {});
      const waiting = Object.values(hs as Record<string, HostnameIssuance>).some(
        (h) => h.next_retry_at !== null && Date.parse(h.next_retry_at) > now - cfg.sweepMs,
      );
      if (waiting) continue;
    }
    const current = await currentIssued(app.db, d.id, now);
    const proxied = await proxiedHostnames(app.db, d);
    const http01 = http01Names({ dnsMode: d.dns_mode, acmeDns: d.acme_dns, delegated: d.delegated }, proxied);
    const wanted = http01.length > 0 ? http01 : wantedHostnames(d.name, proxied, d.dns_mode);
    const have = new Set(current?.hostnames ?? []);
    const covered = current !== undefined && wanted.every((w) => have.has(w));
    if (covered && renewalDue(current.notBefore, current.notAfter, cfg.renewBeforeMs) > now) continue;
    starts.push(certificatesWorkflow(cfg, d.name));
  }
  return starts;
}

/** Runs the sweep every ACME_SWEEP_SECONDS while the app runs (with Temporal and an issuer configured). */
export function scheduleCertificateSweep(app: FastifyInstance): void {
  const cfg = app.config.acme;
  if (!cfg.directoryUrl || !app.temporal.enabled) return;
  const log = app.log.child({ component: 'control-plane.acme-sweep' });
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const cursor: SweepCursor = { afterId: 0 };
  const run = async () => {
    try {
      const added = await enqueueMissingWorkflows(app.db, await sweepCertificates(app, cursor));
      if (added > 0) {
        app.workflowOutbox.nudge();
        log.info({ domains: added }, 'certificate workflows queued');
      }
    } catch (err) {
      log.warn({ err }, 'certificate sweep failed');
    }
    if (!stopped) timer = setTimeout(run, cfg.sweepMs);
  };
  app.addHook('onReady', async () => {
    timer = setTimeout(run, Math.min(cfg.sweepMs, 1000));
  });
  app.addHook('onClose', async () => {
    stopped = true;
    clearTimeout(timer);
  });
}
