// SQL of the uptime area.
import { randomBytes } from 'node:crypto';
import { and, asc, desc, eq, inArray, sql } from 'drizzle-orm';
import type { Db, Tx } from '../../db/index.js';
import {
  domains,
  uptimeIncidents,
  uptimeMonitors,
  uptimeSettings,
  uptimeWebhookAttempts,
  uptimeWebhookDeliveries,
} from '../../db/schema.js';

/** Deliveries kept per domain in the log (older ones are pruned when a new one is recorded). */
export const DELIVERIES_KEPT = 500;
/** Deliveries GET lists (most recent first). */
export const DELIVERIES_LISTED = 100;
export const INCIDENTS_LISTED = 100;

/** A new signing secret: `whsec_` + 32 random bytes, base64url. */
export function newSigningSecret(): string {
  return `whsec_${randomBytes(32).toString('base64url')}`;
}

/** Locks the domain row for the rest of the transaction (monitor cap, one writer at a time). */
export async function lockDomain(tx: Tx, domainId: number): Promise<boolean> {
  const rows = await tx.select({ id: domains.id }).from(domains).where(eq(domains.id, domainId)).for('update');
  return rows.length > 0;
}

export async function monitorsOf(db: Db | Tx, domainId: number) {
  return db.select().from(uptimeMonitors).where(eq(uptimeMonitors.domainId, domainId)).orderBy(asc(uptimeMonitors.id));
}

export async function countMonitors(db: Db | Tx, domainId: number): Promise<number> {
  const [{ n }] = await db
    .select({ n: sql<number>`count(*)::int` })
    .from(uptimeMonitors)
    .where(eq(uptimeMonitors.domainId, domainId));
  return Number(n);
}

export async function findMonitor(db: Db | Tx, domainId: number, id: number) {
  const [row] = await db
    .select()
    .from(uptimeMonitors)
    .where(and(eq(uptimeMonitors.id, id), eq(uptimeMonitors.domainId, domainId)))
    .limit(1);
  return row;
}

/** The domain's settings row, created with defaults (and a fresh signing secret) on first use. */
export async function ensureSettings(db: Db | Tx, domainId: number) {
  await db
    .insert(uptimeSettings)
    .values({ domainId, signingSecret: newSigningSecret() })
    .onConflictDoNothing({ target: uptimeSettings.domainId });
  const [row] = await db.select().from(uptimeSettings).where(eq(uptimeSettings.domainId, domainId));
  return row;
}

export async function countPendingDeliveries(db: Db | Tx, domainId: number): Promise<number> {
  const [{ n }] = await db
    .select({ n: sql<number>`count(*)::int` })
    .from(uptimeWebhookDeliveries)
    .where(and(eq(uptimeWebhookDeliveries.domainId, domainId), eq(uptimeWebhookDeliveries.state, 'pending')));
  return Number(n);
}

/** Keeps the newest DELIVERIES_KEPT deliveries of the domain (their attempts go with them). */
export async function pruneDeliveries(tx: Tx, domainId: number): Promise<void> {
  await tx.execute(sql`
    DELETE FROM uptime_webhook_deliveries
    WHERE domain_id = ${domainId}
      AND id < (SELECT id FROM uptime_webhook_deliveries WHERE domain_id = ${domainId}
                ORDER BY id DESC OFFSET ${DELIVERIES_KEPT - 1} LIMIT 1)`);
}

export async function deliveriesWithAttempts(db: Db, domainId: number, limit: number, id?: number) {
  const rows = await db
    .select()
    .from(uptimeWebhookDeliveries)
    .where(
      id === undefined
        ? eq(uptimeWebhookDeliveries.domainId, domainId)
        : and(eq(uptimeWebhookDeliveries.domainId, domainId), eq(uptimeWebhookDeliveries.id, id)),
    )
    .orderBy(desc(uptimeWebhookDeliveries.id))
    .limit(limit);
  const attempts =
    rows.length === 0
      ? []
      : await db
          .select()
          .from(uptimeWebhookAttempts)
          .where(
            inArray(
              uptimeWebhookAttempts.deliveryId,
              rows.map((r) => r.id),
            ),
          );
  return rows.map((row) => ({ row, attempts: attempts.filter((a) => a.deliveryId === row.id) }));
}

export async function incidentsOf(db: Db, domainId: number, onlyOpen: boolean) {
  return db
    .select()
    .from(uptimeIncidents)
    .where(
      onlyOpen
        ? and(eq(uptimeIncidents.domainId, domainId), eq(uptimeIncidents.state, 'open'))
        : eq(uptimeIncidents.domainId, domainId),
    )
    .orderBy(desc(uptimeIncidents.id))
    .limit(INCIDENTS_LISTED);
}
