// basic_auth: HTTP Basic authentication (RFC 7617) against scrypt-hashed users; verified credentials are remembered.
import { scrypt, timingSafeEqual } from 'node:crypto';
import type { RuleBody } from '@platform/shared/match';

export interface BasicAuthAction {
  challenge: string;
  users: Map<string, string>;
  /** Authorization header values already verified (bounded), so scrypt runs once per credential, not per request. */
  verified: Set<string>;
}

const MAX_VERIFIED = 1024;

export function compileBasicAuth(f: RuleBody): BasicAuthAction {
  const users = new Map<string, string>();
  for (const u of (f.users as { username: string; password_hash: string }[]) ?? [])
    users.set(u.username, u.password_hash);
  return { challenge: `Basic realm="${String(f.realm ?? 'Restricted')}", charset="UTF-8"`, users, verified: new Set() };
}

function verify(password: string, encoded: string): Promise<boolean> {
  const m = /^scrypt\$(\d+)\$(\d+)\$(\d+)\$([A-Za-z0-9_-]+)\$([A-Za-z0-9_-]+)$/.exec(encoded);
  if (!m) return Promise.resolve(false);
  const expected = Buffer.from(m[5], 'base64url');
  return new Promise((resolve) => {
    scrypt(
      password,
      Buffer.from(m[4], 'base64url'),
      expected.length,
      { N: Number(m[1]), r: Number(m[2]), p: Number(m[3]) },
      (err, got) => {
        resolve(!err && timingSafeEqual(got, expected));
      },
    );
  });
}

/** True when `authorization` carries the credentials of one of the rule's users. */
export function isAuthorized(a: BasicAuthAction, authorization: string | undefined): boolean | Promise<boolean> {
  if (!authorization || !/^basic /i.test(authorization)) return false;
  if (a.verified.has(authorization)) return true;
  const decoded = Buffer.from(authorization.slice(6).trim(), 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return false;
  const hash = a.users.get(decoded.slice(0, colon));
  if (!hash) return false;
  return verify(decoded.slice(colon + 1), hash).then((ok) => {
    if (ok) {
      if (a.verified.size >= MAX_VERIFIED) a.verified.clear();
      a.verified.add(authorization);
    }
    return ok;
  });
}
