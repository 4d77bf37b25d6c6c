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
} from './schemas.js';
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
}
