// Connected apps: the SSO clients a user has a live grant for. The user chooses which of their domains each app may
// see (the `domains` claim, none until chosen) and can disconnect an app, which revokes its grants, codes and tokens.
import { sql } from 'drizzle-orm';
import type { Db } from '../../db/index.js';
import { rowsOf } from '../../db/migrate.js';
import { ApiError } from '../../errors.js';
import { parseDomainName } from '../domains/domain-name.js';
import { isClientId } from './clients.js';

export const MAX_APP_DOMAINS = 1000;
/** The longest spelling of a domain name accepted before parsing (Unicode or percent-encoded names are longer). */
export const MAX_DOMAIN_CHARS = 1024;
export const APP_NOT_CONNECTED = 'app not connected';

export interface ConnectedApp {
  client_id: string;
  name: string;
  scopes: string[];
  domains: string[];
  connected_at: string;
}

/** The domain names a user lets an app see and can still see themselves (owner or member). */
export async function domainsClaim(db: Db, userId: number, clientId: string): Promise<string[]> {
  const rows = rowsOf<{ name: string }>(
    await db.execute(sql`
      SELECT d.name FROM sso_app_access a CROSS JOIN LATERAL unnest(a.domains) AS chosen(name)
      JOIN domains d ON d.name = chosen.name
      WHERE a.user_id = ${userId} AND a.client_id = ${clientId}
        AND (d.owner_id = ${userId}
          OR EXISTS (SELECT 1 FROM domain_members m WHERE m.domain_id = d.id AND m.user_id = ${userId}))
      ORDER BY d.name`),
  );
  return rows.map((r) => r.name);
}

const liveGrant = (userId: number) =>
  sql`o.model = 'Grant' AND o.account_id = ${String(userId)} AND (o.expires_at IS NULL OR o.expires_at > now())`;

export async function listConnectedApps(db: Db, userId: number): Promise<ConnectedApp[]> {
  const rows = rowsOf<{ client_id: string; name: string; scopes: string | null; connected_at: Date | string }>(
    await db.execute(sql`
      SELECT c.client_id, c.name, string_agg(o.payload->'openid'->>'scope', ' ') AS scopes,
        to_timestamp(min((o.payload->>'iat')::float8)) AS connected_at
      FROM sso_objects o JOIN sso_clients c ON c.client_id = o.client_id
      WHERE ${liveGrant(userId)}
      GROUP BY c.client_id, c.name ORDER BY c.name, c.client_id`),
  );
  const apps: ConnectedApp[] = [];
  for (const r of rows)
    apps.push({
      client_id: r.client_id,
      name: r.name,
      scopes: [...new Set((r.scopes ?? '').split(' ').filter(Boolean))].sort(),
      domains: await domainsClaim(db, userId, r.client_id),
      connected_at: new Date(r.connected_at).toISOString(),
    });
  return apps;
}

async function assertConnected(db: Db, userId: number, clientId: string): Promise<void> {
  if (!isClientId(clientId)) throw new ApiError('CP_ERR_NOT_FOUND', APP_NOT_CONNECTED);
  const found = rowsOf(
    await db.execute(sql`SELECT 1 FROM sso_objects o WHERE ${liveGrant(userId)} AND o.client_id = ${clientId} LIMIT 1`),
  );
  if (found.length === 0) throw new ApiError('CP_ERR_NOT_FOUND', APP_NOT_CONNECTED);
}

/** Normalised, deduplicated names, each a domain the user sees: 400 for a bad name, 404 `domain not found`. */
export async function checkAppDomains(db: Db, userId: number, names: string[]): Promise<string[]> {
  if (names.length > MAX_APP_DOMAINS)
    throw new ApiError('CP_ERR_INVALID_INPUT', `domains holds at most ${MAX_APP_DOMAINS} names`);
  const parsed: string[] = [];
  for (const raw of names) {
    if (raw.length > MAX_DOMAIN_CHARS) throw new ApiError('CP_ERR_INVALID_INPUT', 'a domain name is too long');
    const p = parseDomainName(raw);
    if (!p.ok) throw new ApiError('CP_ERR_INVALID_INPUT', `"${raw.slice(0, 100)}" is not a domain name: ${p.reason}`);
    parsed.push(p.name);
  }
  const unique = [...new Set(parsed)].sort();
  if (unique.length > 0) {
    const [{ visible }] = rowsOf<{ visible: number }>(
      await db.execute(sql`
        SELECT count(*)::int AS visible FROM domains d WHERE d.name = ANY(${textArray(unique)})
          AND (d.owner_id = ${userId}
            OR EXISTS (SELECT 1 FROM domain_members m WHERE m.domain_id = d.id AND m.user_id = ${userId}))`),
    );
    if (visible !== unique.length) throw new ApiError('CP_ERR_NOT_FOUND', 'domain not found');
  }
  return unique;
}

const textArray = (values: string[]) =>
  values.length === 0
    ? sql`'{}'::text[]`
    : sql`ARRAY[${sql.join(
        values.map((v) => sql`${v}`),
        sql`, `,
      )}]::text[]`;

/** Stores names checkAppDomains returned as the domains the app may see. */
export async function storeAppDomains(db: Db, userId: number, clientId: string, names: string[]): Promise<void> {
  await db.execute(sql`
    INSERT INTO sso_app_access (user_id, client_id, domains) VALUES (${userId}, ${clientId}, ${textArray(names)})
    ON CONFLICT (user_id, client_id) DO UPDATE SET domains = EXCLUDED.domains, updated_at = now()`);
}

/** Replaces the domains a connected app may see (404 when it is not connected); nothing is stored unless all pass. */
export async function setAppDomains(db: Db, userId: number, clientId: string, names: string[]): Promise<ConnectedApp> {
  const unique = await checkAppDomains(db, userId, names);
  await assertConnected(db, userId, clientId);
  await storeAppDomains(db, userId, clientId, unique);
  const app = (await listConnectedApps(db, userId)).find((a) => a.client_id === clientId);
  if (!app) throw new ApiError('CP_ERR_NOT_FOUND', APP_NOT_CONNECTED);
  return app;
}

/** Revokes every grant of the user to the app with its codes and tokens, and forgets the domain choice. */
export async function disconnectApp(db: Db, userId: number, clientId: string): Promise<void> {
  await assertConnected(db, userId, clientId);
  await db.transaction(async (tx) => {
    await tx.execute(sql`
      DELETE FROM sso_objects WHERE grant_id IN (
        SELECT o.id FROM sso_objects o WHERE o.model = 'Grant' AND o.account_id = ${String(userId)}
          AND o.client_id = ${clientId})`);
    await tx.execute(sql`
      DELETE FROM sso_objects WHERE model = 'Grant' AND account_id = ${String(userId)} AND client_id = ${clientId}`);
    await tx.execute(sql`DELETE FROM sso_app_access WHERE user_id = ${userId} AND client_id = ${clientId}`);
  });
}
