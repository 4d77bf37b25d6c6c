// TypeBox schemas of sharing (members, notification choices, invitations) and of the payer (billing member).
import { Type, type TSchema } from '@sinclair/typebox';
import { MEMBER_ROLES, ROLES } from '../../auth/permissions.js';
import { Id, idSegment, Nullable, StringEnum } from '../../openapi/schemas.js';

import { CATEGORY_IDS, CHANNEL_IDS, DOMAIN_CATEGORIES, NOTIFICATION_CHANNELS } from './notification-options.js';

const Timestamp = Type.String({ format: 'date-time' });
const described = <T extends TSchema>(schema: T, description: string) =>
  Type.Union([schema, Type.Null()], { description });

/** Most members (the owner aside) and pending invitations a domain holds together; admin CLI additions are not counted. */
export const MAX_MEMBERS_PER_DOMAIN = 100;
/** RFC 5321: a path holds at most 256 octets, so an address at most 254. */
export const MAX_EMAIL_LENGTH = 254;

export const MemberParams = Type.Object({
  domain: Type.String({ description: 'Domain name, percent-encoded when needed' }),
  user_id: Id("The member's user id (GET /domains/{domain}/members)"),
});
export const MEMBER_PATH = `/domains/:domain/members/${idSegment('user_id')}`;

const channelList = Type.Array(StringEnum([...CHANNEL_IDS]), {
  uniqueItems: true,
  maxItems: CHANNEL_IDS.length,
  description: 'The channels this category is sent on; [] for none',
});
const settingsProps: Record<string, TSchema> = {};
for (const c of CATEGORY_IDS) settingsProps[c] = channelList;

export const NotificationSettings = Type.Object(settingsProps, {
  title: 'NotificationSettings',
  description: 'Category → channels',
});

const settingsUpdateProps: Record<string, TSchema> = {};
for (const c of CATEGORY_IDS) settingsUpdateProps[c] = Type.Optional(channelList);
export const NotificationSettingsUpdate = Type.Object(settingsUpdateProps, {
  title: 'NotificationSettingsUpdate',
  additionalProperties: false,
  description: 'The categories given replace their channels; the others keep theirs',
});

export const DomainMember = Type.Object(
  {
    user_id: Type.Integer({ description: 'The id PUT /domains/{domain}/billing-member takes' }),
    email: Type.String(),
    name: Type.String(),
    role: StringEnum([...ROLES]),
    is_owner: Type.Boolean(),
    is_billing_member: Type.Boolean({ description: "Whether this person's wallet pays for the domain" }),
    joined_at: Timestamp,
    notifications: NotificationSettings,
    notifications_customized: Type.Boolean({ description: "false: the role's defaults" }),
  },
  { title: 'DomainMember' },
);

export const MemberList = Type.Array(DomainMember, {
  title: 'DomainMemberList',
  description: 'The owner first, then the accepted members in the order they joined',
});

export const MemberUpdate = Type.Object(
  {
    role: Type.Optional(StringEnum([...MEMBER_ROLES], { description: "The member's new role (members.manage)" })),
    notifications: Type.Optional(described(NotificationSettingsUpdate, 'null returns to the role defaults')),
  },
  {
    title: 'MemberUpdate',
    additionalProperties: false,
    minProperties: 1,
  },
);

export const NotificationOptions = Type.Object(
  {
    categories: Type.Array(Type.Object({ id: StringEnum([...CATEGORY_IDS]), description: Type.String() })),
    channels: Type.Array(
      Type.Object({
        id: StringEnum([...CHANNEL_IDS]),
        description: Type.String(),
        delivered: Type.Boolean({ description: 'false: the choice is kept but this platform sends nothing on it yet' }),
      }),
    ),
    role_defaults: Type.Object(Object.fromEntries(ROLES.map((r) => [r, NotificationSettings]))),
  },
  { title: 'NotificationOptions' },
);
export const NOTIFICATION_OPTIONS = {
  categories: DOMAIN_CATEGORIES.map((c) => ({ id: c.id, description: c.description })),
  channels: NOTIFICATION_CHANNELS.map((c) => ({ ...c })),
};

export const BillingMember = Type.Object(
  {
    user_id: Type.Integer(),
    email: Type.String(),
    name: Type.String(),
    role: StringEnum([...ROLES]),
    is_owner: Type.Boolean({ description: 'true: no nomination is in force and the owner pays' }),
    nominated: Type.Boolean({ description: 'true: a member was nominated and pays instead of the owner' }),
    nominated_at: Nullable(Timestamp),
  },
  { title: 'BillingMember', description: 'Who pays for the domain; the owner when no nomination is in force' },
);

export const BillingMemberUpdate = Type.Object(
  {
    user_id: described(
      Type.Integer({ minimum: 0, maximum: 2_147_483_647 }),
      "The accepted member to nominate; null, 0 or the owner's id clears the nomination",
    ),
  },
  { title: 'BillingMemberUpdate', additionalProperties: false, examples: [{ user_id: null }] },
);

/** PUT billing-member's 400: the Error object, with `code` `not_a_member` when the user has no accepted membership. */
export const BillingMemberError = Type.Object(
  {
    error: Type.String({ description: 'Human-readable description of what went wrong' }),
    code: Type.Optional(
      StringEnum(['not_a_member'], { description: 'Present when the user has no accepted membership on the domain' }),
    ),
  },
  { title: 'BillingMemberError', additionalProperties: true },
);

export const BillingMemberAnswer = Type.Object({ billing_member: BillingMember }, { title: 'BillingMemberAnswer' });

export const Payer = Type.Object(
  {
    domain: Type.String(),
    billing_member: BillingMember,
    subscription: described(
      Type.Object({
        id: Type.Integer(),
        plan: Type.String({ description: 'The plan slug' }),
        plan_name: Type.String(),
        price_rials: Type.Integer(),
        status: Type.String(),
        is_trial: Type.Boolean(),
        auto_renew: Type.Boolean({ description: "Renewals are charged to the billing member's wallet" }),
        expires_at: Nullable(Timestamp),
      }),
      'The live subscription the payer pays for; null when none is live',
    ),
  },
  { title: 'Payer' },
);

/** Days an invitation link stays valid (Cloudflare's are valid for 7 days); a resend starts them again. */
export const INVITATION_DAYS = 7;
/** Sends of one invitation (the first and the resends); beyond, revoke it and invite again. */
export const MAX_INVITATION_SENDS = 10;
/** `inv_` + 32 random bytes in base64url. */
export const INVITATION_TOKEN_PATTERN = '^inv_[A-Za-z0-9_-]{43}$';

export const InvitationParams = Type.Object({
  domain: Type.String({ description: 'Domain name, percent-encoded when needed' }),
  invitation_id: Id('The invitation id (GET /domains/{domain}/invitations)'),
});
export const INVITATION_PATH = `/domains/:domain/invitations/${idSegment('invitation_id')}`;

export const TokenParams = Type.Object({
  token: Type.String({
    pattern: INVITATION_TOKEN_PATTERN,
    maxLength: 47,
    description: 'The token of the invitation link, shown once to the inviter',
  }),
});

export const InvitationCreate = Type.Object(
  {
    email: Type.String({
      minLength: 3,
      maxLength: MAX_EMAIL_LENGTH,
      description: "The invitee's email address; they accept with a key of the account that has it",
    }),
    role: StringEnum([...MEMBER_ROLES], { description: 'The role the invitee gets when they accept' }),
  },
  {
    title: 'InvitationCreate',
    additionalProperties: false,
    examples: [{ email: 'colleague@example.org', role: 'viewer' }],
  },
);

const invitationFields = {
  id: Type.Integer(),
  domain: Type.String(),
  email: Type.String(),
  role: StringEnum([...MEMBER_ROLES]),
  invited_by: Nullable(Type.Object({ user_id: Type.Integer(), email: Type.String() })),
  sends: Type.Integer({ description: 'The first send and each resend' }),
  created_at: Timestamp,
  sent_at: Timestamp,
  expires_at: Timestamp,
  expired: Type.Boolean({ description: 'true: the link no longer works; resend it for a new one' }),
};

export const Invitation = Type.Object(invitationFields, {
  title: 'Invitation',
  description: 'A pending invitation: it grants nothing until the invitee accepts it',
});
export const InvitationList = Type.Array(Invitation, { title: 'InvitationList' });

export const InvitationWithLink = Type.Object(
  {
    ...invitationFields,
    token: Type.String({ description: 'Shown once: only its hash is stored. Single use; expires at expires_at' }),
    accept_url: Type.String({ description: 'POST here with a key of the invitee to accept (GET to inspect)' }),
  },
  { title: 'InvitationWithLink' },
);

export const InvitationView = Type.Object(
  {
    domain: Type.String(),
    email: Type.String(),
    role: StringEnum([...MEMBER_ROLES]),
    invited_by: Nullable(Type.Object({ user_id: Type.Integer(), email: Type.String() })),
    expires_at: Timestamp,
    expired: Type.Boolean(),
  },
  { title: 'InvitationView', description: 'What an invitation offers, as its invitee sees it' },
);

export const InvitationAccepted = Type.Object(
  { domain: Type.String(), member: DomainMember },
  { title: 'InvitationAccepted' },
);
