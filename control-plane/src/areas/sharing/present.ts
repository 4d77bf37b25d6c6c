// Database rows → the API bodies of sharing: DomainMember and BillingMember.
import type { Static } from '@sinclair/typebox';
import { effectiveSettings } from './notification-options.js';
import type { BillingMember, DomainMember } from './schemas.js';
import type { MemberRow } from './store.js';

/** The fields DomainMember and BillingMember share: who the person is and their role. */
function person(row: MemberRow) {
  return {
    user_id: row.userId,
    email: row.email,
    name: row.name,
    role: row.role,
    is_owner: row.role === 'owner',
  };
}

export function presentMember(row: MemberRow, payerId: number): Static<typeof DomainMember> {
  return {
    ...person(row),
    is_billing_member: row.userId === payerId,
    joined_at: row.joinedAt.toISOString(),
    notifications: effectiveSettings(row.role, row.settings),
    notifications_customized: row.settings !== null,
  };
}

/** The payer: the nominated member, or the owner (is_owner, not nominated) when no nomination is in force. */
export function presentBillingMember(row: MemberRow, nominatedAt: Date | null): Static<typeof BillingMember> {
  return {
    ...person(row),
    nominated: nominatedAt !== null,
    nominated_at: nominatedAt ? nominatedAt.toISOString() : null,
  };
}
