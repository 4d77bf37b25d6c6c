// Password hashes of basic_auth users: scrypt with a random salt, encoded `scrypt$N$r$p$salt$hash` (base64url).
// One hash costs tens of milliseconds of CPU, so hashing never runs on the event loop: node's asynchronous scrypt
// runs in libuv's thread pool, and a process-wide FIFO queue lets only a few run at once (the pool is shared with
// file and DNS work), each caller taking one slot at a time so a large batch cannot starve a small one.
import { availableParallelism } from 'node:os';
import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';

const N = 16384,
  R = 8,
  P = 1,
  KEYLEN = 32;

/** Hashes computed at the same time in this process: leave a core for the event loop. */
export const HASH_CONCURRENCY = Math.max(1, Math.min(4, availableParallelism() - 1));

function scryptAsync(password: string, salt: Buffer, keylen: number, options: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    scrypt(password, salt, keylen, options, (err, key) => (err ? reject(err) : resolve(key))),
  );
}

let running = 0;
const waiting: (() => void)[] = [];

async function inTurn<T>(work: () => Promise<T>): Promise<T> {
  if (running >= HASH_CONCURRENCY) await new Promise<void>((resolve) => waiting.push(resolve));
  else running++;
  try {
    return await work();
  } finally {
    const next = waiting.shift();
    if (next) next();
    else running--;
  }
}

/**
 * `cost` is scrypt's N (a power of two): 16384 for basic_auth users (an edge checks them on requests), more for
 * accounts' sign-in passwords (control-plane areas/login: 65536, 64 MiB).
 */
export async function hashPassword(password: string, cost = N): Promise<string> {
  const salt = randomBytes(16);
  const hash = await inTurn(() =>
    scryptAsync(password, salt, KEYLEN, { N: cost, r: R, p: P, maxmem: 128 * cost * R * 2 }),
  );
  return `scrypt$${cost}$${R}$${P}$${salt.toString('base64url')}$${hash.toString('base64url')}`;
}

/** Hashes each password in order, one queue slot at a time (other callers' hashes interleave). */
export async function hashPasswords(passwords: readonly string[]): Promise<string[]> {
  const out: string[] = [];
  for (const p of passwords) out.push(await hashPassword(p));
  return out;
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

/** Checks a password against a hash (one scrypt, off the event loop). */
export async function verifyPassword(password: string, encoded: string): Promise<boolean> {
  const m = FORMAT.exec(encoded);
  if (!m) return false;
  const expected = Buffer.from(m[5]!, 'base64url');
  const got = await inTurn(() =>
    scryptAsync(password, Buffer.from(m[4]!, 'base64url'), expected.length, {
      N: Number(m[1]),
      r: Number(m[2]),
      p: Number(m[3]),
      maxmem: 128 * Number(m[1]) * Number(m[2]) * 2,
    }),
  );
  return timingSafeEqual(got, expected);
}
