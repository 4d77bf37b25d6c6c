// Accounts' sign-in for the web panel and the SSO provider: POST /auth/login, POST /auth/logout, GET /auth/session,
// PUT /users/me/password, GET /users/me/sessions, DELETE /users/me/sessions/{id}, POST
// /users/me/sessions/sign-out-others. Browser surfaces only: any API key gets 403 here (spec Authentication §6).
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { ApiError, MESSAGES } from '../../errors.js';
import { normalizeEmail } from '../../admin/users.js';
import { clientNetwork } from '../../plugins/rate-limit.js';
import { LoginBody, PasswordChangeBody, SessionAnswer, SessionIdParams } from './schemas.js';
import {
  checkCredentials,
  checkPasswordRules,
  clearFailures,
  createSession,
  listSessions,
  recordFailure,
  revokeOtherSessions,
  revokeOwnSession,
  revokeSession,
  setPassword,
  sweep,
  throttledFor,
  THROTTLE_MAX_PER_ACCOUNT,
  THROTTLE_MAX_PER_NETWORK,
} from './store.js';
import {
  checkCsrf,
  clearSessionCookie,
  csrfTokenOf,
  resolveBrowserSession,
  setSessionCookie,
  type BrowserSession,
} from './session.js';

/** Routes that take no API key (the authentication hook counts them against the client address). */
const publicRoute = { public: true };
const SWEEP_MS = 10 * 60_000;

/** The signed-in session of a browser request; 401 without one, 403 for an inactive account or a bad CSRF token. */
export async function requireBrowserSession(request: FastifyRequest): Promise<BrowserSession> {
  const session = await resolveBrowserSession(request);
  if (!session) throw new ApiError('CP_ERR_NOT_SIGNED_IN', 'not signed in');
  if (!session.active) throw new ApiError('CP_ERR_ACCOUNT_INACTIVE', MESSAGES.inactive);
  checkCsrf(request, session);
  return session;
}

function sessionAnswer(session: Pick<BrowserSession, 'userId' | 'email' | 'name' | 'expiresAt' | 'csrfToken'>) {
  return {
    user: { id: session.userId, email: session.email, name: session.name },
    csrf_token: session.csrfToken,
    expires_at: session.expiresAt.toISOString(),
  };
}

export default async function loginRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const hide = true;

  const sweeper = setInterval(() => {
    sweep(app.db).catch((err: unknown) => app.log.warn({ err }, 'could not sweep sign-in tables'));
  }, SWEEP_MS);
  sweeper.unref();
  app.addHook('onClose', async () => clearInterval(sweeper));

  app.post(
    '/auth/login',
    { config: publicRoute, schema: { hide, body: LoginBody, response: { 200: SessionAnswer } } },
    async (request, reply) => {
      let email: string;
      try {
        email = normalizeEmail(request.body.email);
      } catch {
        throw new ApiError('CP_ERR_SIGN_IN_FAILED', 'invalid email or password');
      }
      const accountBucket = `account:${email}`;
      const networkBucket = `network:${clientNetwork(request.ip)}`;
      // Throttled before any hashing: a guess refused here costs one indexed read.
      const wait = await throttledFor(app.db, [
        { bucket: accountBucket, max: THROTTLE_MAX_PER_ACCOUNT },
        { bucket: networkBucket, max: THROTTLE_MAX_PER_NETWORK },
      ]);
      if (wait > 0) {
        const minutes = Math.ceil(wait / 60_000);
        reply.header('retry-after', String(Math.ceil(wait / 1000)));
        throw new ApiError(
          'CP_ERR_SIGN_IN_THROTTLED',
          `too many failed sign-ins; try again in ${minutes} minute${minutes === 1 ? '' : 's'}`,
        );
      }
      const user = await checkCredentials(app.db, email, request.body.password);
      if (!user) {
        await recordFailure(app.db, [accountBucket, networkBucket]);
        throw new ApiError('CP_ERR_SIGN_IN_FAILED', 'invalid email or password');
      }
      if (!user.active) throw new ApiError('CP_ERR_ACCOUNT_INACTIVE', MESSAGES.inactive);
      await clearFailures(app.db, accountBucket);
      const ua = request.headers['user-agent'];
      const created = await createSession(app.db, user.id, {
        userAgent: typeof ua === 'string' ? ua : '',
        clientIp: request.ip,
      });
      setSessionCookie(request, reply, created.token, created.expiresAt);
      reply.header('cache-control', 'no-store');
      return sessionAnswer({
        userId: user.id,
        email: user.email,
        name: user.name,
        expiresAt: created.expiresAt,
        csrfToken: csrfTokenOf(created.token),
      });
    },
  );

  app.post('/auth/logout', { config: publicRoute, schema: { hide } }, async (request, reply) => {
    const session = await resolveBrowserSession(request);
    if (session) {
      checkCsrf(request, session);
      await revokeSession(app.db, session.sessionId);
    }
    clearSessionCookie(request, reply);
    return { message: 'signed out' };
  });

  app.get(
    '/auth/session',
    { config: publicRoute, schema: { hide, response: { 200: SessionAnswer } } },
    async (request, reply) => {
      const session = await requireBrowserSession(request);
      reply.header('cache-control', 'no-store');
      return sessionAnswer(session);
    },
  );

  // The session's own account (a key never reaches /users/**): the authentication hook has resolved the session.
  app.put('/users/me/password', { schema: { hide, body: PasswordChangeBody } }, async (request, reply) => {
    const session = await requireBrowserSession(request);
    checkPasswordRules(request.body.new_password);
    // Guesses of the current password from a session count with the sign-in's failures of the account.
    const accountBucket = `account:${session.email}`;
    if ((await throttledFor(app.db, [{ bucket: accountBucket, max: THROTTLE_MAX_PER_ACCOUNT }])) > 0)
      throw new ApiError('CP_ERR_SIGN_IN_THROTTLED', 'too many failed attempts; try again later');
    if (!(await checkCredentials(app.db, session.email, request.body.current_password))) {
      await recordFailure(app.db, [accountBucket]);
      throw new ApiError('CP_ERR_SIGN_IN_FAILED', 'the current password is wrong');
    }
    // Every session of the account ends (this one included); the browser signs in again with the new password.
    await setPassword(app.db, session.userId, request.body.new_password);
    clearSessionCookie(request, reply);
    return { message: 'password changed; sign in again' };
  });

  // The account's browser sessions (Settings → Sessions): where it is signed in, ending one, or all but this one.
  app.get('/users/me/sessions', { schema: { hide } }, async (request, reply) => {
    const session = await requireBrowserSession(request);
    reply.header('cache-control', 'no-store');
    const sessions = (await listSessions(app.db, session.userId)).map((s) => ({
      id: s.id,
      current: s.id === session.sessionId,
      user_agent: s.userAgent,
      client_ip: s.clientIp,
      created_at: s.createdAt.toISOString(),
      last_seen_at: s.lastSeenAt.toISOString(),
      expires_at: s.expiresAt.toISOString(),
    }));
    return { sessions };
  });

  app.delete('/users/me/sessions/:id', { schema: { hide, params: SessionIdParams } }, async (request, reply) => {
    const session = await requireBrowserSession(request);
    if (!(await revokeOwnSession(app.db, session.userId, request.params.id)))
      throw new ApiError('CP_ERR_NOT_FOUND', 'session not found');
    // Ending the session this browser uses is a sign-out.
    if (request.params.id === session.sessionId) clearSessionCookie(request, reply);
    return { message: 'session ended' };
  });

  app.post('/users/me/sessions/sign-out-others', { schema: { hide } }, async (request) => {
    const session = await requireBrowserSession(request);
    const ended = await revokeOtherSessions(app.db, session.userId, session.sessionId);
    return { message: `${ended} other session${ended === 1 ? '' : 's'} ended`, ended };
  });
}
