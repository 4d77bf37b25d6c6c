// SSO clients (relying parties), registered through the admin command line: a confidential client gets a secret
// (shown once; only its sha256 is stored), a public client (a browser or native app) none and must use PKCE.
// Redirect URIs are matched exactly (OAuth 2.1 §2.3.1): https, or http on a loopback host for native apps.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { sql } from 'drizzle-orm';
import type { Db } from '../../db/index.js';
import { rowsOf } from '../../db/migrate.js';
import { ApiError } from '../../errors.js';

export const MAX_CLIENT_NAME_CHARS = 100;
export const MAX_REDIRECT_URIS = 10;
export const MAX_REDIRECT_URI_CHARS = 2000;
/** Client ids we mint are `app_` + 22 characters; anything longer is no client of ours (looked up without a query). */
export const MAX_CLIENT_ID_CHARS = 64;
const CLIENT_ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

export interface ClientRow {
  clientId: string;
  name: string;
  secretHash: string | null;
  redirectUris: string[];
  postLogoutRedirectUris: string[];
  createdAt: Date;
}

export const hashSecret = (secret: string) => createHash('sha256').update(secret).digest('hex');

/** Constant-time comparison of a presented secret with the stored hash. */
export function secretMatches(storedHash: string, presented: string): boolean {
  const a = Buffer.from(storedHash, 'hex');
  const b = createHash('sha256').update(presented).digest();
  return a.length === b.length && timingSafeEqual(a, b);
}

const LOOPBACK_HOSTS = new Set(['127.0.0.1', '[::1]', 'localhost']);

/** A redirect URI a client may register; throws 400 naming the problem. */
export function checkRedirectUri(value: string): string {
  if (value.length === 0 || value.length > MAX_REDIRECT_URI_CHARS)
    throw new ApiError('CP_ERR_INVALID_INPUT', `a redirect URI has 1 to ${MAX_REDIRECT_URI_CHARS} characters`);
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ApiError('CP_ERR_INVALID_INPUT', `redirect URI "${value}" is not an absolute URL`);
  }
  if (url.hash !== '' || value.includes('#'))
    throw new ApiError('CP_ERR_INVALID_INPUT', `redirect URI "${value}" must not have a fragment`);
  if (url.username !== '' || url.password !== '')
    throw new ApiError('CP_ERR_INVALID_INPUT', `redirect URI "${value}" must not carry credentials`);
  const loopbackHttp = url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname);
  if (url.protocol !== 'https:' && !loopbackHttp)
    throw new ApiError('CP_ERR_INVALID_INPUT', `redirect URI "${value}" must be https (http only on a loopback host)`);
  return value;
}

function checkName(name: string): string {
  const trimmed = name.trim();
  if (trimmed.length === 0 || trimmed.length > MAX_CLIENT_NAME_CHARS || /\p{Cc}/u.test(trimmed))
    throw new ApiError('CP_ERR_INVALID_INPUT', `an app name has 1 to ${MAX_CLIENT_NAME_CHARS} printable characters`);
  return trimmed;
}

export interface RegisterOptions {
  name: string;
  redirectUris: string[];
  /** A public client: no secret, PKCE (always required anyway) is its only proof. */
  public?: boolean;
}

/** Registers a client; returns its id and, for a confidential client, the secret (shown once). */
export async function registerClient(
  db: Db,
  opts: RegisterOptions,
): Promise<{ clientId: string; clientSecret: string | null }> {
  const name = checkName(opts.name);
  if (opts.redirectUris.length === 0 || opts.redirectUris.length > MAX_REDIRECT_URIS)
    throw new ApiError('CP_ERR_INVALID_INPUT', `an app has 1 to ${MAX_REDIRECT_URIS} redirect URIs`);
  const uris = [...new Set(opts.redirectUris.map(checkRedirectUri))];
  const clientId = `app_${randomBytes(16).toString('base64url')}`;
  const clientSecret = opts.public ? null : `ssosec_${randomBytes(32).toString('base64url')}`;
  await db.execute(sql`
    INSERT INTO sso_clients (client_id, name, secret_hash, redirect_uris)
    VALUES (${clientId}, ${name}, ${clientSecret === null ? null : hashSecret(clientSecret)},
      ${sql`ARRAY[${sql.join(
        uris.map((u) => sql`${u}`),
        sql`, `,
      )}]::text[]`})`);
  return { clientId, clientSecret };
}

interface Row {
  client_id: string;
  name: string;
  secret_hash: string | null;
  redirect_uris: string[];
  post_logout_redirect_uris: string[];
  created_at: Date | string;
}
const present = (r: Row): ClientRow => ({
  clientId: r.client_id,
  name: r.name,
  secretHash: r.secret_hash,
  redirectUris: r.redirect_uris,
  postLogoutRedirectUris: r.post_logout_redirect_uris,
  createdAt: new Date(r.created_at),
});

export function isClientId(id: unknown): id is string {
  return typeof id === 'string' && CLIENT_ID_PATTERN.test(id);
}

export async function findClient(db: Db, clientId: string): Promise<ClientRow | undefined> {
  if (!isClientId(clientId)) return undefined;
  const [row] = rowsOf<Row>(await db.execute(sql`SELECT * FROM sso_clients WHERE client_id = ${clientId}`));
  return row ? present(row) : undefined;
}

export async function listClients(db: Db): Promise<ClientRow[]> {
  return rowsOf<Row>(await db.execute(sql`SELECT * FROM sso_clients ORDER BY created_at, client_id`)).map(present);
}

/** Deletes a client with everything issued to it (grants, codes, tokens, its users' domain choices). */
export async function deleteClient(db: Db, clientId: string): Promise<boolean> {
  if (!isClientId(clientId)) return false;
  return db.transaction(async (tx) => {
    const gone = rowsOf(
      await tx.execute(sql`DELETE FROM sso_clients WHERE client_id = ${clientId} RETURNING client_id`),
    );
    await tx.execute(sql`DELETE FROM sso_objects WHERE client_id = ${clientId}`);
    return gone.length > 0;
  });
}

/** The client as oidc-provider's metadata: authorization code (+ refresh) only, exact redirect URIs. */
export function clientMetadata(c: ClientRow): Record<string, unknown> {
  return {
    client_id: c.clientId,
    client_name: c.name,
    redirect_uris: c.redirectUris,
    post_logout_redirect_uris: c.postLogoutRedirectUris,
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    ...(c.secretHash === null
      ? { token_endpoint_auth_method: 'none' }
      : // The provider holds the hash only; compareClientSecret is replaced to hash what is presented (provider.ts).
        { token_endpoint_auth_method: 'client_secret_basic', client_secret: c.secretHash }),
  };
}
