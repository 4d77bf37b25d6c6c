// The checklist of a domain (its verdicts with the dismissals), the account-wide reads and the one-click fixes.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { loadDomain, writeAs } from '../../auth/domain-access.js';
import { ApiError } from '../../errors.js';
import { createRecord } from '../records/service.js';
import { restoreWafDefault } from '../rules/waf-default.js';
import { CHECK_IDS, CHECKS, DMARC_FIX, evaluateChecks, type CheckedDomain, type CheckId } from './checks.js';
import { dismissalsOf, visibleDomains } from './store.js';

export type RecommendationStatus = 'outstanding' | 'dismissed' | 'passed' | 'not_applicable' | 'unavailable';

export interface Recommendation {
  id: CheckId;
  title: string;
  description: string;
  severity: 'high' | 'medium' | 'low';
  status: RecommendationStatus;
  details: Record<string, unknown>;
  reason: string | null;
  fix: { description: string; permission: string } | null;
  fixable: boolean;
  dismissed_at: string | null;
}

/** domain id → its recommendations, in CHECK_IDS order. */
export async function checklists(
  app: FastifyInstance,
  domains: readonly CheckedDomain[],
): Promise<Map<number, Recommendation[]>> {
  const [verdicts, dismissals] = await Promise.all([
    evaluateChecks(app, domains),
    dismissalsOf(
      app.db,
      domains.map((d) => d.id),
    ),
  ]);
  const out = new Map<number, Recommendation[]>();
  for (const d of domains) {
    const v = verdicts.get(d.id)!;
    const dismissed = dismissals.get(d.id);
    out.set(
      d.id,
      CHECK_IDS.map((id) => {
        const verdict = v.get(id)!;
        const info = CHECKS[id];
        const at = dismissed?.get(id) ?? null;
        const status: RecommendationStatus = verdict.status === 'outstanding' && at ? 'dismissed' : verdict.status;
        return {
          id,
          title: info.title,
          description: info.description,
          severity: info.severity,
          status,
          details: verdict.status === 'outstanding' ? verdict.details : {},
          reason: 'reason' in verdict ? verdict.reason : null,
          fix: info.fix,
          fixable: info.fix !== null && verdict.status === 'outstanding',
          dismissed_at: at ? at.toISOString() : null,
        };
      }),
    );
  }
  return out;
}

function checkedOf(domain: { id: number; name: string; dnsMode: 'managed' | 'external'; state: string }) {
  return { id: domain.id, name: domain.name, dnsMode: domain.dnsMode, state: domain.state };
}

export async function domainChecklist(app: FastifyInstance, domain: CheckedDomain): Promise<Recommendation[]> {
  return (await checklists(app, [checkedOf(domain)])).get(domain.id)!;
}

/** Domains evaluated per page of the account-wide list, and at most by the count. */
export const DOMAINS_PER_PAGE_MAX = 100;
export const COUNT_DOMAINS_MAX = 1000;
/** The count evaluates domains in batches of this many (a fixed number of statements per batch). */
const COUNT_BATCH = 200;

/** Outstanding recommendations of the caller's domains after `after` (by name), `limit` domains. */
export async function outstandingPage(app: FastifyInstance, userId: number, after: string | null, limit: number) {
  const domains = await visibleDomains(app.db, userId, after, limit + 1);
  const page = domains.slice(0, limit);
  const lists = await checklists(app, page);
  return {
    items: page.flatMap((d) =>
      lists
        .get(d.id)!
        .filter((r) => r.status === 'outstanding')
        .map((r) => ({ domain: d.name, ...r })),
    ),
    next: domains.length > limit ? page[page.length - 1].name : null,
  };
}

/** Outstanding recommendations over the caller's first COUNT_DOMAINS_MAX domains (by name). */
export async function outstandingCount(app: FastifyInstance, userId: number) {
  let after: string | null = null;
  let outstanding = 0;
  let withOutstanding = 0;
  let checked = 0;
  let complete = true;
  const bySeverity = { high: 0, medium: 0, low: 0 };
  for (;;) {
    const left = COUNT_DOMAINS_MAX - checked;
    const batch = await visibleDomains(app.db, userId, after, Math.min(COUNT_BATCH, left) + 1);
    const domains = batch.slice(0, Math.min(COUNT_BATCH, left));
    const lists = await checklists(app, domains);
    for (const d of domains) {
      const open = lists.get(d.id)!.filter((r) => r.status === 'outstanding');
      outstanding += open.length;
      if (open.length > 0) withOutstanding++;
      for (const r of open) bySeverity[r.severity]++;
    }
    checked += domains.length;
    if (batch.length <= domains.length) break;
    if (checked >= COUNT_DOMAINS_MAX) {
      complete = false;
      break;
    }
    after = domains[domains.length - 1].name;
  }
  return { outstanding, by_severity: bySeverity, domains: withOutstanding, domains_checked: checked, complete };
}

/**
 * Applies a check's one-click fix through the ordinary write path (the record create, the WAF restore: their own
 * checks, plan limits and config-log entry), then answers the check as it stands (routes exist only for the checks
 * with a fix). 400 when the check is not outstanding; the fix's permission is the write's (records.edit, rules.edit).
 */
export async function applyFix(request: FastifyRequest, domainParam: string, id: CheckId): Promise<Recommendation> {
  const app = request.server;
  const fix = CHECKS[id].fix;
  if (!fix) throw new ApiError('CP_ERR_NOT_FOUND', `${id} has no one-click fix`);
  const { domain } = await loadDomain(request, domainParam, fix.permission);
  const before = (await domainChecklist(app, checkedOf(domain))).find((r) => r.id === id)!;
  if (before.status !== 'outstanding' && before.status !== 'dismissed')
    throw new ApiError('CP_ERR_INVALID_INPUT', `nothing to fix: ${id} is ${before.status.replace('_', ' ')}`);
  if (id === 'dmarc_record')
    await createRecord(app, writeAs(request, domain.name, 'records.edit'), domain.name, { ...DMARC_FIX });
  else if (id === 'waf_off') await restoreWafDefault(app, domain);
  return (await domainChecklist(app, checkedOf(domain))).find((r) => r.id === id)!;
}
