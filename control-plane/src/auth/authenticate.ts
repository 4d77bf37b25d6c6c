// The one authentication hook (spec Authentication §1–6): key → principal, then account, read-only and denied-surface checks.
import fp from 'fastify-plugin';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { eq, sql, type SQL } from 'drizzle-orm';
import { apiKeys, users } from '../db/schema.js';
import type { Db, Tx } from '../db/index.js';
import { compiled } from '../db/compiled.js';
import { ApiError, MESSAGES } from '../errors.js';
import { hashKey, KEY_PATTERN, KEY_PREFIX } from './api-keys.js';
import { isDeniedSurface, isInternalPath, isPublicPath, readOnlyMayCall, requestPath } from './surfaces.js';
import type { RouteLookup } from '../plugins/route-hints.js';
import { FLUSH_MS, KeyUsage } from './key-usage.js';
import { checkCsrf, resolveBrowserSession } from '../areas/login/session.js';
import { sessionStillValid } from '../areas/login/store.js';
import {
  hitStatement,
  keyBucketSql,
  RATE_WINDOW_MS,
  windowCount,
  type HitRow,
  type WindowCount,
} from '../plugins/rate-limit-store.js';

/**
 * Who is calling: the owner of the API key presented with the request, or the account of the browser session the
 * web panel calls the API with (areas/login; then keyId is 0 and keyHash empty).
 */
export interface Principal {
  userId: number;
  keyId: number;
  readOnly: boolean;
  /** sha256 of the key, to check it again before a write runs. */
  keyHash: string;
  /** Set for a browser session: its id (checked again before a write runs, like a key). */
  sessionId?: number;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Requests per key per day, counted here and added to api_key_usage_days every few seconds (key-usage.ts). */
    keyUsage: KeyUsage;
  }
  interface FastifyRequest {
    /** Set by the authentication hook on every route that takes an API key; null only on public and internal routes. */
    principal: Principal;
    /** This request's count in its key's rate-limit window when the key lookup counted it (countKeyHits). */
    keyWindow: WindowCount | null;
    /**
     * Set on a route with KEY_READ_BY_WRITE: the key was not looked up before the body was read; the write's own
     * transaction looks it up (auth/domain-access.ts writeAs), or the error handler does for an error before it.
     * Null once settled.
     */
    deferredKey: DeferredKey | null;
  }
}

/**
 * Looks the request's key up and applies every check the authentication hook would have (key, account, read-only,
 * denied surface, the key's rate limit): sets request.principal, or throws the refusal. In `tx`, the lookup (and
 * the count) is queued at once, synchronously, ahead of the transaction's BEGIN (it must be the transaction's
 * first statement: on Postgres it runs and counts outside the transaction, in the same write as what follows).
 */
export interface DeferredKey {
  /** sha256 of the presented key (Principal.keyHash). */
  keyHash: string;
  settle(tx?: Tx): Promise<void>;
}

/**
 * Route config: the key is looked up by the route's write, in the write's first round trip, not before the body is
 * read (a create costs one round trip fewer). The route's handler must call writeAs first; an error before it
 * (body, validation) is answered after the key's checks, as it would have been.
 */
export const KEY_READ_BY_WRITE = { keyCheckedByWrite: true, keyReadByWrite: true } as const;

export interface AuthenticateOptions {
  routes?: RouteLookup;
  /**
   * Count each request against its key's rate-limit counter in the database in the key lookup's own statement
   * (one round trip instead of two; rate-limit.ts takes the count from request.keyWindow). With a Postgres server.
   */
  countKeyHits?: boolean;
}

interface KeyRow {
  keyId: number;
  userId: number;
  readOnly: boolean;
  expiresAt: Date | null;
  revokedAt: Date | null;
  lastUsedAt: Date | null;
  active: boolean;
}

/** last_used_at is written at most once a minute per key, so reads stay reads. */
const LAST_USED_RESOLUTION_MS = 60_000;

/** The key from `Authorization: Bearer <key>` or `X-Api-Key: <key>`; null when absent, false when malformed or contradictory. */
export function presentedKey(headers: FastifyRequest['headers']): string | null | false {
  const auth = headers.authorization;
  const xKey = headers['x-api-key'];
  let fromAuth: string | undefined;
  if (auth !== undefined) {
    const m = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(auth);
    if (!m) return false;
    fromAuth = m[1];
  }
  if (Array.isArray(xKey)) return false;
  const fromHeader = xKey?.trim();
  if (fromAuth !== undefined && fromHeader !== undefined && fromAuth !== fromHeader) return false;
  return fromAuth ?? fromHeader ?? null;
}

async function authenticate(app: FastifyInstance, opts: AuthenticateOptions) {
  app.decorateRequest('principal', null as unknown as Principal);
  app.decorateRequest('keyWindow', null);
  app.decorateRequest('deferredKey', null);
  const keyUsage = new KeyUsage();
  app.decorate('keyUsage', keyUsage);
  const flushUsage = () =>
    keyUsage.flush(app.db).catch((err: unknown) => app.log.warn({ err }, 'could not store API key usage'));
  const usageTimer = setInterval(flushUsage, FLUSH_MS);
  usageTimer.unref();
  app.addHook('onClose', async () => {
    clearInterval(usageTimer);
    await flushUsage();
  });
  // Prepared once: this lookup runs on every request (revocation must apply to the next one, so nothing is cached).
  const lookup = app.db
    .select({
      keyId: apiKeys.id,
      userId: apiKeys.userId,
      readOnly: apiKeys.readOnly,
      expiresAt: apiKeys.expiresAt,
      revokedAt: apiKeys.revokedAt,
      lastUsedAt: apiKeys.lastUsedAt,
      active: users.active,
    })
    .from(apiKeys)
    .innerJoin(users, eq(users.id, apiKeys.userId))
    .where(eq(apiKeys.keyHash, sql.placeholder('hash')))
    .limit(1)
    .prepare('auth_key_lookup');

  /**
   * The key's row; with countKeyHits, a key neither revoked nor expired is counted in the same statement. The
   * statement is queued synchronously (compiled.ts), so a write can send its own statements behind it.
   */
  function lookupAndCount(request: FastifyRequest, hash: string, db: Db | Tx = app.db): Promise<KeyRow | undefined> {
    const statement = opts.countKeyHits ? lookupAndCountStatement : lookupStatement;
    const rows = statement<LookupRow>(db, { hash }, db === app.db ? undefined : { beforeBegin: true });
    return rows.then(([row]) => {
      if (!row) return undefined;
      if (row.hits != null && row.ttl_ms != null)
        request.keyWindow = windowCount({ hits: row.hits, ttl_ms: row.ttl_ms });
      const date = (ms: number | null) => (ms === null ? null : new Date(Number(ms)));
      return {
        keyId: row.id,
        userId: row.user_id,
        readOnly: row.read_only,
        // The database decided revocation; any past instant stands for it.
        revokedAt: row.revoked ? new Date(0) : null,
        expiresAt: date(row.expires_ms),
        lastUsedAt: date(row.last_used_ms),
        active: row.active,
      };
    });
  }

  // A refused request still counts: against the client address without a valid key (no free key guessing), against
  // the key when the key is known; over the budget it answers 429 instead.
  const refuse = async (request: FastifyRequest, reply: FastifyReply, err: ApiError, keyId?: number) => {
    await app.limitRequest(request, reply, keyId);
    throw err;
  };

  app.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
    const path = requestPath(request.url);
    const method = request.method;
    // Public: the OpenAPI document, and routes that authenticate with their own credential (config: { public: true }).
    // They take no key, so they count against the client address.
    // A method no route of a public path takes (TRACE /healthz) is answered 405 without a key as well.
    const key = presentedKey(request.headers);
    if (
      isPublicPath(method, path) ||
      (request.routeOptions.config as { public?: boolean } | undefined)?.public === true ||
      (request.is404 && opts.routes?.isPublicResource(path) === true)
    ) {
      // The browser surfaces that take no credential (POST /auth/login) still refuse every API key.
      if (key !== null && isDeniedSurface(method, path))
        return refuse(request, reply, new ApiError('CP_ERR_DENIED_SURFACE', MESSAGES.deniedSurface));
      return app.limitRequest(request, reply);
    }
    if (isInternalPath(path)) {
      // Internal routes authenticate nodes and workers with the node token (their own hook); keys are refused.
      if (typeof key === 'string' && key.startsWith(KEY_PREFIX))
        return refuse(request, reply, new ApiError('CP_ERR_DENIED_SURFACE', MESSAGES.internalForKeys));
      return;
    }
    // No key but a browser session (the web panel calls the API with it): every surface but /admin/**; state-changing
    // requests carry the session's CSRF token; its own rate limit (rate-limit.ts), not any key's.
    if (key === null && request.headers.cookie !== undefined) {
      const session = await resolveBrowserSession(request);
      if (session) {
        if (!session.active) return refuse(request, reply, new ApiError('CP_ERR_ACCOUNT_INACTIVE', MESSAGES.inactive));
        if (isAdminPath(path))
          return refuse(request, reply, new ApiError('CP_ERR_DENIED_SURFACE', MESSAGES.deniedSurface));
        checkCsrf(request, session);
        request.principal = {
          userId: session.userId,
          keyId: 0,
          readOnly: false,
          keyHash: '',
          sessionId: session.sessionId,
        };
        return;
      }
    }
    if (!key || !KEY_PATTERN.test(key))
      return refuse(request, reply, new ApiError('CP_ERR_INVALID_API_KEY', MESSAGES.invalidKey));

    const hash = hashKey(key);
    const config = request.routeOptions.config as { keyReadByWrite?: boolean } | undefined;
    const params = request.params as Record<string, string> | undefined;
    if (
      config?.keyReadByWrite &&
      !request.is404 &&
      !isDeniedSurface(method, path) &&
      !(params && Object.values(params).some((value) => value === ''))
    ) {
      // Read by the route's write (KEY_READ_BY_WRITE): nothing is counted or set here; the rate limiter's own hook
      // sees no principal and leaves the request to app.limitKey, which the settlement calls.
      request.deferredKey = {
        keyHash: hash,
        settle(tx?: Tx) {
          request.deferredKey = null;
          const now = new Date();
          return lookupAndCount(request, hash, tx).then(async (row) => {
            await admit(request, reply, method, path, hash, row, now, tx !== undefined);
            await app.limitKey(request, reply);
          });
        },
      };
      return;
    }
    const now = new Date();
    await admit(request, reply, method, path, hash, await lookupAndCount(request, hash), now);
  });

  /** The checks of a looked-up key (spec Authentication §3–6); sets request.principal or throws the refusal. */
  async function admit(
    request: FastifyRequest,
    reply: FastifyReply,
    method: string,
    path: string,
    hash: string,
    row: KeyRow | undefined,
    now: Date,
    inWrite = false,
  ): Promise<void> {
    if (!row || row.revokedAt || (row.expiresAt && row.expiresAt <= now))
      return refuse(request, reply, new ApiError('CP_ERR_INVALID_API_KEY', MESSAGES.invalidKey));
    if (!row.active)
      return refuse(request, reply, new ApiError('CP_ERR_ACCOUNT_INACTIVE', MESSAGES.inactive), row.keyId);
    if (row.readOnly && !readOnlyMayCall(method, path))
      return refuse(request, reply, new ApiError('CP_ERR_READ_ONLY_KEY', MESSAGES.readOnly), row.keyId);
    if (isDeniedSurface(method, path))
      return refuse(request, reply, new ApiError('CP_ERR_DENIED_SURFACE', MESSAGES.deniedSurface), row.keyId);

    request.principal = { userId: row.userId, keyId: row.keyId, readOnly: row.readOnly, keyHash: hash };
    keyUsage.count(row.keyId, now);
    if (!row.lastUsedAt || now.getTime() - row.lastUsedAt.getTime() >= LAST_USED_RESOLUTION_MS) {
      const written = app.db
        .update(apiKeys)
        .set({ lastUsedAt: sql`now()` })
        .where(eq(apiKeys.id, row.keyId));
      // In a write's transaction (KEY_READ_BY_WRITE) it is not awaited: PGlite's one connection runs it after the
      // transaction (awaited, it would wait for itself), and a refusal of the write must not roll it back.
      if (!inWrite) await written;
      else
        written.then(
          () => undefined,
          (err: unknown) => request.log.warn({ err }, 'could not record the key as used'),
        );
    }
  }

  // A KEY_READ_BY_WRITE route must settle its key (writeAs) before it answers: one that did not would answer
  // without any key check, so the answer is a 500 instead (a programming error; the records tests cover each route).
  app.addHook('onRoute', (route) => {
    if (!(route.config as { keyReadByWrite?: boolean } | undefined)?.keyReadByWrite) return;
    const unsettled = async (request: FastifyRequest) => {
      if (request.deferredKey) throw new Error(`${route.method} ${route.url} answered without checking its key`);
    };
    const hooks = route.preSerialization;
    route.preSerialization =
      hooks === undefined ? [unsettled] : [...(Array.isArray(hooks) ? hooks : [hooks]), unsettled];
  });

  // "Revocation applies at once, including in-flight requests" (spec Authentication §3): a write whose body was
  // still arriving when its key was revoked, expired or its account deactivated is refused before it changes anything.
  app.addHook('preHandler', async (request: FastifyRequest) => {
    const principal = request.principal;
    if (!principal || SAFE_METHODS.has(request.method)) return;
    // The route checks the key again in its write's own lock statement (domain-access.ts writeAs).
    if ((request.routeOptions.config as { keyCheckedByWrite?: boolean } | undefined)?.keyCheckedByWrite) return;
    if (principal.sessionId !== undefined) {
      const state = await sessionStillValid(app.db, principal.sessionId);
      if (!state) throw new ApiError('CP_ERR_NOT_SIGNED_IN', 'not signed in');
      if (state === 'inactive') throw new ApiError('CP_ERR_ACCOUNT_INACTIVE', MESSAGES.inactive);
      return;
    }
    const [row] = await lookup.execute({ hash: principal.keyHash });
    if (!row || row.revokedAt || (row.expiresAt && row.expiresAt <= new Date()))
      throw new ApiError('CP_ERR_INVALID_API_KEY', MESSAGES.invalidKey);
    if (!row.active) throw new ApiError('CP_ERR_ACCOUNT_INACTIVE', MESSAGES.inactive);
  });
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** The operator's surface: no browser session of an account reaches it either. */
function isAdminPath(path: string): boolean {
  const p = path.toLowerCase();
  return p === '/admin' || p.startsWith('/admin/');
}

/** A row of the key lookup, as either driver returns it (timestamps as epoch ms); hits and ttl_ms when counted. */
type LookupRow = {
  id: number;
  user_id: number;
  read_only: boolean;
  revoked: boolean;
  active: boolean;
  expires_ms: number | null;
  last_used_ms: number | null;
} & { [K in keyof HitRow]?: HitRow[K] | null };

const keyRowSql = (hash: SQL) => sql`
  SELECT k.id, k.user_id, k.read_only, k.revoked_at IS NOT NULL AS revoked, u.active,
    (extract(epoch FROM k.expires_at) * 1000)::float8 AS expires_ms,
    (extract(epoch FROM k.last_used_at) * 1000)::float8 AS last_used_ms,
    (k.expires_at IS NULL OR k.expires_at > now()) AS unexpired
  FROM api_keys k JOIN users u ON u.id = k.user_id WHERE k.key_hash = ${hash} LIMIT 1`;

/** The key's row (revocation must apply to the next request, so nothing is cached). */
const lookupStatement = compiled<'hash'>((p) => keyRowSql(p('hash') as unknown as SQL));

/** The key's row, and the request counted against a key neither revoked nor expired (rate-limit-store.ts). */
const lookupAndCountStatement = compiled<'hash'>(
  (p) => sql`
    WITH k AS (${keyRowSql(p('hash') as unknown as SQL)}),
    hit AS (${hitStatement(sql`SELECT ${keyBucketSql(sql`id`)}, now(), 1 FROM k WHERE NOT revoked AND unexpired`, RATE_WINDOW_MS)})
    SELECT k.*, hit.hits, hit.ttl_ms FROM k LEFT JOIN hit ON true`,
);

export default fp(authenticate, { name: 'authenticate', dependencies: ['database'] });
