// The RuleSet of a domain's snapshot: every rule (enabled and disabled) with its filters and fields as the rule body.
import { asc, eq } from 'drizzle-orm';
import { encodeRuleBody, type RuleBody } from '@platform/shared/match/index.js';
import type { RuleSet } from '@platform/shared';
import type { Tx } from '../db/index.js';
import { cachePurges, rules } from '../db/schema.js';

export async function buildDomainRuleSet(tx: Tx, domain: { id: number; zoneSerial: number }): Promise<RuleSet> {
  const rows = await tx.select().from(rules).where(eq(rules.domainId, domain.id)).orderBy(asc(rules.priority), asc(rules.id));
  return {
    version: domain.zoneSerial,
    rules: rows.map((r) => ({
      id: r.id, type: r.type, enabled: r.enabled, priority: r.priority,
      body: encodeRuleBody({ ...(r.filters as RuleBody), ...r.fields }),
    })),
  };
}

/** The domain's cache purge generation: edge nodes drop the domain's cache whenever it changes. */
export async function cachePurgeGeneration(tx: Tx, domainId: number): Promise<number> {
  const [row] = await tx.select({ g: cachePurges.generation }).from(cachePurges).where(eq(cachePurges.domainId, domainId));
  return row?.g ?? 0;
}
