// Billable traffic over a quota window (the subscription read's quota_period_used_bytes): the rows the analytics store
// keeps, plus, for the time before them, the hourly sums the retention sweep wrote before it deleted older rows
// (analytics_traffic_hours; migration 0023). A quota window is 30 days; the free plan keeps its rows 3.
import type { FastifyInstance } from 'fastify';
import { and, eq, gte, lt, sql } from 'drizzle-orm';
import { analyticsRolledUp, analyticsTrafficHours } from '../../db/schema.js';
import type { ReadRange } from './reads.js';

const HOUR = 3_600_000;
/** Hourly sums older than this are deleted by the sweep: two quota windows. */
export const TRAFFIC_HOURS_KEEP_MS = 62 * 86_400_000;
/** The sweep's own time limit for summing a domain's rows (the first sweep may sum months of them). */
const ROLL_UP_TIMEOUT_MS = 600_000;
const UPSERT_CHUNK = 500;

/**
 * Sums a domain's rows older than `cutoff` (and not summed before) into hourly billable totals, then records that
 * they were: called by the retention sweep before it deletes those rows. Rows that arrive later with a time before an
 * earlier cutoff are deleted without being summed (the edge ships within seconds; a node gives up after a day).
 */
export async function rollUpTraffic(app: FastifyInstance, domainId: number, cutoff: Date): Promise<void> {
  const [done] = await app.db.select().from(analyticsRolledUp).where(eq(analyticsRolledUp.domainId, domainId));
  const from = done?.rolledUntil ?? new Date(0);
  if (from.getTime() >= cutoff.getTime()) return;
  const range: ReadRange = { since: from, until: cutoff, filter: {} };
  const buckets = await app.analytics.store.traffic([domainId], range, 0, HOUR, ROLL_UP_TIMEOUT_MS);
  const rows = buckets
    .filter((b) => b.requests > 0)
    .map((b) => ({ domainId, hour: new Date(b.bucket * HOUR), bytes: b.bytes, billableBytes: b.billableBytes }));
  await app.db.transaction(async (tx) => {
    for (let i = 0; i < rows.length; i += UPSERT_CHUNK)
      await tx
        .insert(analyticsTrafficHours)
        .values(rows.slice(i, i + UPSERT_CHUNK))
        .onConflictDoUpdate({
          target: [analyticsTrafficHours.domainId, analyticsTrafficHours.hour],
          set: {
            bytes: sql`${analyticsTrafficHours.bytes} + excluded.bytes`,
            billableBytes: sql`${analyticsTrafficHours.billableBytes} + excluded.billable_bytes`,
          },
        });
    await tx
      .insert(analyticsRolledUp)
      .values({ domainId, rolledUntil: cutoff })
      .onConflictDoUpdate({ target: analyticsRolledUp.domainId, set: { rolledUntil: cutoff } });
  });
}

/** Deletes hourly sums older than TRAFFIC_HOURS_KEEP_MS. */
export async function pruneTrafficHours(app: FastifyInstance, now = new Date()): Promise<void> {
  await app.db
    .delete(analyticsTrafficHours)
    .where(lt(analyticsTrafficHours.hour, new Date(now.getTime() - TRAFFIC_HOURS_KEEP_MS)));
}

/**
 * Billable bytes of a domain from `since` to `until` (docs/decisions.md "Billable traffic"): the hourly sums of rows
 * the retention deleted (the hour holding `since` counts whole) and the store's rows after them.
 */
export async function billableBytes(
  app: FastifyInstance,
  domainId: number,
  since: Date,
  until = new Date(),
): Promise<number> {
  if (since.getTime() >= until.getTime()) return 0;
  const [done] = await app.db.select().from(analyticsRolledUp).where(eq(analyticsRolledUp.domainId, domainId));
  let total = 0;
  if (done && since.getTime() < done.rolledUntil.getTime()) {
    const [r] = await app.db
      .select({ n: sql<string | null>`sum(${analyticsTrafficHours.billableBytes})` })
      .from(analyticsTrafficHours)
      .where(
        and(
          eq(analyticsTrafficHours.domainId, domainId),
          gte(analyticsTrafficHours.hour, new Date(Math.floor(since.getTime() / HOUR) * HOUR)),
          lt(analyticsTrafficHours.hour, done.rolledUntil),
        ),
      );
    total += Number(r?.n ?? 0);
  }
  const from = new Date(Math.max(since.getTime(), done?.rolledUntil.getTime() ?? 0));
  if (from.getTime() >= until.getTime()) return total;
  const span = until.getTime() - from.getTime();
  const buckets = await app.analytics.store.traffic(
    [domainId],
    { since: from, until, filter: {} },
    from.getTime(),
    span,
    app.config.analytics.queryTimeoutMs,
  );
  return total + buckets.reduce((a, b) => a + b.billableBytes, 0);
}
