// The notification feed's SQL. notify/notifyDomain run on a transaction or the database handle: a write that
// causes an event calls them inside its own transaction, so the notice is stored exactly when the change is.
import { and, desc, eq, inArray, isNull, lt, sql } from 'drizzle-orm';
import type { Db, Tx } from '../../db/index.js';
import { rowsOf } from '../../db/migrate.js';
import { notifications } from '../../db/schema.js';
import { defaultRolesOf, type NotificationCategory } from './categories.js';

/** Notifications kept per user; the oldest beyond are deleted as new ones arrive. */
export const MAX_NOTIFICATIONS_PER_USER = 1000;
export const MAX_TITLE_CHARS = 200;
export const MAX_BODY_CHARS = 2000;
/** `data` holds small facts (ids, names); a larger object is stored as {}. */
const MAX_DATA_BYTES = 4096;

export type NotificationRow = typeof notifications.$inferSelect;

export interface Notice {
  category: NotificationCategory;
  /** What happened, dotted: `domain.activated`, `ssl.issued`, `uptime.opened`, `billing.payer_nominated`, … */
  kind: string;
  title: string;
  body?: string;
  /** The domain's name, when the event is about one. */
  domain?: string | null;
  data?: Record<string, unknown>;
  /** Stores the notice once per recipient and key: an event reported twice (a retried activity) notifies once. */
  dedupeKey?: string;
}

function valuesOf(notice: Notice) {
  const data = notice.data ?? {};
  return {
    category: notice.category,
    kind: notice.kind.slice(0, 100),
    title: notice.title.slice(0, MAX_TITLE_CHARS),
    body: (notice.body ?? '').slice(0, MAX_BODY_CHARS),
    domain: notice.domain ?? null,
    data: JSON.stringify(data).length <= MAX_DATA_BYTES ? data : {},
    dedupeKey: notice.dedupeKey?.slice(0, 200) ?? null,
  };
}

/**
 * Notifies one user (the payer, a ticket's author, an invitee). Returns whether a row was stored (false: the dedupe
 * key was seen before). Inside the caller's transaction when given one.
 */
export async function notify(db: Db | Tx, notice: Notice & { userId: number }): Promise<boolean> {
  const inserted = await db
    .insert(notifications)
    .values({ userId: notice.userId, ...valuesOf(notice) })
    .onConflictDoNothing()
    .returning({ id: notifications.id });
  if (inserted.length > 0) await prune(db, [notice.userId]);
  return inserted.length > 0;
}

/**
 * Notifies the people of a domain who receive its events of the notice's category: the owner and each member whose
 * choice for the category (areas/sharing, domain_notification_settings) holds the feed, or, without a choice, whose
 * role is among the category's default roles (categories.ts). One statement picks the recipients and inserts;
 * `domain` defaults to the domain's name.
 * Returns the user ids notified.
 */
export async function notifyDomain(db: Db | Tx, domainId: number, notice: Notice): Promise<number[]> {
  const roles = defaultRolesOf(notice.category);
  if (roles.length === 0) return [];
  const v = valuesOf(notice);
  const res = await db.execute(sql`
    INSERT INTO notifications (user_id, category, kind, title, body, domain, data, dedupe_key)
    SELECT r.user_id, ${v.category}, ${v.kind}, ${v.title}, ${v.body},
      COALESCE(${v.domain}::text, (SELECT name FROM domains WHERE id = ${domainId})), ${JSON.stringify(v.data)}::jsonb,
      ${v.dedupeKey}
    FROM (
      SELECT owner_id AS user_id, 'owner' AS role FROM domains WHERE id = ${domainId}
      UNION ALL
      SELECT m.user_id, m.role FROM domain_members m WHERE m.domain_id = ${domainId}
    ) r
    LEFT JOIN domain_notification_settings s ON s.domain_id = ${domainId} AND s.user_id = r.user_id
    WHERE CASE WHEN s.settings -> ${v.category} IS NOT NULL THEN (s.settings -> ${v.category}) @> '["feed"]'::jsonb
      ELSE r.role = ANY(${`{${roles.join(',')}}`}::text[]) END
    ON CONFLICT DO NOTHING
    RETURNING user_id`);
  const users = rowsOf<{ user_id: number }>(res).map((r) => r.user_id);
  if (users.length > 0) await prune(db, users);
  return users;
}

/** Deletes each user's notifications beyond the newest MAX_NOTIFICATIONS_PER_USER (an index range each). */
async function prune(db: Db | Tx, userIds: readonly number[]): Promise<void> {
  for (const userId of userIds)
    await db.execute(sql`
      DELETE FROM notifications WHERE user_id = ${userId} AND id < (
        SELECT id FROM notifications WHERE user_id = ${userId}
        ORDER BY id DESC OFFSET ${MAX_NOTIFICATIONS_PER_USER - 1} LIMIT 1)`);
}

export interface ListOptions {
  limit: number;
  /** Only notifications older than this id (the previous page's next_cursor). */
  before?: number;
  unread?: boolean;
  category?: NotificationCategory;
}

/** A page of the user's notifications, newest first; one row more than `limit` is read to know whether more follow. */
export async function listNotifications(db: Db, userId: number, o: ListOptions): Promise<NotificationRow[]> {
  return db
    .select()
    .from(notifications)
    .where(
      and(
        eq(notifications.userId, userId),
        o.before !== undefined ? lt(notifications.id, o.before) : undefined,
        o.unread ? isNull(notifications.readAt) : undefined,
        o.category ? eq(notifications.category, o.category) : undefined,
      ),
    )
    .orderBy(desc(notifications.id))
    .limit(o.limit + 1);
}

export async function unreadCount(db: Db | Tx, userId: number): Promise<number> {
  const [row] = await db
    .select({ n: sql<number>`count(*)::int` })
    .from(notifications)
    .where(and(eq(notifications.userId, userId), isNull(notifications.readAt)));
  return row.n;
}

/** Marks the given notifications of the user (others' ids are ignored), or all of them, as read. */
export async function markRead(db: Db, userId: number, ids: readonly number[] | 'all'): Promise<number> {
  const rows = await db
    .update(notifications)
    .set({ readAt: sql`now()` })
    .where(
      and(
        eq(notifications.userId, userId),
        isNull(notifications.readAt),
        ids === 'all' ? undefined : inArray(notifications.id, [...ids]),
      ),
    )
    .returning({ id: notifications.id });
  return rows.length;
}
