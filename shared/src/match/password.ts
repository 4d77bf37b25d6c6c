// Password hashes of basic_auth users: scrypt with a random salt, encoded `scrypt$N$r$p$salt$hash` (base64url).
import { randomBytes, scryptSync, timingSafeEqual } from 'node:crypto';

const N = 16384,
  R = 8,
  P = 1,
  KEYLEN = 32;

export function hashPassword(password: string): string {
  const salt = randomBytes(16);
  const hash = scryptSync(password, salt, KEYLEN, { N, r: R, p: P });
  return `scrypt$${N}$${R}$${P}$${salt.toString('base64url')}$${hash.toString('base64url')}`;
}

const FORMAT = /^scrypt\$(\d+)\$(\d+)\$(\d+)\$([A-Za-z0-9_-]{16,})\$([A-Za-z0-9_-]{32,})$/;

export function isPasswordHash(s: string): boolean {
  const m = FORMAT.exec(s);
  return (
    m !== null &&
    [1024, 2048, 4096, 8192, 16384, 32768].includes(Number(m[1])) &&
    Number(m[2]) <= 16 &&
    Number(m[3]) <= 4
  );
}

/** Checks a password against a hash. Costs one scrypt (tens of ms): callers cache successful credentials. */
export function verifyPassword(password: string, encoded: string): boolean {
  const m = FORMAT.exec(encoded);
  if (!m) return false;
  const expected = Buffer.from(m[5], 'base64url');
  const got = scryptSync(password, Buffer.from(m[4], 'base64url'), expected.length, {
    N: Number(m[1]),
    r: Number(m[2]),
    p: Number(m[3]),
  });
  return timingSafeEqual(got, expected);
}
