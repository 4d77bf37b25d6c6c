// SQL of sharing: members with their notification choices, the payer nomination, invitations.
import { and, asc, eq, sql } from 'drizzle-orm';
import type { Db, Tx } from '../../db/index.js';
import {
  domainBillingMembers,
  domainMembers,
  domainNotificationSettings,
  plans,
  subscriptions,
  users,
} from '../../db/schema.js';
import { rowsOf } from '../../db/migrate.js';
import { LIVE_STATUSES } from '../../plans/entitlements.js';
import type { MemberRole, Role } from '../../auth/permissions.js';

type Conn = Db | Tx;

export interface MemberRow {
  userId: number;
  email: string;
  name: string;
  role: Role;
  joinedAt: Date;
  settings: Record<string, string[]> | null;
}

export interface DomainRef {
  id: number;
  ownerId: number;
  createdAt: Date;
}

/** The owner (joined when the domain was created) and every accepted member, oldest first. */
export async function selectMembers(db: Conn, domain: DomainRef, userId?: number): Promise<MemberRow[]> {
  const settingsJoin = (user: typeof users.id | typeof domainMembers.userId) =>
    and(eq(domainNotificationSettings.domainId, domain.id), eq(domainNotificationSettings.userId, user));
  const wantOwner = userId === undefined || userId === domain.ownerId;
  const owner = wantOwner
    ? await db
        .select({
          userId: users.id,
          email: users.email,
          name: users.name,
          settings: domainNotificationSettings.settings,
        })
        .from(users)
        .leftJoin(domainNotificationSettings, settingsJoin(users.id))
        .where(eq(users.id, domain.ownerId))
    : [];
  const members =
    userId === domain.ownerId
      ? []
      : await db
          .select({
            userId: users.id,
            email: users.email,
            name: users.name,
            role: domainMembers.role,
            joinedAt: domainMembers.createdAt,
            settings: domainNotificationSettings.settings,
          })
          .from(domainMembers)
          .innerJoin(users, eq(users.id, domainMembers.userId))
          .leftJoin(domainNotificationSettings, settingsJoin(domainMembers.userId))
          .where(
            and(
              eq(domainMembers.domainId, domain.id),
              userId === undefined ? undefined : eq(domainMembers.userId, userId),
            ),
          )
          .orderBy(asc(domainMembers.createdAt), asc(domainMembers.userId));
  return [
    ...owner.map((o) => ({ ...o, role: 'owner' as const, joinedAt: domain.createdAt })),
    ...members.map((m) => ({ ...m, role: m.role as Role })),
  ];
}

export async function selectNomination(
  db: Conn,
  domainId: number,
): Promise<{ userId: number; nominatedAt: Date } | undefined> {
  const [row] = await db
    .select({ userId: domainBillingMembers.userId, nominatedAt: domainBillingMembers.nominatedAt })
    .from(domainBillingMembers)
    .where(eq(domainBillingMembers.domainId, domainId));
  return row;
}

/**
 * Nominates an accepted member in one statement: no membership, no row (the foreign key also refuses a membership
 * removed meanwhile). Returns whether the member is nominated now and whether that is a change.
 */
export async function upsertNomination(
  db: Conn,
  domainId: number,
  userId: number,
  by: number,
): Promise<{ nominated: boolean; changed: boolean }> {
  const result = await db.execute(sql`
    WITH previous AS (SELECT user_id FROM domain_billing_members WHERE domain_id = ${domainId})
    INSERT INTO domain_billing_members (domain_id, user_id, nominated_by, nominated_at)
    SELECT m.domain_id, m.user_id, ${by}, now() FROM domain_members m
    WHERE m.domain_id = ${domainId} AND m.user_id = ${userId}
    ON CONFLICT (domain_id) DO UPDATE SET user_id = excluded.user_id, nominated_by = excluded.nominated_by,
      nominated_at = CASE WHEN domain_billing_members.user_id = excluded.user_id
        THEN domain_billing_members.nominated_at ELSE excluded.nominated_at END
    RETURNING (SELECT user_id FROM previous) AS previous`);
  const rows = rowsOf<{ previous: number | null }>(result);
  if (rows.length === 0) return { nominated: false, changed: false };
  return { nominated: true, changed: rows[0]!.previous !== userId };
}

export async function deleteNomination(db: Conn, domainId: number): Promise<void> {
  await db.delete(domainBillingMembers).where(eq(domainBillingMembers.domainId, domainId));
}

export async function updateRole(db: Conn, domainId: number, userId: number, role: MemberRole): Promise<boolean> {
  const rows = await db
    .update(domainMembers)
    .set({ role })
    .where(and(eq(domainMembers.domainId, domainId), eq(domainMembers.userId, userId)))
    .returning({ userId: domainMembers.userId });
  return rows.length > 0;
}

export async function writeSettings(
  db: Conn,
  domainId: number,
  userId: number,
  settings: Record<string, string[]> | null,
): Promise<void> {
  if (settings === null) {
    await db
      .delete(domainNotificationSettings)
      .where(and(eq(domainNotificationSettings.domainId, domainId), eq(domainNotificationSettings.userId, userId)));
    return;
  }
  await db
    .insert(domainNotificationSettings)
    .values({ domainId, userId, settings })
    .onConflictDoUpdate({
      target: [domainNotificationSettings.domainId, domainNotificationSettings.userId],
      set: { settings, updatedAt: new Date() },
    });
}

/** Removes a membership with its notification choices (its nomination goes by the foreign key); false: none. */
export async function deleteMember(db: Tx, domainId: number, userId: number): Promise<boolean> {
  const rows = await db
    .delete(domainMembers)
    .where(and(eq(domainMembers.domainId, domainId), eq(domainMembers.userId, userId)))
    .returning({ userId: domainMembers.userId });
  if (rows.length === 0) return false;
  await writeSettings(db, domainId, userId, null);
  return true;
}

export async function selectLiveSubscription(db: Conn, domainId: number) {
  const [row] = await db
    .select({ subscription: subscriptions, plan: plans })
    .from(subscriptions)
    .innerJoin(plans, eq(plans.id, subscriptions.planId))
    .where(
      and(
        eq(subscriptions.domainId, domainId),
        sql`${subscriptions.status} IN (${sql.join(
          LIVE_STATUSES.map((s) => sql`${s}`),
          sql`, `,
        )})`,
      ),
    )
    .limit(1);
  return row;
}
