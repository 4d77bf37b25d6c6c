// Invitations: a pending invitation grants nothing; its link carries a single-use token (only its sha256 is stored)
// that expires after INVITATION_DAYS. The inviter (members.manage) sees the token once, at invite and at each resend
// (which replaces it); the invitee inspects and accepts with a key of the account that has the invited address.
import { randomBytes } from 'node:crypto';
import type { Static } from '@sinclair/typebox';
import { eq, sql } from 'drizzle-orm';
import type { Db, Tx } from '../../db/index.js';
import { domainInvitations } from '../../db/schema.js';
import { ApiError } from '../../errors.js';
import { hashKey } from '../../auth/api-keys.js';
import type { MemberRole } from '../../auth/permissions.js';
import { normalizeEmail } from '../../admin/users.js';
import { isUniqueViolation } from '../domains/service.js';
import { notify } from '../notifications/store.js';
import {
  INVITATION_DAYS,
  MAX_INVITATION_SENDS,
  MAX_MEMBERS_PER_DOMAIN,
  type Invitation,
  type InvitationCreate,
  type InvitationView,
} from './schemas.js';
import {
  insertMember,
  isPersonOnDomain,
  lockAndCount,
  selectInvitationByToken,
  selectInvitations,
  selectMembers,
  userIdByEmail,
  type InvitationRow,
} from './store.js';
import { presentMember } from './present.js';
import type { SharedDomain } from './service.js';

const DAY_MS = 86_400_000;

function newToken(): { token: string; tokenHash: string } {
  const token = `inv_${randomBytes(32).toString('base64url')}`;
  return { token, tokenHash: hashKey(token) };
}

const notFound = () => new ApiError('CP_ERR_NOT_FOUND', 'invitation not found');

function presentInvitation(domain: { name: string }, row: InvitationRow, now = new Date()): Static<typeof Invitation> {
  return {
    id: row.id,
    domain: domain.name,
    email: row.email,
    role: row.role,
    invited_by: row.invitedBy !== null && row.inviterEmail ? { user_id: row.invitedBy, email: row.inviterEmail } : null,
    sends: row.sends,
    created_at: row.createdAt.toISOString(),
    sent_at: row.sentAt.toISOString(),
    expires_at: row.expiresAt.toISOString(),
    expired: row.expiresAt <= now,
  };
}

function withLink(baseUrl: string, invitation: Static<typeof Invitation>, token: string) {
  return { ...invitation, token, accept_url: `${baseUrl}/invitations/${token}` };
}

export async function listInvitations(db: Db, domain: SharedDomain) {
  return (await selectInvitations(db, domain.id)).map((r) => presentInvitation(domain, r));
}

/** Tells the invitee, when the address has an account, that an invitation waits (the link goes by the inviter). */
async function notifyInvitee(db: Db, domain: SharedDomain, row: { email: string; role: string; id: number }) {
  const userId = await userIdByEmail(db, row.email);
  if (userId === undefined) return;
  await notify(db, {
    userId,
    category: 'sharing',
    kind: 'sharing.invited',
    title: `You are invited to ${domain.name} as ${row.role}`,
    body: 'Open the invitation link you were given to accept it; it grants nothing until you do.',
    domain: domain.name,
    data: { invitation_id: row.id, role: row.role },
  });
}

/**
 * POST invitations: refuses an address already on the domain or already invited (409), and a domain at
 * MAX_MEMBERS_PER_DOMAIN members and invitations (400), counted under the domain's row lock.
 */
export async function invite(
  db: Db,
  baseUrl: string,
  domain: SharedDomain,
  inviterId: number,
  body: Static<typeof InvitationCreate>,
) {
  const email = normalizeEmail(body.email);
  const { token, tokenHash } = newToken();
  const row = await db
    .transaction(async (tx) => {
      if ((await lockAndCount(tx, domain.id)) >= MAX_MEMBERS_PER_DOMAIN)
        throw new ApiError(
          'CP_ERR_INVALID_INPUT',
          `a domain has at most ${MAX_MEMBERS_PER_DOMAIN} members and pending invitations; revoke an invitation or remove a member first`,
        );
      if (await isPersonOnDomain(tx, domain, email))
        throw new ApiError('CP_ERR_CONFLICT', `${email} is already a member of ${domain.name}`);
      const [inserted] = await tx
        .insert(domainInvitations)
        .values({
          domainId: domain.id,
          email,
          role: body.role as MemberRole,
          tokenHash,
          invitedBy: inviterId,
          expiresAt: new Date(Date.now() + INVITATION_DAYS * DAY_MS),
        })
        .returning();
      return inserted!;
    })
    .catch((err: unknown) => {
      if (isUniqueViolation(err))
        throw new ApiError(
          'CP_ERR_CONFLICT',
          `${email} is already invited to ${domain.name}; resend or revoke that invitation`,
        );
      throw err;
    });
  await notifyInvitee(db, domain, row);
  const [full] = await selectInvitations(db, domain.id, row.id);
  return withLink(baseUrl, presentInvitation(domain, full!), token);
}

export async function revokeInvitation(db: Db, domain: SharedDomain, id: number): Promise<void> {
  const rows = await db
    .delete(domainInvitations)
    .where(sql`${domainInvitations.id} = ${id} AND ${domainInvitations.domainId} = ${domain.id}`)
    .returning({ id: domainInvitations.id });
  if (rows.length === 0) throw notFound();
}

/** A new token (the old link stops working) and a new expiry; at most MAX_INVITATION_SENDS sends. */
export async function resendInvitation(db: Db, baseUrl: string, domain: SharedDomain, id: number) {
  const { token, tokenHash } = newToken();
  const rows = await db
    .update(domainInvitations)
    .set({
      tokenHash,
      sends: sql`${domainInvitations.sends} + 1`,
      sentAt: new Date(),
      expiresAt: new Date(Date.now() + INVITATION_DAYS * DAY_MS),
    })
    .where(
      sql`${domainInvitations.id} = ${id} AND ${domainInvitations.domainId} = ${domain.id}
        AND ${domainInvitations.sends} < ${MAX_INVITATION_SENDS}`,
    )
    .returning();
  if (rows.length === 0) {
    if ((await selectInvitations(db, domain.id, id)).length === 0) throw notFound();
    throw new ApiError(
      'CP_ERR_INVALID_INPUT',
      `invitation ${id} was sent ${MAX_INVITATION_SENDS} times; revoke it and invite again`,
    );
  }
  await notifyInvitee(db, domain, rows[0]!);
  const [full] = await selectInvitations(db, domain.id, id);
  return withLink(baseUrl, presentInvitation(domain, full!), token);
}

/** The invitee's own account address must be the invited one (403 otherwise): a link passed on is not a grant. */
async function checkInvitee(db: Db | Tx, userId: number, invitedEmail: string): Promise<void> {
  const id = await userIdByEmail(db, invitedEmail);
  if (id !== userId)
    throw new ApiError(
      'CP_ERR_NOT_INVITEE',
      'this invitation is addressed to another email address; accept it with a key of that account',
    );
}

export async function inspectInvitation(db: Db, userId: number, token: string): Promise<Static<typeof InvitationView>> {
  const found = await selectInvitationByToken(db, hashKey(token), false);
  if (!found) throw notFound();
  await checkInvitee(db, userId, found.invitation.email);
  const full = presentInvitation(found.domain, found.invitation);
  return {
    domain: full.domain,
    email: full.email,
    role: full.role,
    invited_by: full.invited_by,
    expires_at: full.expires_at,
    expired: full.expired,
  };
}

/**
 * Accepts: in one transaction the invitation (locked) is deleted and the membership inserted with its role; an
 * expired one is 409 and stays for a resend. Already the owner or a member: 409, and the invitation is used up.
 */
export async function acceptInvitation(db: Db, userId: number, token: string) {
  const outcome = await db.transaction(async (tx) => {
    const found = await selectInvitationByToken(tx, hashKey(token), true);
    if (!found) throw notFound();
    await checkInvitee(tx, userId, found.invitation.email);
    if (found.invitation.expiresAt <= new Date())
      throw new ApiError(
        'CP_ERR_CONFLICT',
        `invitation expired at ${found.invitation.expiresAt.toISOString()}; ask for it to be resent`,
      );
    await tx.delete(domainInvitations).where(eq(domainInvitations.id, found.invitation.id));
    const added =
      userId !== found.domain.ownerId && (await insertMember(tx, found.domain.id, userId, found.invitation.role));
    if (!added) return { domain: found.domain, joined: false };
    if (found.invitation.invitedBy !== null)
      await notify(tx, {
        userId: found.invitation.invitedBy,
        category: 'sharing',
        kind: 'sharing.accepted',
        title: `${found.invitation.email} joined ${found.domain.name} as ${found.invitation.role}`,
        domain: found.domain.name,
        data: { user_id: userId, role: found.invitation.role },
      });
    return { domain: found.domain, joined: true };
  });
  if (!outcome.joined)
    throw new ApiError('CP_ERR_CONFLICT', `you are already on ${outcome.domain.name}; the invitation is used up`);
  const [row] = await selectMembers(db, outcome.domain, userId);
  return { domain: outcome.domain.name, member: presentMember(row!, -1) };
}
