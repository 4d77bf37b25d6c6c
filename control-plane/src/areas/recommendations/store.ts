// Recommendations' SQL: the caller's domains in name order (the account-wide reads page over them) and dismissals.
import { and, eq, sql } from 'drizzle-orm';
import type { Db } from '../../db/index.js';
import { rowsOf } from '../../db/migrate.js';
import { recommendationDismissals } from '../../db/schema.js';
import type { CheckedDomain, CheckId } from './checks.js';

/** The domains the user owns or is a member of, by name after `after`, at most `limit`. */
export async function visibleDomains(
  db: Db,
  userId: number,
  after: string | null,
  limit: number,
): Promise<CheckedDomain[]> {
  const rows = rowsOf<{ id: number; name: string; dns_mode: 'managed' | 'external'; state: string }>(
    await db.execute(sql`
      SELECT d.id, d.name, d.dns_mode, d.state FROM domains d
      WHERE (d.owner_id = ${userId} OR EXISTS (
          SELECT 1 FROM domain_members m WHERE m.domain_id = d.id AND m.user_id = ${userId}))
        AND d.name > ${after ?? ''}
      ORDER BY d.name LIMIT ${limit}`),
  );
  return rows.map((r) => ({ id: r.id, name: r.name, dnsMode: r.dns_mode, state: r.state }));
}

/** domain id → check → when it was dismissed. */
export async function dismissalsOf(db: Db, domainIds: readonly number[]): Promise<Map<number, Map<string, Date>>> {
  const out = new Map<number, Map<string, Date>>();
  if (domainIds.length === 0) return out;
  const rows = rowsOf<{ domain_id: number; check_id: string; dismissed_at: string | Date }>(
    await db.execute(sql`
      SELECT domain_id, check_id, dismissed_at FROM recommendation_dismissals
      WHERE domain_id = ANY(${`{${domainIds.join(',')}}`}::int[])`),
  );
  for (const r of rows) {
    const m = out.get(r.domain_id) ?? new Map<string, Date>();
    m.set(r.check_id, new Date(r.dismissed_at));
    out.set(r.domain_id, m);
  }
  return out;
}

export async function dismiss(db: Db, domainId: number, checkId: CheckId, userId: number): Promise<void> {
  await db.insert(recommendationDismissals).values({ domainId, checkId, dismissedBy: userId }).onConflictDoNothing();
}

/** Returns whether a dismissal was there to remove. */
export async function restore(db: Db, domainId: number, checkId: CheckId): Promise<boolean> {
  const rows = await db
    .delete(recommendationDismissals)
    .where(and(eq(recommendationDismissals.domainId, domainId), eq(recommendationDismissals.checkId, checkId)))
    .returning({ id: recommendationDismissals.checkId });
  return rows.length > 0;
}
