// The `sso` requirement of basic_auth rules (issue 19): only browsers signed in to the platform as one of the rule's
// accounts pass. A browser without an edge session is sent (302) to the control plane's GET /sso/edge/session, which
// sends it back to EDGE_SSO_PATH with an RS256 token (the SSO signing key, audience the hostname, 2 minutes, a jti).
// The edge verifies that token once (jose, against CONTROL_PLANE_URL/sso/jwks: cached, fetched again for an unknown
// key id at most every JWKS_COOLDOWN_MS), uses its jti up, and sets its own session cookie: `<issued s>.<email>.<mac>`,
// an HMAC under a key derived from the challenge secret of (issued, email, host). On later requests the cookie costs
// an HMAC at most (a table of recently verified values makes it a few string compares), never an RSA verification;
// each rule accepts a cookie younger than its session_ttl_s whose email it lists.
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { createRemoteJWKSet, jwtVerify, type JWTVerifyGetKey } from 'jose';
import {
  EDGE_SSO_PATH,
  EDGE_SSO_TOKEN_TYPE,
  MAX_SSO_RETURN_TO,
  SSO_SESSION_TTL,
  type RuleBody,
} from '@platform/shared/match';
import { deriveEdgeKey, macTag, slotOf } from './challenge.js';

export { EDGE_SSO_PATH };
export const SSO_COOKIE = 'edge_sso';
/**
 * The sign-in state: set when the edge sends a browser to sign in, echoed by the control plane in the token's `nonce`;
 * a token whose nonce is not this browser's state sets no session (a token pushed into another browser by a link,
 * i.e. a forced sign-in, is ignored). Scoped to EDGE_SSO_PATH, 10 minutes.
 */
export const SSO_STATE_COOKIE = 'edge_sso_state';
const STATE_TTL_S = 600;
/**
 * Seconds of clock skew tolerated on a token by default (as the provider's CLOCK_TOLERANCE_SECONDS);
 * EDGE_SSO_CLOCK_TOLERANCE_SECONDS sets another (tests shorten it).
 */
export const CLOCK_TOLERANCE_S = 15;
/** A token longer than this is refused before any parsing (an RS256 JWT of our claims is about 700 characters). */
export const MAX_TOKEN_CHARS = 4096;
/** Least time between two JWKS fetches (an unknown key id asks for one); the key set is kept 10 minutes. */
export const JWKS_COOLDOWN_MS = 30_000;
const JWKS_MAX_AGE_MS = 600_000;
/** Token ids used up (kept until the token expires); beyond it sign-ins wait for the oldest to expire. */
const MAX_USED = 100_000;

export interface SsoRequirement {
  emails: ReadonlySet<string>;
  ttlS: number;
}

export function compileSso(f: RuleBody): SsoRequirement | null {
  const sso = f.sso as { emails?: string[]; session_ttl_s?: number } | undefined;
  if (!sso || !Array.isArray(sso.emails)) return null;
  return { emails: new Set(sso.emails), ttlS: Number(sso.session_ttl_s ?? SSO_SESSION_TTL.def) };
}

interface SsoSetup {
  /** The control plane's address for this node (JWKS), and the one browsers are sent to. */
  controlPlaneUrl: string | undefined;
  browserUrl: string | undefined;
  /** Seconds of clock skew tolerated on a token and a session cookie; CLOCK_TOLERANCE_S when absent. */
  clockToleranceS?: number;
}

let setup: SsoSetup = { controlPlaneUrl: undefined, browserUrl: undefined };
let clockToleranceS = CLOCK_TOLERANCE_S;
let jwks: JWTVerifyGetKey | undefined;
let key: Buffer = Buffer.alloc(32);

/** Called once at start (and by tests): where the JWKS is, where browsers sign in, and the cookies' key. */
export function configureSso(
  s: SsoSetup,
  challengeSecret: string | undefined,
  nodeToken: string,
  jwksCooldownMs = JWKS_COOLDOWN_MS,
): void {
  setup = s;
  clockToleranceS = s.clockToleranceS ?? CLOCK_TOLERANCE_S;
  jwks = s.controlPlaneUrl
    ? createRemoteJWKSet(new URL(`${s.controlPlaneUrl}/sso/jwks`), {
        cooldownDuration: jwksCooldownMs,
        cacheMaxAge: JWKS_MAX_AGE_MS,
        timeoutDuration: 5000,
      })
    : undefined;
  key = deriveEdgeKey('edge-sso-v1', challengeSecret, nodeToken);
  verifiedValue.fill(undefined);
}

function mac(text: string): string {
  return macTag(key, text);
}

/**
 * Where to send a browser to sign in for a request to `scheme://hostHeader/path?query`: the control plane's URL and
 * the Set-Cookie of a new sign-in state; undefined when no control plane is set.
 */
export function signIn(
  scheme: string,
  hostHeader: string,
  path: string,
  query: string,
): { location: string; cookie: string } | undefined {
  const base = setup.browserUrl ?? setup.controlPlaneUrl;
  if (!base) return undefined;
  let back = `${scheme}://${hostHeader}${query === '' ? path : `${path}?${query}`}`;
  // An over-long address goes back to the hostname's root rather than be refused by the control plane.
  if (back.length > MAX_SSO_RETURN_TO) back = `${scheme}://${hostHeader}/`;
  const state = randomBytes(18).toString('base64url');
  return {
    location: `${base}/sso/edge/session?return_to=${encodeURIComponent(back)}&state=${state}`,
    cookie:
      `${SSO_STATE_COOKIE}=${state}; Path=${EDGE_SSO_PATH}; Max-Age=${STATE_TTL_S}; HttpOnly; SameSite=Lax` +
      (scheme === 'https' ? '; Secure' : ''),
  };
}

/** The sign-in state cookie's value in a Cookie header, or ''. */
export function stateOf(cookieHeader: string | undefined): string {
  if (cookieHeader === undefined) return '';
  for (const part of cookieHeader.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === SSO_STATE_COOKIE) return part.slice(eq + 1).trim();
  }
  return '';
}

/** Clears the sign-in state once a session is set. */
export function clearState(secure: boolean): string {
  return `${SSO_STATE_COOKIE}=; Path=${EDGE_SSO_PATH}; Max-Age=0; HttpOnly; SameSite=Lax${secure ? '; Secure' : ''}`;
}

// Cookies verified lately (see challenge.ts's clearance table): a hit needs the same value and host.
const SLOTS = 16384;
const verifiedValue: (string | undefined)[] = new Array<string | undefined>(SLOTS);
const verifiedHost: (string | undefined)[] = new Array<string | undefined>(SLOTS);
const verifiedEmail: string[] = new Array<string>(SLOTS);
const verifiedIssued: number[] = new Array<number>(SLOTS);

/** An edge session of `email` on `host` from now: the cookie's value. */
export function sessionValue(email: string, host: string, now = Date.now()): string {
  const issued = Math.floor(now / 1000);
  const e = Buffer.from(email).toString('base64url');
  return `${issued}.${e}.${mac(`s|${issued}|${e}|${host}`)}`;
}

/** The Set-Cookie header of an edge session: host-only, HttpOnly, SameSite=Lax, Secure over HTTPS. */
export function sessionCookie(value: string, maxAgeS: number, secure: boolean): string {
  return `${SSO_COOKIE}=${value}; Path=/; Max-Age=${maxAgeS}; HttpOnly; SameSite=Lax${secure ? '; Secure' : ''}`;
}

/** Scratch of sessionOf: the session's issue time (s). */
let foundIssued = 0;

/**
 * The email of a valid edge session in the Cookie header for `host` (its issue time in `foundIssued`), or undefined.
 * Several `edge_sso` cookies may come (another path's, a stale one): the first valid one wins.
 */
function sessionOf(cookieHeader: string, host: string, now: number): string | undefined {
  let at = cookieHeader.indexOf(`${SSO_COOKIE}=`);
  while (at >= 0) {
    if (at === 0 || cookieHeader[at - 1] === ' ' || cookieHeader[at - 1] === ';') {
      const start = at + SSO_COOKIE.length + 1;
      let end = cookieHeader.indexOf(';', start);
      if (end < 0) end = cookieHeader.length;
      const email = validSession(cookieHeader.slice(start, end).trim(), host, now);
      if (email !== undefined) return email;
    }
    at = cookieHeader.indexOf(`${SSO_COOKIE}=`, at + 1);
  }
  return undefined;
}

function validSession(value: string, host: string, now: number): string | undefined {
  if (value.length > 512) return undefined;
  const slot = slotOf(value, SLOTS);
  if (verifiedValue[slot] === value && verifiedHost[slot] === host) {
    foundIssued = verifiedIssued[slot];
    return verifiedEmail[slot];
  }
  const d1 = value.indexOf('.');
  const d2 = value.indexOf('.', d1 + 1);
  if (d1 < 1 || d1 > 12 || d2 < 0) return undefined;
  const issuedText = value.slice(0, d1);
  if (!/^\d+$/.test(issuedText)) return undefined;
  const issued = Number(issuedText);
  if (issued * 1000 > now + clockToleranceS * 1000) return undefined;
  const e = value.slice(d1 + 1, d2);
  const expected = mac(`s|${issued}|${e}|${host}`);
  const got = value.slice(d2 + 1);
  if (got.length !== expected.length || !timingSafeEqual(Buffer.from(got), Buffer.from(expected))) return undefined;
  const email = Buffer.from(e, 'base64url').toString('utf8');
  verifiedValue[slot] = value;
  verifiedHost[slot] = host;
  verifiedEmail[slot] = email;
  verifiedIssued[slot] = issued;
  foundIssued = issued;
  return email;
}

/**
 * What an sso rule makes of a request's cookies: `pass` (a live session of a listed account), `other` (a live session
 * of an account the rule does not list: its email in `deniedEmail`), or `none`.
 */
export function ssoVerdict(
  req: SsoRequirement,
  cookieHeader: string | undefined,
  host: string,
  now = Date.now(),
): 'pass' | 'other' | 'none' {
  if (cookieHeader === undefined || cookieHeader.indexOf(SSO_COOKIE) < 0) return 'none';
  const email = sessionOf(cookieHeader, host, now);
  if (email === undefined || (foundIssued + req.ttlS) * 1000 <= now) return 'none';
  return req.emails.has(email) ? 'pass' : 'other';
}

/** Used token ids → expiry (ms); Map order is use order. */
const used = new Map<string, number>();

export type TokenVerdict =
  { ok: true; email: string } | { ok: false; status: number; reason: string; otherBrowser?: true };

/**
 * Verifies an edge session token for `host` (signature, type, audience, lifetime; its nonce the browser's sign-in
 * `state`) and uses its id up. `otherBrowser`: a good token of a sign-in this browser did not start.
 */
export async function acceptToken(token: string, host: string, state: string, now = Date.now()): Promise<TokenVerdict> {
  if (!jwks) return { ok: false, status: 503, reason: 'single sign-on is not configured on this edge' };
  if (token.length === 0 || token.length > MAX_TOKEN_CHARS)
    return { ok: false, status: 400, reason: 'malformed token' };
  let payload: Record<string, unknown>;
  try {
    ({ payload } = await jwtVerify(token, jwks, {
      algorithms: ['RS256'],
      typ: EDGE_SSO_TOKEN_TYPE,
      audience: host,
      clockTolerance: clockToleranceS,
      requiredClaims: ['exp', 'iat', 'jti', 'sub'],
      currentDate: new Date(now),
    }));
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code === 'ERR_JWKS_TIMEOUT' || code === 'ERR_JOSE_GENERIC' || (err as Error).name === 'TypeError')
      return { ok: false, status: 503, reason: 'the sign-in keys could not be fetched; retry later' };
    return { ok: false, status: 403, reason: 'invalid sign-in token' };
  }
  const { email, jti, exp, nonce } = payload as { email?: unknown; jti: unknown; exp: number; nonce?: unknown };
  if (typeof email !== 'string' || email.length > 254 || typeof jti !== 'string' || jti.length > 64)
    return { ok: false, status: 403, reason: 'invalid sign-in token' };
  if (typeof nonce !== 'string' || state === '' || nonce.length !== state.length || nonce !== state)
    return { ok: false, status: 403, reason: 'this sign-in was started in another browser', otherBrowser: true };
  for (const [k, until] of used) {
    if (until > now) break;
    used.delete(k);
  }
  if (used.has(jti)) return { ok: false, status: 403, reason: 'sign-in token already used' };
  if (used.size >= MAX_USED) return { ok: false, status: 503, reason: 'too many sign-ins; retry later' };
  used.set(jti, (exp + clockToleranceS) * 1000);
  return { ok: true, email };
}
