// Domain routes: list and create under /domains/, the nameserver sets, and read/update/delete of one domain.
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { and, eq, inArray, or } from 'drizzle-orm';
import { domainMembers, domains, plans, subscriptions } from '../../db/schema.js';
import { loadDomain } from '../../auth/domain-access.js';
import { permissionsOf, type Role } from '../../auth/permissions.js';
import { LIVE_STATUSES } from '../../plans/entitlements.js';
import { errorResponses, MessageBody } from '../../openapi/schemas.js';
import { normalizeDomainName } from './domain-name.js';
import { presentDomain, presentListItem } from './present.js';
import { DomainCreate, DomainDetail, DomainParams, DomainUpdate, DomainWithSsl, NsSets } from './schemas.js';
import { createDomain, deleteDomain, updateDomain } from './service.js';
import { sslSummaries } from '../ssl/service.js';

export default async function domainRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['domains'];

  app.get(
    '/domains/',
    {
      schema: {
        summary: 'List the domains the caller can see',
        tags,
        response: { 200: Type.Array(DomainWithSsl), ...errorResponses(403) },
      },
    },
    async (request) => {
      const userId = request.principal.userId;
      const rows = await app.db
        .select({ domain: domains, memberRole: domainMembers.role })
        .from(domains)
        .leftJoin(domainMembers, and(eq(domainMembers.domainId, domains.id), eq(domainMembers.userId, userId)))
        .where(or(eq(domains.ownerId, userId), eq(domainMembers.userId, userId)))
        .orderBy(domains.name);
      const ids = rows.map((r) => r.domain.id);
      const subs =
        ids.length === 0
          ? []
          : await app.db
              .select({
                domainId: subscriptions.domainId,
                slug: plans.slug,
                name: plans.name,
                status: subscriptions.status,
                expiresAt: subscriptions.expiresAt,
              })
              .from(subscriptions)
              .innerJoin(plans, eq(plans.id, subscriptions.planId))
              .where(and(inArray(subscriptions.domainId, ids), inArray(subscriptions.status, LIVE_STATUSES)));
      const byDomain = new Map(subs.map((s) => [s.domainId, s]));
      const ssl = await sslSummaries(app.db, ids);
      return rows.map(({ domain, memberRole }) => {
        const role: Role = domain.ownerId === userId ? 'owner' : (memberRole ?? 'viewer');
        return presentListItem(domain, role, permissionsOf(role), app.config, {
          plan: byDomain.get(domain.id) ?? null,
          ssl: ssl.get(domain.id),
        });
      });
    },
  );

  app.post(
    '/domains/',
    {
      schema: {
        summary: 'Add a domain',
        tags,
        body: DomainCreate,
        response: { 200: DomainDetail, ...errorResponses(400, 403, 409, 413, 415) },
      },
    },
    async (request) => {
      const name = normalizeDomainName(request.body.name);
      const row = await createDomain(app, request.principal.userId, name, request.body.dns_mode ?? 'managed');
      return presentDomain(row, 'owner', permissionsOf('owner'), app.config);
    },
  );

  app.get(
    '/domains/ns-sets',
    {
      schema: {
        summary: 'Accepted nameserver sets (the first is recommended)',
        tags,
        response: { 200: NsSets, ...errorResponses(403) },
      },
    },
    async () => ({ sets: app.config.nsSets.map((s) => [...s]) }),
  );

  app.get(
    '/domains/:domain',
    {
      schema: {
        summary: 'Get a domain',
        tags,
        params: DomainParams,
        response: { 200: DomainDetail, ...errorResponses(403, 404) },
      },
    },
    async (request) => {
      const access = await loadDomain(request, request.params.domain, 'domain.view');
      return presentDomain(access.domain, access.role, access.permissions, app.config);
    },
  );

  app.put(
    '/domains/:domain',
    {
      schema: {
        summary: 'Update domain settings (omitted fields are unchanged)',
        description: 'A dns_mode switch restarts the proof of control; on a disabled or banned domain it is 409.',
        tags,
        params: DomainParams,
        body: DomainUpdate,
        response: { 200: DomainDetail, ...errorResponses(400, 403, 404, 409, 413, 415) },
      },
    },
    async (request) => {
      const access = await loadDomain(request, request.params.domain, 'domain.settings');
      const row = await updateDomain(app, access.domain, request.body);
      return presentDomain(row, access.role, access.permissions, app.config);
    },
  );

  app.delete(
    '/domains/:domain',
    {
      schema: {
        summary: 'Delete a domain with its records, rules and DNS zone (owner only; irreversible)',
        tags,
        params: DomainParams,
        response: { 200: MessageBody, ...errorResponses(403, 404) },
      },
    },
    async (request) => {
      const access = await loadDomain(request, request.params.domain, 'domain.delete');
      await deleteDomain(app, access.domain);
      return { message: `domain ${access.domain.name} deleted` };
    },
  );
}
