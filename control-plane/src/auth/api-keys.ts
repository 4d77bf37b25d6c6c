// API keys: `svc_` + 65 characters from a CSPRNG (69 in all); only the sha256 is stored; at most 10 active per account.
import { createHash, randomBytes } from 'node:crypto';
import { and, eq, gt, isNull, or, sql } from 'drizzle-orm';
import type { Db, Tx } from '../db/index.js';
import { apiKeys, users } from '../db/schema.js';
import { ApiError } from '../errors.js';

export const KEY_PREFIX = 'svc_';
export const KEY_BODY_LENGTH = 65;
export const KEY_LENGTH = KEY_PREFIX.length + KEY_BODY_LENGTH;
export const MAX_ACTIVE_KEYS = 10;
export const EXPIRY_CHOICES = ['never', '30', '90', '365'] as const;
export type KeyExpiry = (typeof EXPIRY_CHOICES)[number];

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
export const KEY_PATTERN = new RegExp(`^${KEY_PREFIX}[A-Za-z0-9]{${KEY_BODY_LENGTH}}$`);

/** A new key; rejection sampling keeps every character uniform over the 62-letter alphabet. */
export function generateKey(): string {
  let body = '';
  while (body.length < KEY_BODY_LENGTH) {
    for (const byte of randomBytes(96)) {
      if (byte < 248) body += ALPHABET[byte % 62]; // 248 = 4 * 62: bytes above would bias the first letters
      if (body.length === KEY_BODY_LENGTH) break;
    }
  }
  return KEY_PREFIX + body;
}

export function hashKey(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}

export interface CreateKeyOptions {
  readOnly?: boolean;
  expires?: KeyExpiry;
  name?: string;
  now?: Date;
}
export interface CreatedKey {
  id: number;
  key: string;
  expiresAt: Date | null;
}

/** Active = neither revoked nor expired. */
export function activeKeyCondition(now: Date) {
  return and(isNull(apiKeys.revokedAt), or(isNull(apiKeys.expiresAt), gt(apiKeys.expiresAt, now)));
}

export async function createApiKey(db: Db, userId: number, opts: CreateKeyOptions = {}): Promise<CreatedKey> {
  const now = opts.now ?? new Date();
  const expires = opts.expires ?? 'never';
  if (!EXPIRY_CHOICES.includes(expires))
    throw new ApiError('CP_ERR_INVALID_INPUT', `expiry must be one of: ${EXPIRY_CHOICES.join(', ')}`);
  const expiresAt = expires === 'never' ? null : new Date(now.getTime() + Number(expires) * 86_400_000);
  const key = generateKey();
  const id = await db.transaction(async (tx: Tx) => {
    // Lock the account row so two concurrent creations cannot both pass the cap.
    const owner = await tx.select({ id: users.id }).from(users).where(eq(users.id, userId)).for('update');
    if (owner.length === 0) throw new ApiError('CP_ERR_NOT_FOUND', 'user not found');
    const [{ count }] = await tx
      .select({ count: sql<number>`count(*)::int` })
      .from(apiKeys)
      .where(and(eq(apiKeys.userId, userId), activeKeyCondition(now)));
    if (count >= MAX_ACTIVE_KEYS) {
      throw new ApiError(
        'CP_ERR_INVALID_INPUT',
        `an account may have at most ${MAX_ACTIVE_KEYS} active API keys; revoke one first`,
      );
    }
    const [row] = await tx
      .insert(apiKeys)
      .values({
        userId,
        name: opts.name ?? '',
        keyHash: hashKey(key),
        keyPrefix: key.slice(0, 8),
        readOnly: opts.readOnly ?? false,
        expiresAt,
        createdAt: now,
      })
      .returning({ id: apiKeys.id });
    return row.id;
  });
  return { id, key, expiresAt };
}

export async function revokeApiKey(db: Db, keyId: number, now = new Date()): Promise<boolean> {
  const rows = await db
    .update(apiKeys)
    .set({ revokedAt: now })
    .where(and(eq(apiKeys.id, keyId), isNull(apiKeys.revokedAt)))
    .returning({ id: apiKeys.id });
  return rows.length > 0;
}

export async function listApiKeys(db: Db, userId: number) {
  return db
    .select({
      id: apiKeys.id,
      name: apiKeys.name,
      prefix: apiKeys.keyPrefix,
      readOnly: apiKeys.readOnly,
      expiresAt: apiKeys.expiresAt,
      revokedAt: apiKeys.revokedAt,
      lastUsedAt: apiKeys.lastUsedAt,
      createdAt: apiKeys.createdAt,
    })
    .from(apiKeys)
    .where(eq(apiKeys.userId, userId))
    .orderBy(apiKeys.id);
}
