// The RuleSet of a domain's snapshot: every rule (enabled and disabled) with its filters and fields as the rule body.
import { asc, desc, eq } from 'drizzle-orm';
import { encodeRuleBody, type RuleBody } from '@platform/shared/match';
import type { CachePurge, RuleSet } from '@platform/shared/config';
import type { Tx } from '../../db/index.js';
import { cachePurgeRequests, cachePurges, rules } from '../../db/schema.js';

export async function buildDomainRuleSet(tx: Tx, domain: { id: number; zoneSerial: number }): Promise<RuleSet> {
  const rows = await tx
    .select()
    .from(rules)
    .where(eq(rules.domainId, domain.id))
    .orderBy(asc(rules.priority), asc(rules.id));
  return {
    version: domain.zoneSerial,
    rules: rows.map((r) => ({
      id: r.id,
      type: r.type,
      enabled: r.enabled,
      priority: r.priority,
      body: encodeRuleBody({ ...(r.filters as RuleBody), ...r.fields }),
    })),
  };
}

/** Selective purges carried in each snapshot (nodes apply each one once, by id). */
export const SNAPSHOT_PURGES = 100;

/** The domain's cache purge state for its snapshot settings: the whole-cache generation and the recent selective purges. */
export async function cachePurgeSettings(
  tx: Tx,
  domainId: number,
): Promise<{ cachePurgeGeneration: number; cachePurges: CachePurge[] }> {
  const [row] = await tx
    .select({ g: cachePurges.generation })
    .from(cachePurges)
    .where(eq(cachePurges.domainId, domainId));
  const recent = await tx
    .select({ id: cachePurgeRequests.id, prefixes: cachePurgeRequests.prefixes, refresh: cachePurgeRequests.refresh })
    .from(cachePurgeRequests)
    .where(eq(cachePurgeRequests.domainId, domainId))
    .orderBy(desc(cachePurgeRequests.id))
    .limit(SNAPSHOT_PURGES);
  return {
    cachePurgeGeneration: row?.g ?? 0,
    cachePurges: recent.reverse().map(cachePurgeOf),
  };
}

/** A cache_purge_requests row as snapshots carry it (`refresh` only on a refresh). */
export function cachePurgeOf(r: { id: number; prefixes: string[]; refresh: boolean }): CachePurge {
  return { id: r.id, prefixes: r.prefixes, ...(r.refresh ? { refresh: true } : {}) };
}
