// The table of saved analytics queries (migrations/0040_analytics_saved_queries.sql) and its reads. Kept in this area
// (not db/schema.ts) since nothing else reads it.
import { and, asc, count, eq, isNotNull } from 'drizzle-orm';
import { boolean, doublePrecision, integer, pgTable, serial, text, timestamp } from 'drizzle-orm/pg-core';
import type { Db, Tx } from '../../db/index.js';
import { domains, users } from '../../db/schema.js';

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });

export const ALERT_OPS = ['>', '>=', '<', '<=', '=', '!='] as const;
export type AlertOp = (typeof ALERT_OPS)[number];
export const ALERT_STATES = ['unknown', 'ok', 'firing'] as const;
export type AlertState = (typeof ALERT_STATES)[number];

export const savedQueries = pgTable('analytics_saved_queries', {
  id: serial('id').primaryKey(),
  userId: integer('user_id')
    .notNull()
    .references(() => users.id, { onDelete: 'cascade' }),
  name: text('name').notNull(),
  query: text('query').notNull(),
  alertColumn: text('alert_column'),
  alertOp: text('alert_op').$type<AlertOp>(),
  alertValue: doublePrecision('alert_value'),
  intervalSeconds: integer('interval_seconds'),
  notifyFeed: boolean('notify_feed').notNull().default(false),
  webhookDomainId: integer('webhook_domain_id').references(() => domains.id, { onDelete: 'set null' }),
  notifyWebhook: boolean('notify_webhook').notNull().default(false),
  alertState: text('alert_state').$type<AlertState>().notNull().default('unknown'),
  lastEvaluatedAt: ts('last_evaluated_at'),
  lastValue: doublePrecision('last_value'),
  lastError: text('last_error'),
  lastFiredAt: ts('last_fired_at'),
  firedCount: integer('fired_count').notNull().default(0),
  nextEvaluationAt: ts('next_evaluation_at'),
  createdAt: ts('created_at').notNull().defaultNow(),
  updatedAt: ts('updated_at').notNull().defaultNow(),
});

export type SavedQueryRow = typeof savedQueries.$inferSelect;
/** A saved query with the name of its webhook's domain (null: none, or the domain was deleted). */
export type SavedQueryView = SavedQueryRow & { webhookDomain: string | null };

const viewColumns = { q: savedQueries, webhookDomain: domains.name };

function view(r: { q: SavedQueryRow; webhookDomain: string | null }): SavedQueryView {
  return { ...r.q, webhookDomain: r.webhookDomain };
}

/** The user's saved queries, oldest first. */
export async function savedQueriesOf(db: Db | Tx, userId: number): Promise<SavedQueryView[]> {
  const rows = await db
    .select(viewColumns)
    .from(savedQueries)
    .leftJoin(domains, eq(domains.id, savedQueries.webhookDomainId))
    .where(eq(savedQueries.userId, userId))
    .orderBy(asc(savedQueries.id));
  return rows.map(view);
}

/** One saved query of the user (another user's is not found). */
export async function findSavedQuery(db: Db | Tx, userId: number, id: number): Promise<SavedQueryView | undefined> {
  const [row] = await db
    .select(viewColumns)
    .from(savedQueries)
    .leftJoin(domains, eq(domains.id, savedQueries.webhookDomainId))
    .where(and(eq(savedQueries.id, id), eq(savedQueries.userId, userId)));
  return row ? view(row) : undefined;
}

/** One saved query by id alone (its alert's evaluation), locked for the caller's transaction when `tx` is given. */
export async function savedQueryById(db: Db | Tx, id: number, lock = false): Promise<SavedQueryRow | undefined> {
  const q = db.select().from(savedQueries).where(eq(savedQueries.id, id));
  const [row] = lock ? await q.for('update') : await q;
  return row;
}

export async function countSavedQueries(db: Db | Tx, userId: number): Promise<number> {
  const [row] = await db.select({ n: count() }).from(savedQueries).where(eq(savedQueries.userId, userId));
  return Number(row.n);
}

/** The ids of every saved query with an alert (their workflows are ensured at start). */
export async function alertIds(db: Db): Promise<number[]> {
  const rows = await db
    .select({ id: savedQueries.id })
    .from(savedQueries)
    .where(isNotNull(savedQueries.intervalSeconds))
    .orderBy(asc(savedQueries.id));
  return rows.map((r) => r.id);
}
