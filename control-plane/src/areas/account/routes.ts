// Account reads (spec "Further operations", Account): identify the calling credential, unread counters, the edge's
// proxy addresses.
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { eq, sql } from 'drizzle-orm';
import { apiKeys, users } from '../../db/schema.js';
import { ApiError } from '../../errors.js';
import { errorResponses } from '../../openapi/schemas.js';
import { unreadCount } from '../notifications/store.js';
import { unreadReplies } from '../support/store.js';
import { EdgeIps, UnreadCounters, WhoAmI } from './schemas.js';

export default async function accountRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['account'];

  app.get(
    '/account/whoami',
    {
      schema: {
        summary: 'Identify the calling API key and its account',
        tags,
        response: { 200: WhoAmI, ...errorResponses(403) },
      },
    },
    async (request) => {
      if (request.principal.sessionId !== undefined)
        throw new ApiError('CP_ERR_NOT_FOUND', 'no API key: a browser session is described by GET /auth/session');
      const [row] = await app.db
        .select({
          user: users,
          key: apiKeys,
          owned: sql<number>`(SELECT count(*)::int FROM domains d WHERE d.owner_id = ${users.id})`,
          shared: sql<number>`(SELECT count(*)::int FROM domain_members m WHERE m.user_id = ${users.id})`,
        })
        .from(apiKeys)
        .innerJoin(users, eq(users.id, apiKeys.userId))
        .where(eq(apiKeys.id, request.principal.keyId));
      const iso = (d: Date | null) => (d ? d.toISOString() : null);
      return {
        user: { id: row.user.id, email: row.user.email, name: row.user.name },
        key: {
          id: row.key.id,
          name: row.key.name,
          prefix: row.key.keyPrefix,
          mode: row.key.readOnly ? ('read_only' as const) : ('full' as const),
          read_only: row.key.readOnly,
          expires_at: iso(row.key.expiresAt),
          last_used_at: iso(row.key.lastUsedAt),
          created_at: row.key.createdAt.toISOString(),
        },
        account: {
          id: row.user.id,
          active: row.user.active,
          created_at: row.user.createdAt.toISOString(),
          owned_domains: row.owned,
          shared_domains: row.shared,
        },
      };
    },
  );

  app.get(
    '/account/unread',
    {
      schema: {
        summary: 'Unread counters: notifications and support replies',
        tags,
        response: { 200: UnreadCounters },
      },
    },
    async (request) => {
      const userId = request.principal.userId;
      const support = await unreadReplies(app.db, userId);
      return {
        notifications: await unreadCount(app.db, userId),
        support_tickets: support.tickets,
        support_replies: support.replies,
      };
    },
  );

  app.get(
    '/account/edge-ips',
    {
      schema: {
        summary: "The edge's proxy IP addresses",
        description: 'The addresses proxied names answer A and AAAA with (EDGE_IPV4, EDGE_IPV6).',
        tags,
        response: { 200: EdgeIps },
      },
    },
    async () => ({ ipv4: [...app.config.edgeIpv4], ipv6: [...app.config.edgeIpv6] }),
  );
}
