// Accounts: created and (de)activated by the operator (admin CLI); API keys cannot manage accounts.
import { eq } from 'drizzle-orm';
import type { Db } from '../db/index.js';
import { users } from '../db/schema.js';
import { ApiError } from '../errors.js';

/** local@domain.tld without spaces, control or invisible format characters (an address is also typed by people). */
const EMAIL = /^[^\s@\p{Cc}\p{Cf}]+@[^\s@\p{Cc}\p{Cf}]+\.[^\s@\p{Cc}\p{Cf}]+$/u;

export function normalizeEmail(email: string): string {
  const e = email.trim().toLowerCase();
  if (!EMAIL.test(e) || e.length > 254) throw new ApiError('CP_ERR_INVALID_INPUT', `invalid email address "${email}"`);
  return e;
}

export async function createUser(db: Db, email: string, name = ''): Promise<{ id: number; email: string }> {
  const normalized = normalizeEmail(email);
  const rows = await db
    .insert(users)
    .values({ email: normalized, name })
    .onConflictDoNothing()
    .returning({ id: users.id, email: users.email });
  if (rows.length === 0) throw new ApiError('CP_ERR_CONFLICT', `user ${normalized} already exists`);
  return rows[0];
}

export async function userByEmail(db: Db, email: string) {
  const [user] = await db
    .select()
    .from(users)
    .where(eq(users.email, normalizeEmail(email)))
    .limit(1);
  if (!user) throw new ApiError('CP_ERR_NOT_FOUND', `no user ${email.trim().toLowerCase()}`);
  return user;
}

export async function setUserActive(db: Db, email: string, active: boolean): Promise<void> {
  const user = await userByEmail(db, email);
  await db.update(users).set({ active, updatedAt: new Date() }).where(eq(users.id, user.id));
}
