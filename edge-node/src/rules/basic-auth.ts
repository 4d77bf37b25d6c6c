// basic_auth: HTTP Basic authentication (RFC 7617) against scrypt-hashed users; verified credentials are remembered.
// Failures are throttled per (rule, client address), and scrypt runs on a thread of its own, not on libuv's shared
// pool (4 threads that also serve every tenant's DNS lookups and file work): guessing cannot starve other tenants.
import { Worker } from 'node:worker_threads';
import type { RuleBody } from '@platform/shared/match';
import { compileSso, type SsoRequirement } from './sso.js';

export interface BasicAuthAction {
  ruleId: number;
  challenge: string;
  users: Map<string, string>;
  /** Authorization header values already verified (bounded), so scrypt runs once per credential, not per request. */
  verified: Set<string>;
  /** The `sso` block (rules/sso.ts): signed-in accounts let through beside the Basic users; null without one. */
  sso: SsoRequirement | null;
}

/** `throttled`: too many failures from this address for this rule (or too many checks queued): answer 429. */
export type AuthVerdict = boolean | 'throttled';

const MAX_VERIFIED = 1024;
/** Failed attempts allowed per (rule, client address) in one window, and the window. */
export const AUTH_MAX_FAILURES = 10;
export const AUTH_WINDOW_MS = 60_000;
/** Entries kept by the throttle (oldest dropped first) and checks waiting for the scrypt thread. */
const MAX_TRACKED = 100_000;
const MAX_QUEUED = 256;

export function compileBasicAuth(f: RuleBody, rule: { id: number }): BasicAuthAction {
  const users = new Map<string, string>();
  for (const u of (f.users as { username: string; password_hash: string }[]) ?? [])
    users.set(u.username, u.password_hash);
  return {
    ruleId: rule.id,
    challenge: `Basic realm="${String(f.realm ?? 'Restricted')}", charset="UTF-8"`,
    users,
    verified: new Set(),
    sso: compileSso(f),
  };
}

interface Failures {
  count: number;
  resetAt: number;
}
/** `<rule id>|<client address>` → failures in the current window (Map order: oldest first). */
const failures = new Map<string, Failures>();

/** Seconds until `peer` may try `a` again, or 0 when it may now. */
export function retryAfterSec(a: BasicAuthAction, peer: string, now = Date.now()): number {
  const f = failures.get(`${a.ruleId}|${peer}`);
  if (!f || f.resetAt <= now || f.count < AUTH_MAX_FAILURES) return 0;
  return Math.ceil((f.resetAt - now) / 1000);
}

function fail(a: BasicAuthAction, peer: string): false {
  const key = `${a.ruleId}|${peer}`;
  const now = Date.now();
  let f = failures.get(key);
  if (!f || f.resetAt <= now) {
    failures.delete(key);
    if (failures.size >= MAX_TRACKED) failures.delete(failures.keys().next().value!);
    f = { count: 0, resetAt: now + AUTH_WINDOW_MS };
    failures.set(key, f);
  }
  f.count++;
  return false;
}

// The scrypt thread: inline CommonJS so it runs the same under tsx and compiled code.
const WORKER_SOURCE = `
const { parentPort } = require('node:worker_threads');
const { scryptSync, timingSafeEqual } = require('node:crypto');
parentPort.on('message', (m) => {
  let ok = false;
  try {
    const expected = Buffer.from(m.expected, 'base64url');
    const got = scryptSync(m.password, Buffer.from(m.salt, 'base64url'), expected.length,
      { N: m.N, r: m.r, p: m.p, maxmem: 256 * m.N * m.r });
    ok = timingSafeEqual(got, expected);
  } catch {}
  parentPort.postMessage({ id: m.id, ok });
});`;

let worker: Worker | undefined;
let nextId = 0;
const pending = new Map<number, (ok: boolean) => void>();

function scryptThread(): Worker {
  if (!worker) {
    const w = new Worker(WORKER_SOURCE, { eval: true });
    w.on('message', (m: { id: number; ok: boolean }) => {
      pending.get(m.id)?.(m.ok);
      pending.delete(m.id);
    });
    w.on('error', () => undefined);
    w.on('exit', () => {
      // A dead thread fails its waiting checks; the next check starts a new one.
      for (const done of pending.values()) done(false);
      pending.clear();
      if (worker === w) worker = undefined;
    });
    // After the listeners: a listener added later would hold the process open again.
    w.unref();
    worker = w;
  }
  return worker;
}

const HASH = /^scrypt\$(\d+)\$(\d+)\$(\d+)\$([A-Za-z0-9_-]+)\$([A-Za-z0-9_-]+)$/;

function verify(password: string, encoded: string): Promise<boolean> | undefined {
  const m = HASH.exec(encoded);
  if (!m) return Promise.resolve(false);
  if (pending.size >= MAX_QUEUED) return undefined;
  const id = nextId++;
  return new Promise((resolve) => {
    pending.set(id, resolve);
    scryptThread().postMessage({ id, password, salt: m[4], expected: m[5], N: +m[1], r: +m[2], p: +m[3] });
  });
}

/** Whether `authorization` carries the credentials of one of the rule's users, for a client at `peer`. */
export function isAuthorized(
  a: BasicAuthAction,
  authorization: string | undefined,
  peer: string,
): AuthVerdict | Promise<AuthVerdict> {
  if (!authorization || !/^basic /i.test(authorization)) return false;
  if (a.verified.has(authorization)) return true;
  if (retryAfterSec(a, peer) > 0) return 'throttled';
  const decoded = Buffer.from(authorization.slice(6).trim(), 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return fail(a, peer);
  const hash = a.users.get(decoded.slice(0, colon));
  if (!hash) return fail(a, peer);
  const check = verify(decoded.slice(colon + 1), hash);
  if (!check) return 'throttled';
  return check.then((ok) => {
    if (!ok) return fail(a, peer);
    failures.delete(`${a.ruleId}|${peer}`);
    if (a.verified.size >= MAX_VERIFIED) a.verified.clear();
    a.verified.add(authorization);
    return true;
  });
}
