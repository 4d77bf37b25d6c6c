// SQL of accounts' sign-in: passwords, browser sessions (only the token's sha256 is stored) and the failed sign-in
// counters.
import { createHash, randomBytes } from 'node:crypto';
import { and, desc, eq, gt, isNull, ne, sql, type Placeholder } from 'drizzle-orm';
import { hashPassword, verifyPassword } from '@platform/shared/match';
import type { Db, Tx } from '../../db/index.js';
import { rowsOf } from '../../db/migrate.js';
import { browserSessions, users } from '../../db/schema.js';
import { ApiError } from '../../errors.js';

/** scrypt N of account passwords (64 MiB, r=8, p=1); basic_auth users keep the lighter default. */
export const ACCOUNT_PASSWORD_COST = 65536;
export const PASSWORD_MIN_LENGTH = 10;
/** scrypt reads the whole password; a bound keeps one sign-in's work bounded. */
export const PASSWORD_MAX_LENGTH = 256;
/** A browser session lasts this long from the sign-in, then the person signs in again. */
export const SESSION_LIFETIME_MS = 7 * 86_400_000;
/** last_seen_at is written at most once a minute per session. */
const LAST_SEEN_RESOLUTION_MS = 60_000;

export function checkPasswordRules(password: string): void {
  if (password.length < PASSWORD_MIN_LENGTH)
    throw new ApiError('CP_ERR_INVALID_INPUT', `password must be at least ${PASSWORD_MIN_LENGTH} characters`);
  if (password.length > PASSWORD_MAX_LENGTH)
    throw new ApiError('CP_ERR_INVALID_INPUT', `password must be at most ${PASSWORD_MAX_LENGTH} characters`);
}

/** Sets (or replaces) an account's password; every browser session of the account is ended. */
export async function setPassword(db: Db, userId: number, password: string): Promise<void> {
  checkPasswordRules(password);
  const hash = await hashPassword(password, ACCOUNT_PASSWORD_COST);
  await db.transaction(async (tx) => {
    await tx
      .update(users)
      .set({ passwordHash: hash, passwordChangedAt: sql`now()`, updatedAt: sql`now()` })
      .where(eq(users.id, userId));
    await tx
      .update(browserSessions)
      .set({ revokedAt: sql`now()` })
      .where(and(eq(browserSessions.userId, userId), isNull(browserSessions.revokedAt)));
  });
}

/** A password for `user password EMAIL`: 20 characters from a CSPRNG (120 bits, base64url). */
export function generatePassword(): string {
  return randomBytes(15).toString('base64url');
}

/** A hash to check against when the account does not exist, so that an unknown address costs the same time. */
let decoy: Promise<string> | undefined;

/** The account whose email and password these are, or null (unknown address, no password, wrong password). */
export async function checkCredentials(
  db: Db,
  email: string,
  password: string,
): Promise<{ id: number; email: string; name: string; active: boolean } | null> {
  const [user] = await db.select().from(users).where(eq(users.email, email)).limit(1);
  if (!user?.passwordHash) {
    decoy ??= hashPassword(randomBytes(16).toString('hex'), ACCOUNT_PASSWORD_COST);
    await verifyPassword(password, await decoy);
    return null;
  }
  if (!(await verifyPassword(password, user.passwordHash))) return null;
  return { id: user.id, email: user.email, name: user.name, active: user.active };
}

export const hashToken = (token: string) => createHash('sha256').update(token).digest('hex');

export interface NewSession {
  id: number;
  token: string;
  expiresAt: Date;
}

export async function createSession(
  db: Db,
  userId: number,
  meta: { userAgent: string; clientIp: string },
): Promise<NewSession> {
  const token = randomBytes(32).toString('base64url');
  const expiresAt = new Date(Date.now() + SESSION_LIFETIME_MS);
  const [row] = await db
    .insert(browserSessions)
    .values({
      userId,
      tokenHash: hashToken(token),
      expiresAt,
      userAgent: meta.userAgent.slice(0, 256),
      clientIp: meta.clientIp,
    })
    .returning({ id: browserSessions.id });
  return { id: row.id, token, expiresAt };
}

export interface SessionRow {
  sessionId: number;
  userId: number;
  email: string;
  name: string;
  active: boolean;
  expiresAt: Date;
}

/** The live session (not revoked, not expired) with this token hash; its last_seen_at is kept to the minute. */
export async function findSession(db: Db, tokenHash: string): Promise<SessionRow | null> {
  const [row] = await db
    .select({
      sessionId: browserSessions.id,
      userId: browserSessions.userId,
      email: users.email,
      name: users.name,
      active: users.active,
      expiresAt: browserSessions.expiresAt,
      lastSeenAt: browserSessions.lastSeenAt,
    })
    .from(browserSessions)
    .innerJoin(users, eq(users.id, browserSessions.userId))
    .where(
      and(
        eq(browserSessions.tokenHash, tokenHash),
        isNull(browserSessions.revokedAt),
        gt(browserSessions.expiresAt, sql`now()`),
      ),
    )
    .limit(1);
  if (!row) return null;
  if (Date.now() - row.lastSeenAt.getTime() >= LAST_SEEN_RESOLUTION_MS)
    await db
      .update(browserSessions)
      .set({ lastSeenAt: sql`now()` })
      .where(eq(browserSessions.id, row.sessionId));
  const { lastSeenAt: _seen, ...session } = row;
  return session;
}

export async function revokeSession(db: Db, sessionId: number): Promise<void> {
  await db
    .update(browserSessions)
    .set({ revokedAt: sql`now()` })
    .where(and(eq(browserSessions.id, sessionId), isNull(browserSessions.revokedAt)));
}

/** A live browser session of an account, as Settings → Sessions lists it. */
export interface SessionListing {
  id: number;
  createdAt: Date;
  lastSeenAt: Date;
  expiresAt: Date;
  userAgent: string;
  clientIp: string;
}

/** Most sessions listed (a person signs in from a few browsers; the oldest beyond this are not shown). */
export const MAX_LISTED_SESSIONS = 100;

/** The account's live sessions (not revoked, not expired), the most recently seen first. */
export async function listSessions(db: Db, userId: number): Promise<SessionListing[]> {
  return db
    .select({
      id: browserSessions.id,
      createdAt: browserSessions.createdAt,
      lastSeenAt: browserSessions.lastSeenAt,
      expiresAt: browserSessions.expiresAt,
      userAgent: browserSessions.userAgent,
      clientIp: browserSessions.clientIp,
    })
    .from(browserSessions)
    .where(
      and(
        eq(browserSessions.userId, userId),
        isNull(browserSessions.revokedAt),
        gt(browserSessions.expiresAt, sql`now()`),
      ),
    )
    .orderBy(desc(browserSessions.lastSeenAt), desc(browserSessions.id))
    .limit(MAX_LISTED_SESSIONS);
}

/** Ends the account's live session `id`; false when the account has no such live session. */
export async function revokeOwnSession(db: Db, userId: number, id: number): Promise<boolean> {
  const rows = await db
    .update(browserSessions)
    .set({ revokedAt: sql`now()` })
    .where(
      and(
        eq(browserSessions.id, id),
        eq(browserSessions.userId, userId),
        isNull(browserSessions.revokedAt),
        gt(browserSessions.expiresAt, sql`now()`),
      ),
    )
    .returning({ id: browserSessions.id });
  return rows.length > 0;
}

/** Ends every live session of the account but `keepId`; how many ended. */
export async function revokeOtherSessions(db: Db, userId: number, keepId: number): Promise<number> {
  const rows = await db
    .update(browserSessions)
    .set({ revokedAt: sql`now()` })
    .where(and(eq(browserSessions.userId, userId), ne(browserSessions.id, keepId), isNull(browserSessions.revokedAt)))
    .returning({ id: browserSessions.id });
  return rows.length;
}

/** Failed sign-ins: per account address and per client network, in windows of THROTTLE_WINDOW_MS. */
export const THROTTLE_WINDOW_MS = 15 * 60_000;
export const THROTTLE_MAX_PER_ACCOUNT = 10;
export const THROTTLE_MAX_PER_NETWORK = 50;

/** Milliseconds until the first of these buckets admits another attempt, or 0 when all do. */
export async function throttledFor(db: Db, buckets: { bucket: string; max: number }[]): Promise<number> {
  let wait = 0;
  for (const { bucket, max } of buckets) {
    const [row] = rowsOf<{ failures: number; left_ms: number }>(
      await db.execute(sql`SELECT failures,
        (extract(epoch FROM window_started_at + make_interval(secs => ${THROTTLE_WINDOW_MS / 1000}) - now()) * 1000)::float8
          AS left_ms
        FROM login_throttle WHERE bucket = ${bucket}`),
    );
    if (row && row.failures >= max && row.left_ms > 0) wait = Math.max(wait, Math.ceil(row.left_ms));
  }
  return wait;
}

/** Counts one failed sign-in in each bucket (a window that has ended starts again at 1). */
export async function recordFailure(db: Db, buckets: string[]): Promise<void> {
  for (const bucket of buckets)
    await db.execute(sql`INSERT INTO login_throttle (bucket, failures, window_started_at) VALUES (${bucket}, 1, now())
      ON CONFLICT (bucket) DO UPDATE SET
        failures = CASE WHEN login_throttle.window_started_at + make_interval(secs => ${THROTTLE_WINDOW_MS / 1000}) <= now()
          THEN 1 ELSE login_throttle.failures + 1 END,
        window_started_at = CASE WHEN login_throttle.window_started_at + make_interval(secs => ${THROTTLE_WINDOW_MS / 1000}) <= now()
          THEN now() ELSE login_throttle.window_started_at END`);
}

export async function clearFailures(db: Db, bucket: string): Promise<void> {
  await db.execute(sql`DELETE FROM login_throttle WHERE bucket = ${bucket}`);
}

/** Ended windows and ended sessions are deleted (called now and then by the routes' sweep). */
export async function sweep(db: Db): Promise<void> {
  await db.execute(
    sql`DELETE FROM login_throttle WHERE window_started_at + make_interval(secs => ${THROTTLE_WINDOW_MS / 1000}) <= now()`,
  );
  await db.execute(
    sql`DELETE FROM browser_sessions WHERE expires_at <= now() - interval '30 days' OR revoked_at <= now() - interval '30 days'`,
  );
}

/** 'ok', 'inactive' (the account is deactivated) or null (no such session, signed out, revoked or expired). */
export type SessionState = 'ok' | 'inactive';

/** The state of a session as one SQL expression, for a statement that checks it alongside its own work. */
export function sessionStateSql(sessionId: number | Placeholder) {
  return sql<SessionState | null>`(SELECT CASE WHEN u.active THEN 'ok' ELSE 'inactive' END
    FROM browser_sessions s JOIN users u ON u.id = s.user_id
    WHERE s.id = ${sessionId} AND s.revoked_at IS NULL AND s.expires_at > now())`;
}

export async function sessionStillValid(db: Db | Tx, sessionId: number): Promise<SessionState | null> {
  const [row] = rowsOf<{ state: SessionState | null }>(
    await db.execute(sql`SELECT ${sessionStateSql(sessionId)} AS state`),
  );
  return row?.state ?? null;
}
