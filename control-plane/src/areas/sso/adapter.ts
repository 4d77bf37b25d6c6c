// oidc-provider's storage in the control plane's database (PGlite or Postgres), so that every control-plane process
// sees the same sessions, interactions, grants, codes and tokens. Clients come from sso_clients (admin command line).
// A second consume of a code or refresh token (two requests racing with the same one) is its reuse: the grant is
// revoked and the request refused, as oidc-provider does when it sees the token consumed.
import { sql } from 'drizzle-orm';
import type { Adapter, AdapterPayload } from 'oidc-provider';
import { errors } from './oidc.js';
import type { Db } from '../../db/index.js';
import { rowsOf } from '../../db/migrate.js';
import { clientMetadata, findClient } from './clients.js';

/** Ids oidc-provider mints are 21–64 characters; anything longer names nothing stored (no query). */
const MAX_ID_CHARS = 256;
/** Expired rows are swept at most this often, a bounded batch at a time. */
const SWEEP_EVERY_MS = 60_000;
const SWEEP_BATCH = 1000;

interface ObjectRow {
  payload: AdapterPayload;
  consumed: boolean;
}

export function createAdapterFactory(db: Db): (model: string) => Adapter {
  let lastSweep = 0;
  const sweep = async () => {
    const now = Date.now();
    if (now - lastSweep < SWEEP_EVERY_MS) return;
    lastSweep = now;
    await db.execute(sql`
      DELETE FROM sso_objects WHERE (model, id) IN (
        SELECT model, id FROM sso_objects WHERE expires_at < now() LIMIT ${SWEEP_BATCH})`);
  };
  const revokeGrant = async (grantId: string) => {
    await db.execute(sql`DELETE FROM sso_objects WHERE grant_id = ${grantId} OR (model = 'Grant' AND id = ${grantId})`);
  };

  return (model: string): Adapter => {
    const find = async (where: ReturnType<typeof sql>): Promise<AdapterPayload | undefined> => {
      const [row] = rowsOf<ObjectRow>(
        await db.execute(sql`
          SELECT payload, consumed_at IS NOT NULL AS consumed FROM sso_objects
          WHERE model = ${model} AND ${where} AND (expires_at IS NULL OR expires_at > now()) LIMIT 1`),
      );
      if (!row) return undefined;
      const payload = typeof row.payload === 'string' ? (JSON.parse(row.payload) as AdapterPayload) : row.payload;
      // The provider reads `consumed` as the time of the consume; any truthy value marks it.
      return row.consumed ? { ...payload, consumed: payload.consumed ?? Math.floor(Date.now() / 1000) } : payload;
    };
    const bounded = (id: unknown): id is string => typeof id === 'string' && id.length > 0 && id.length <= MAX_ID_CHARS;

    if (model === 'Client') {
      return {
        async find(id) {
          const client = await findClient(db, id);
          return client ? (clientMetadata(client) as AdapterPayload) : undefined;
        },
        async upsert() {
          throw new Error('SSO clients are registered through the admin command line');
        },
        findByUid: async () => undefined,
        findByUserCode: async () => undefined,
        destroy: async () => undefined,
        consume: async () => undefined,
        revokeByGrantId: async () => undefined,
      };
    }

    return {
      async upsert(id, payload, expiresIn) {
        await sweep();
        const expires = typeof expiresIn === 'number' && expiresIn > 0 ? expiresIn : null;
        const accountId = payload.accountId ?? null;
        const clientId = payload.clientId ?? null;
        await db.execute(sql`
          INSERT INTO sso_objects (model, id, payload, grant_id, uid, account_id, client_id, expires_at)
          VALUES (${model}, ${id}, ${JSON.stringify(payload)}::jsonb, ${payload.grantId ?? null},
            ${payload.uid ?? null}, ${accountId}, ${clientId},
            ${expires === null ? null : sql`now() + make_interval(secs => ${expires})`})
          ON CONFLICT (model, id) DO UPDATE SET payload = EXCLUDED.payload, grant_id = EXCLUDED.grant_id,
            uid = EXCLUDED.uid, account_id = EXCLUDED.account_id, client_id = EXCLUDED.client_id,
            expires_at = EXCLUDED.expires_at`);
      },
      async find(id) {
        return bounded(id) ? find(sql`id = ${id}`) : undefined;
      },
      async findByUid(uid) {
        return bounded(uid) ? find(sql`uid = ${uid}`) : undefined;
      },
      async findByUserCode() {
        return undefined; // the device flow is off
      },
      async destroy(id) {
        if (bounded(id)) await db.execute(sql`DELETE FROM sso_objects WHERE model = ${model} AND id = ${id}`);
      },
      async consume(id) {
        const [row] = rowsOf<{ grant_id: string | null }>(
          await db.execute(sql`
            UPDATE sso_objects SET consumed_at = now()
            WHERE model = ${model} AND id = ${id} AND consumed_at IS NULL RETURNING grant_id`),
        );
        if (row) return;
        // Consumed meanwhile by a concurrent request presenting the same code or refresh token: a reuse.
        const [stored] = rowsOf<{ grant_id: string | null }>(
          await db.execute(sql`SELECT grant_id FROM sso_objects WHERE model = ${model} AND id = ${id}`),
        );
        if (stored?.grant_id) await revokeGrant(stored.grant_id);
        throw new errors.InvalidGrant(`${model === 'RefreshToken' ? 'refresh token' : 'grant'} already used`);
      },
      async revokeByGrantId(grantId) {
        if (bounded(grantId)) await revokeGrant(grantId);
      },
    };
  };
}
