// SQL of sharing: members with their notification choices, the payer nomination, invitations.
import { and, asc, eq, sql } from 'drizzle-orm';
import type { Db, Tx } from '../../db/index.js';
import {
  domainBillingMembers,
  domainInvitations,
  domainMembers,
  domains,
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

export type InvitationRow = typeof domainInvitations.$inferSelect & { inviterEmail: string | null };

const invitationColumns = { invitation: domainInvitations, inviterEmail: users.email };

/** A domain's invitations, oldest first, with the inviter's address. */
export async function selectInvitations(db: Conn, domainId: number, id?: number): Promise<InvitationRow[]> {
  const rows = await db
    .select(invitationColumns)
    .from(domainInvitations)
    .leftJoin(users, eq(users.id, domainInvitations.invitedBy))
    .where(and(eq(domainInvitations.domainId, domainId), id === undefined ? undefined : eq(domainInvitations.id, id)))
    .orderBy(asc(domainInvitations.id));
  return rows.map((r) => ({ ...r.invitation, inviterEmail: r.inviterEmail }));
}

/** The invitation a token names, with its domain's name, locked for the accept that may follow. */
export async function selectInvitationByToken(db: Conn, tokenHash: string, lock: boolean) {
  const query = db
    .select({
      ...invitationColumns,
      domain: { id: domains.id, name: domains.name, ownerId: domains.ownerId, createdAt: domains.createdAt },
    })
    .from(domainInvitations)
    .innerJoin(domains, eq(domains.id, domainInvitations.domainId))
    .leftJoin(users, eq(users.id, domainInvitations.invitedBy))
    .where(eq(domainInvitations.tokenHash, tokenHash));
  const [row] = lock ? await query.for('update', { of: domainInvitations }) : await query;
  return row ? { invitation: { ...row.invitation, inviterEmail: row.inviterEmail }, domain: row.domain } : undefined;
}

/** Members (the owner aside) and invitations of a domain, counted under the domain's row lock. */
export async function lockAndCount(tx: Tx, domainId: number): Promise<number> {
  // Two statements: under READ COMMITTED a statement's subqueries read the snapshot taken before its FOR UPDATE
  // waited, so a count in the locking statement misses the rows the previous lock holder committed.
  await tx.execute(sql`SELECT 1 FROM domains WHERE id = ${domainId} FOR UPDATE`);
  const result = await tx.execute(sql`
    SELECT (SELECT count(*) FROM domain_members WHERE domain_id = ${domainId})
      + (SELECT count(*) FROM domain_invitations WHERE domain_id = ${domainId}) AS n`);
  return Number(rowsOf<{ n: number | string }>(result)[0]?.n ?? 0);
}

/** Whether the address belongs to the owner or an accepted member of the domain. */
export async function isPersonOnDomain(db: Conn, domain: DomainRef, email: string): Promise<boolean> {
  const result = await db.execute(sql`
    SELECT 1 FROM users u WHERE u.email = ${email}
      AND (u.id = ${domain.ownerId} OR EXISTS (
        SELECT 1 FROM domain_members m WHERE m.domain_id = ${domain.id} AND m.user_id = u.id))`);
  return rowsOf(result).length > 0;
}

export async function userIdByEmail(db: Conn, email: string): Promise<number | undefined> {
  const [row] = await db.select({ id: users.id }).from(users).where(eq(users.email, email)).limit(1);
  return row?.id;
}

export async function insertMember(tx: Tx, domainId: number, userId: number, role: MemberRole): Promise<boolean> {
  const rows = await tx
    .insert(domainMembers)
    .values({ domainId, userId, role })
    .onConflictDoNothing()
    .returning({ userId: domainMembers.userId });
  return rows.length > 0;
}
