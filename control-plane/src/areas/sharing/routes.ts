// Sharing (spec "Further operations": Sharing) and the payer (PUT billing-member, GET payer, GET members).
// Paths are ours where the spec shows none (docs/decisions.md "Sharing"); who may do what: auth/permissions.ts.
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { loadDomain } from '../../auth/domain-access.js';
import { errorResponses, MessageBody } from '../../openapi/schemas.js';
import { DomainParams } from '../domains/schemas.js';
import { ROLE_DEFAULTS } from './notification-options.js';
import {
  BillingMemberAnswer,
  BillingMemberError,
  BillingMemberUpdate,
  MEMBER_PATH,
  MemberList,
  MemberParams,
  MemberUpdate,
  NOTIFICATION_OPTIONS,
  NotificationOptions,
  Payer,
  DomainMember,
  INVITATION_PATH,
  InvitationAccepted,
  InvitationCreate,
  InvitationList,
  InvitationParams,
  InvitationView,
  InvitationWithLink,
  TokenParams,
} from './schemas.js';
import {
  acceptInvitation,
  inspectInvitation,
  invite,
  listInvitations,
  resendInvitation,
  revokeInvitation,
} from './invitations.js';
import { listMembers, payerOf, removeMember, setBillingMember, updateMember, type SharedDomain } from './service.js';

export default async function sharingRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['sharing'];

  app.get(
    '/domains/:domain/members',
    {
      schema: {
        summary: 'Members of the domain: the owner and every accepted member, with role and notifications',
        description: 'Any role. The user ids are those PUT /domains/{domain}/billing-member takes.',
        tags,
        params: DomainParams,
        response: { 200: MemberList, ...errorResponses(404) },
      },
    },
    async (request) => {
      const { domain } = await loadDomain(request, request.params.domain, 'domain.view');
      return listMembers(app.db, domain);
    },
  );

  app.get(
    '/domains/:domain/members/notification-options',
    {
      schema: {
        summary: 'Notification categories, channels and the defaults of each role',
        tags,
        params: DomainParams,
        response: { 200: NotificationOptions, ...errorResponses(404) },
      },
    },
    async (request) => {
      await loadDomain(request, request.params.domain, 'domain.view');
      return { ...NOTIFICATION_OPTIONS, role_defaults: ROLE_DEFAULTS };
    },
  );

  app.patch(
    MEMBER_PATH,
    {
      schema: {
        summary: "Change a member's role or notifications",
        description:
          'role needs members.manage (owner, admin) and cannot be given to or taken from the owner (400); ' +
          "notifications are your own to change (any role), or anyone's with members.manage. null returns to the " +
          "role's defaults.",
        tags,
        params: MemberParams,
        body: MemberUpdate,
        response: { 200: DomainMember, ...errorResponses(400, 403, 404, 415) },
      },
    },
    async (request) => {
      const { domain, role } = await loadDomain(request, request.params.domain, null);
      const caller = { userId: request.principal.userId, role };
      return updateMember(app.db, domain, caller, request.params.user_id, request.body);
    },
  );

  app.delete(
    MEMBER_PATH,
    {
      schema: {
        summary: 'Remove a member, or leave the domain',
        description:
          'Removing someone else needs members.manage; anyone may remove themselves. The owner cannot be removed ' +
          '(400). A member nominated as payer stops paying: the owner pays again.',
        tags,
        params: MemberParams,
        response: { 200: MessageBody, ...errorResponses(400, 403, 404) },
      },
    },
    async (request) => {
      const { domain, role } = await loadDomain(request, request.params.domain, null);
      await removeMember(app.db, domain, { userId: request.principal.userId, role }, request.params.user_id);
      return { message: `user ${request.params.user_id} removed from ${domain.name}` };
    },
  );

  app.put(
    '/domains/:domain/billing-member',
    {
      schema: {
        summary: "Choose which member's wallet pays for the domain",
        description:
          "Owner only (billing.manage; not domain.settings). null, 0 or the owner's id clears the nomination. " +
          'Any other id must be an accepted member: 400 with `code` `not_a_member` otherwise. In force at once; the ' +
          'nominee is notified at once, with no consent step.',
        tags: ['billing'],
        params: DomainParams,
        body: BillingMemberUpdate,
        response: { 200: BillingMemberAnswer, ...errorResponses(403, 404, 415), 400: BillingMemberError },
      },
    },
    async (request) => {
      const { domain } = await loadDomain(request, request.params.domain, 'billing.manage');
      const billing = await setBillingMember(
        app.db,
        domain as SharedDomain,
        request.principal.userId,
        request.body.user_id,
      );
      return { billing_member: billing };
    },
  );

  app.get(
    '/domains/:domain/payer',
    {
      schema: {
        summary: 'Who pays for the domain, and the subscription they pay for',
        tags: ['billing'],
        params: DomainParams,
        response: { 200: Payer, ...errorResponses(404) },
      },
    },
    async (request) => {
      const { domain } = await loadDomain(request, request.params.domain, 'domain.view');
      return payerOf(app.db, domain);
    },
  );

  const invitations = '/domains/:domain/invitations';
  const managed = async (request: { params: { domain: string } } & Parameters<typeof loadDomain>[0]) =>
    (await loadDomain(request, request.params.domain, 'members.manage')).domain;

  app.get(
    invitations,
    {
      schema: {
        summary: 'Pending invitations of the domain (expired ones too, until resent or revoked)',
        description: 'members.manage (owner, admin).',
        tags,
        params: DomainParams,
        response: { 200: InvitationList, ...errorResponses(403, 404) },
      },
    },
    async (request) => listInvitations(app.db, await managed(request)),
  );

  app.post(
    invitations,
    {
      schema: {
        summary: 'Invite someone to the domain by email address',
        description:
          'members.manage. The answer holds the link (`accept_url`, `token`) once: only its hash is stored, and ' +
          'the invitee needs it to accept. An account with the address is told in its notification feed. The ' +
          'invitation grants nothing until accepted and expires after 7 days. 409: the address is on the domain ' +
          'or already invited; 400: the domain holds 100 members and invitations.',
        tags,
        params: DomainParams,
        body: InvitationCreate,
        response: { 200: InvitationWithLink, ...errorResponses(400, 403, 404, 409, 415) },
      },
    },
    async (request) =>
      invite(app.db, app.config.publicBaseUrl, await managed(request), request.principal.userId, request.body),
  );

  app.delete(
    INVITATION_PATH,
    {
      schema: {
        summary: 'Revoke an invitation: its link stops working',
        tags,
        params: InvitationParams,
        response: { 200: MessageBody, ...errorResponses(403, 404) },
      },
    },
    async (request) => {
      await revokeInvitation(app.db, await managed(request), request.params.invitation_id);
      return { message: `invitation ${request.params.invitation_id} revoked` };
    },
  );

  app.post(
    `${INVITATION_PATH}/resend`,
    {
      schema: {
        summary: 'Resend an invitation: a new link and 7 more days; the old link stops working',
        description: 'At most 10 sends of one invitation (400 beyond: revoke it and invite again).',
        tags,
        params: InvitationParams,
        response: { 200: InvitationWithLink, ...errorResponses(400, 403, 404) },
      },
    },
    async (request) =>
      resendInvitation(app.db, app.config.publicBaseUrl, await managed(request), request.params.invitation_id),
  );

  app.get(
    '/invitations/:token',
    {
      schema: {
        summary: 'Inspect an invitation you were sent: the domain, the role, who invited you, the expiry',
        description: 'With a key of the account that has the invited address (403 otherwise).',
        tags,
        params: TokenParams,
        response: { 200: InvitationView, ...errorResponses(400, 403, 404) },
      },
    },
    async (request) => inspectInvitation(app.db, request.principal.userId, request.params.token),
  );

  app.post(
    '/invitations/:token/accept',
    {
      schema: {
        summary: 'Accept an invitation: you become a member with its role',
        description:
          'With a full-access key of the account that has the invited address (403 otherwise). Single use: the ' +
          'link works once. 409: expired (ask for a resend), or you are already on the domain.',
        tags,
        params: TokenParams,
        response: { 200: InvitationAccepted, ...errorResponses(400, 403, 404, 409) },
      },
    },
    async (request) => acceptInvitation(app.db, request.principal.userId, request.params.token),
  );
}
