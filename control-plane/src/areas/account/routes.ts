// Account reads: identify the calling credential (spec "Further operations", Account).
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { eq } from 'drizzle-orm';
import { apiKeys, users } from '../../db/schema.js';
import { errorResponses, Nullable } from '../../openapi/schemas.js';

const Timestamp = Type.String({ format: 'date-time' });

export const WhoAmI = Type.Object(
  {
    user: Type.Object({ id: Type.Integer(), email: Type.String(), name: Type.String() }),
    key: Type.Object({
      id: Type.Integer(),
      name: Type.String(),
      prefix: Type.String(),
      read_only: Type.Boolean(),
      expires_at: Nullable(Timestamp),
      last_used_at: Nullable(Timestamp),
      created_at: Timestamp,
    }),
  },
  { title: 'WhoAmI' },
);

export default async function accountRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  app.get(
    '/account/whoami',
    {
      schema: {
        summary: 'Identify the calling API key and its account',
        tags: ['account'],
        response: { 200: WhoAmI, ...errorResponses(403) },
      },
    },
    async (request) => {
      const [row] = await app.db
        .select({ user: users, key: apiKeys })
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
          read_only: row.key.readOnly,
          expires_at: iso(row.key.expiresAt),
          last_used_at: iso(row.key.lastUsedAt),
          created_at: row.key.createdAt.toISOString(),
        },
      };
    },
  );
}
