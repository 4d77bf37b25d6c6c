// Browser sessions: the cookie, the CSRF token derived from it, and resolveBrowserSession, which the panel, the
// authentication hook and the SSO provider (issue 19) use to learn which account a browser request comes from.
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../../errors.js';
import { findSession, hashToken, type SessionRow } from './store.js';

/** Over TLS the cookie is `__Host-` prefixed (Secure, Path=/, no Domain: the browser enforces all three). */
export const SECURE_COOKIE = '__Host-session';
export const PLAIN_COOKIE = 'session';
export const CSRF_HEADER = 'x-csrf-token';
/** A session token is 32 random bytes in base64url. */
const TOKEN = /^[A-Za-z0-9_-]{43}$/;

export interface BrowserSession extends SessionRow {
  /** The value the browser sends back in X-CSRF-Token on every state-changing request. */
  csrfToken: string;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Memo of resolveBrowserSession for this request (undefined: not resolved yet). */
    browserSession?: BrowserSession | null;
  }
}

/** Whether the browser reached us over TLS (directly, or through a trusted proxy's X-Forwarded-Proto). */
export function overTls(request: FastifyRequest): boolean {
  return request.protocol === 'https' || request.server.config.publicBaseUrl.startsWith('https:');
}

/** The session token of the request's cookie (the one its scheme uses), or null. */
export function sessionToken(request: FastifyRequest): string | null {
  const header = request.headers.cookie;
  if (typeof header !== 'string' || header.length > 16_384) return null;
  const name = overTls(request) ? SECURE_COOKIE : PLAIN_COOKIE;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq === -1 || part.slice(0, eq).trim() !== name) continue;
    const value = part.slice(eq + 1).trim();
    return TOKEN.test(value) ? value : null;
  }
  return null;
}

/** The CSRF token of a session: an HMAC of a fixed label under the session token, so nothing more is stored. */
export function csrfTokenOf(sessionTokenValue: string): string {
  return createHmac('sha256', sessionTokenValue).update('csrf').digest('base64url');
}

/**
 * The account a browser request is signed in as: the live session named by its cookie (not revoked, not expired,
 * checked in the database on every call, so a sign-out or revocation applies to the next request), or null.
 * An inactive account's session is returned with `active: false`; callers refuse it.
 */
export async function resolveBrowserSession(request: FastifyRequest): Promise<BrowserSession | null> {
  if (request.browserSession !== undefined) return request.browserSession;
  const token = sessionToken(request);
  const row = token ? await findSession(request.server.db, hashToken(token)) : null;
  request.browserSession = row && token ? { ...row, csrfToken: csrfTokenOf(token) } : null;
  return request.browserSession;
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Refuses a state-changing browser request whose X-CSRF-Token is not its session's (403). The token reaches the
 * page only through this origin's JSON answers (a cross-site page can neither read it nor set the header without a
 * CORS preflight, which this server never grants).
 */
export function checkCsrf(request: FastifyRequest, session: BrowserSession): void {
  if (SAFE_METHODS.has(request.method)) return;
  const sent = request.headers[CSRF_HEADER];
  const a = Buffer.from(typeof sent === 'string' ? sent : '');
  const b = Buffer.from(session.csrfToken);
  if (a.length !== b.length || !timingSafeEqual(a, b))
    throw new ApiError('CP_ERR_CSRF', 'missing or wrong X-CSRF-Token header; reload the page');
}

export function setSessionCookie(request: FastifyRequest, reply: FastifyReply, token: string, expiresAt: Date): void {
  const secure = overTls(request);
  reply.header(
    'set-cookie',
    `${secure ? SECURE_COOKIE : PLAIN_COOKIE}=${token}; Path=/; HttpOnly; SameSite=Lax; Expires=${expiresAt.toUTCString()}${secure ? '; Secure' : ''}`,
  );
}

export function clearSessionCookie(request: FastifyRequest, reply: FastifyReply): void {
  const secure = overTls(request);
  reply.header(
    'set-cookie',
    `${secure ? SECURE_COOKIE : PLAIN_COOKIE}=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0${secure ? '; Secure' : ''}`,
  );
}
