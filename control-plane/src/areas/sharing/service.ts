// Sharing and the payer: who may do what is decided here, on the caller's role (auth/permissions.ts) and the target.
import type { Static } from '@sinclair/typebox';
import type { Db, Tx } from '../../db/index.js';
import { ApiError } from '../../errors.js';
import { assertPermission } from '../../auth/domain-access.js';
import type { MemberRole, Role } from '../../auth/permissions.js';
import { CATEGORY_IDS, effectiveSettings } from './notification-options.js';
import { presentBillingMember, presentMember } from './present.js';
import type { BillingMember, DomainMember, MemberUpdate } from './schemas.js';
import {
  deleteMember,
  deleteNomination,
  selectLiveSubscription,
  selectMembers,
  selectNomination,
  updateRole,
  upsertNomination,
  writeSettings,
  type DomainRef,
  type MemberRow,
} from './store.js';
import { notifyPayerNominated } from './notify.js';

export interface SharedDomain extends DomainRef {
  name: string;
}

/** The caller on the domain: their user id and role (from loadDomain). */
export interface Caller {
  userId: number;
  role: Role;
}

const memberNotFound = (userId: number) =>
  new ApiError('CP_ERR_NOT_FOUND', `user ${userId} is not a member of this domain`);

export async function listMembers(db: Db, domain: SharedDomain): Promise<Static<typeof DomainMember>[]> {
  const [rows, nomination] = await Promise.all([selectMembers(db, domain), selectNomination(db, domain.id)]);
  const payerId = nomination?.userId ?? domain.ownerId;
  return rows.map((r) => presentMember(r, payerId));
}

async function memberOf(db: Db | Tx, domain: SharedDomain, userId: number): Promise<MemberRow> {
  const [row] = await selectMembers(db, domain, userId);
  if (!row) throw memberNotFound(userId);
  return row;
}

/**
 * PATCH a member: a role change needs members.manage and never touches the owner (whose role is not a member's);
 * notifications are the person's own to choose, or anyone's with members.manage. Both in one transaction.
 */
export async function updateMember(
  db: Db,
  domain: SharedDomain,
  caller: Caller,
  userId: number,
  body: Static<typeof MemberUpdate>,
): Promise<Static<typeof DomainMember>> {
  if (body.role !== undefined) assertPermission(caller.role, 'members.manage');
  if (body.notifications !== undefined && userId !== caller.userId) assertPermission(caller.role, 'members.manage');
  await db.transaction(async (tx) => {
    const target = await memberOf(tx, domain, userId);
    if (body.role !== undefined) {
      if (target.role === 'owner')
        throw new ApiError('CP_ERR_INVALID_INPUT', "the owner's role cannot be changed: the owner is not a member");
      if (!(await updateRole(tx, domain.id, userId, body.role as MemberRole))) throw memberNotFound(userId);
    }
    if (body.notifications !== undefined) {
      const role = (body.role as Role | undefined) ?? target.role;
      let settings: Record<string, string[]> | null = null;
      if (body.notifications !== null) {
        const current = effectiveSettings(role, target.settings);
        settings = {};
        const given = body.notifications as Partial<Record<string, string[]>>;
        for (const c of CATEGORY_IDS) settings[c] = given[c] ?? current[c] ?? [];
      }
      await writeSettings(tx, domain.id, userId, settings);
    }
  });
  const [row, nomination] = await Promise.all([memberOf(db, domain, userId), selectNomination(db, domain.id)]);
  return presentMember(row, nomination?.userId ?? domain.ownerId);
}

/**
 * Removes a member (their nomination as payer goes with them: the owner pays again). Anyone may leave; removing
 * someone else needs members.manage; the owner cannot be removed. caller null: support (the admin command line).
 */
export async function removeMember(db: Db, domain: SharedDomain, caller: Caller | null, userId: number): Promise<void> {
  if (caller && userId !== caller.userId) assertPermission(caller.role, 'members.manage');
  if (userId === domain.ownerId)
    throw new ApiError(
      'CP_ERR_INVALID_INPUT',
      'the owner cannot be removed from the domain; delete the domain instead',
    );
  const removed = await db.transaction((tx) => deleteMember(tx, domain.id, userId));
  if (!removed) throw memberNotFound(userId);
}

/** The BillingMember in force: the nominated member, else the owner. */
export async function billingMemberOf(db: Db | Tx, domain: SharedDomain): Promise<Static<typeof BillingMember>> {
  const nomination = await selectNomination(db, domain.id);
  if (nomination) {
    const [row] = await selectMembers(db, domain, nomination.userId);
    if (row) return presentBillingMember(row, nomination.nominatedAt);
  }
  const owner = await memberOf(db, domain, domain.ownerId);
  return presentBillingMember(owner, null);
}

/**
 * PUT billing-member (spec "Domains"): null, 0 or the owner's id clears the nomination; any other id must be an
 * accepted member (400 `not_a_member` otherwise, nothing changed). In force at once; a new nominee is notified in
 * the same transaction. The route has checked billing.manage (owner only).
 */
export async function setBillingMember(
  db: Db,
  domain: SharedDomain,
  callerId: number,
  userId: number | null,
): Promise<Static<typeof BillingMember>> {
  return db.transaction(async (tx) => {
    if (userId === null || userId === 0 || userId === domain.ownerId) {
      await deleteNomination(tx, domain.id);
    } else {
      let outcome;
      try {
        outcome = await upsertNomination(tx, domain.id, userId, callerId);
      } catch (err) {
        if (!isForeignKeyViolation(err)) throw err;
        outcome = { nominated: false, changed: false };
      }
      if (!outcome.nominated)
        throw new ApiError(
          'not_a_member',
          `user ${userId} has no accepted membership on ${domain.name}: only the owner or an accepted member can pay for it`,
          { code: 'not_a_member' },
        );
      if (outcome.changed) await notifyPayerNominated(tx, { domain, nomineeId: userId, byUserId: callerId });
    }
    return billingMemberOf(tx, domain);
  });
}

/** GET payer: the billing member and the live subscription they pay for. */
export async function payerOf(db: Db, domain: SharedDomain) {
  const [billing, live] = await Promise.all([billingMemberOf(db, domain), selectLiveSubscription(db, domain.id)]);
  return {
    domain: domain.name,
    billing_member: billing,
    subscription: live
      ? {
          id: live.subscription.id,
          plan: live.plan.slug,
          plan_name: live.plan.name,
          price_rials: live.plan.priceRials,
          status: live.subscription.status,
          is_trial: live.subscription.isTrial,
          auto_renew: live.subscription.autoRenew,
          expires_at: live.subscription.expiresAt ? live.subscription.expiresAt.toISOString() : null,
        }
      : null,
  };
}

function isForeignKeyViolation(err: unknown): boolean {
  for (let e = err as { code?: unknown; cause?: unknown } | undefined; e; e = e.cause as typeof e) {
    if (e.code === '23503') return true;
  }
  return false;
}
