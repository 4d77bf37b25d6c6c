// Settings → API keys for the web panel (spec: keys are created in the panel, shown once, at most 10 active; last
// used time and a 30-day request chart): GET|POST /users/me/keys, DELETE /users/me/keys/{id}, GET
// /users/me/keys/{id}/usage. A browser session only: /users/** answers 403 to every API key (a key cannot create or
// revoke keys).
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { and, eq } from 'drizzle-orm';
import { apiKeys } from '../../db/schema.js';
import { ApiError } from '../../errors.js';
import { createApiKey, listApiKeys, MAX_ACTIVE_KEYS, revokeApiKey } from '../../auth/api-keys.js';
import { usageByDay } from '../../auth/key-usage.js';
import { requireBrowserSession } from '../login/routes.js';
import { announceKeyCreated } from './notice.js';
import { KeyCreateBody, KeyIdParams } from './schemas.js';

const iso = (d: Date | null) => (d ? d.toISOString() : null);

export default async function apiKeyRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const hide = true;

  /** The key of the signed-in account, or 404 (another account's key is not visible). */
  async function ownKey(userId: number, id: number) {
    const [row] = await app.db
      .select({ id: apiKeys.id })
      .from(apiKeys)
      .where(and(eq(apiKeys.id, id), eq(apiKeys.userId, userId)));
    if (!row) throw new ApiError('CP_ERR_NOT_FOUND', 'API key not found');
    return row.id;
  }

  app.get('/users/me/keys', { schema: { hide } }, async (request) => {
    const session = await requireBrowserSession(request);
    const now = new Date();
    const keys = (await listApiKeys(app.db, session.userId)).map((k) => ({
      id: k.id,
      name: k.name,
      prefix: k.prefix,
      mode: k.readOnly ? 'read_only' : 'full',
      status: k.revokedAt ? 'revoked' : k.expiresAt && k.expiresAt <= now ? 'expired' : 'active',
      expires_at: iso(k.expiresAt),
      last_used_at: iso(k.lastUsedAt),
      revoked_at: iso(k.revokedAt),
      created_at: k.createdAt.toISOString(),
    }));
    return { keys, active: keys.filter((k) => k.status === 'active').length, max_active: MAX_ACTIVE_KEYS };
  });

  app.post('/users/me/keys', { schema: { hide, body: KeyCreateBody } }, async (request, reply) => {
    const session = await requireBrowserSession(request);
    const { name, expires, mode } = request.body;
    const readOnly = mode === 'read_only';
    const created = await createApiKey(app.db, session.userId, { name: name.trim(), expires, readOnly });
    await announceKeyCreated(app.db, session.userId, created, { readOnly, expires });
    reply.header('cache-control', 'no-store');
    return {
      id: created.id,
      key: created.key,
      name: name.trim(),
      mode,
      expires_at: iso(created.expiresAt),
      message: 'copy the key now: it is shown once and cannot be shown again',
    };
  });

  app.delete('/users/me/keys/:id', { schema: { hide, params: KeyIdParams } }, async (request) => {
    const session = await requireBrowserSession(request);
    const id = await ownKey(session.userId, request.params.id);
    await revokeApiKey(app.db, id);
    return { message: `API key ${id} revoked` };
  });

  app.get('/users/me/keys/:id/usage', { schema: { hide, params: KeyIdParams } }, async (request) => {
    const session = await requireBrowserSession(request);
    const id = await ownKey(session.userId, request.params.id);
    // This process's counts not yet stored are added first, so the chart includes the last seconds.
    await app.keyUsage.flush(app.db);
    return { key_id: id, days: await usageByDay(app.db, id) };
  });
}
