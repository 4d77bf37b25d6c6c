// The interaction step of an authorization request (sign-in and consent): the browser arrives at
// GET /sso/interaction/{uid} with the provider's interaction cookie. The account is the one the browser is signed in
// with (areas/login, the panel's sign-in; this file adds no second login). The user approves (a grant of the scopes
// asked for, optionally with the domains the app may see) or denies; either way the browser goes back to the provider.
// Approve and deny are state-changing: they take the session's CSRF token (header, or a form field of our page) and
// the interaction cookie, which is SameSite=Lax (a cross-site POST carries neither).
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Type, type Static } from '@sinclair/typebox';
import { timingSafeEqual } from 'node:crypto';
import type Provider from 'oidc-provider';
import { ApiError, MESSAGES } from '../../errors.js';
import { ErrorBody } from '../../openapi/schemas.js';
import { CSRF_HEADER, resolveBrowserSession, type BrowserSession } from '../login/session.js';
import { findClient } from './clients.js';
import { checkAppDomains, MAX_APP_DOMAINS, MAX_DOMAIN_CHARS, storeAppDomains } from './apps.js';
import { INTERACTION_PATH } from './provider.js';
import { refuseApiKeys } from './routes.js';

type Details = Awaited<ReturnType<Provider['interactionDetails']>>;

const UID = '^[A-Za-z0-9_-]{1,64}$';
const Params = Type.Object({ uid: Type.String({ pattern: UID, maxLength: 64 }) });
const ApproveBody = Type.Object(
  {
    domains: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: MAX_DOMAIN_CHARS }), {
        maxItems: MAX_APP_DOMAINS,
        description: 'Domains the app may see (the `domains` claim); omitted: unchanged (none for a new app)',
      }),
    ),
    csrf_token: Type.Optional(Type.String({ maxLength: 128, description: 'For a form post: the session CSRF token' })),
  },
  { additionalProperties: false },
);
const InteractionAnswer = Type.Object(
  {
    uid: Type.String(),
    prompt: Type.String({ description: '`login` (no SSO session yet) or `consent`' }),
    client: Type.Object({ client_id: Type.String(), name: Type.String() }),
    scopes: Type.Array(Type.String(), { description: 'The scopes the app asks for' }),
    signed_in: Type.Boolean(),
  },
  { title: 'SsoInteraction' },
);
const Redirect = Type.Object({ redirect_to: Type.String() }, { title: 'SsoRedirect' });
const tags = ['sso'];
const browserOnly = { tags, security: [] as never[], hide: true };

export const escapeHtml = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

function wantsJson(request: FastifyRequest): boolean {
  const accept = request.headers.accept ?? '';
  return request.headers['content-type']?.startsWith('application/json') === true || /application\/json/.test(accept);
}

/** The CSRF token of a state-changing request: the X-CSRF-Token header, or the form field of our consent page. */
function checkCsrfOf(request: FastifyRequest, session: BrowserSession, field: string | undefined): void {
  const header = request.headers[CSRF_HEADER];
  const sent = Buffer.from(typeof header === 'string' ? header : (field ?? ''));
  const expected = Buffer.from(session.csrfToken);
  if (sent.length !== expected.length || !timingSafeEqual(sent, expected))
    throw new ApiError('CP_ERR_CSRF', 'missing or wrong X-CSRF-Token header; reload the page');
}

async function signedIn(request: FastifyRequest): Promise<BrowserSession | null> {
  const session = await resolveBrowserSession(request);
  if (session && !session.active) throw new ApiError('CP_ERR_ACCOUNT_INACTIVE', MESSAGES.inactive);
  return session;
}

/** The interaction of this browser (its cookie) for this uid; 400 when it is gone, expired or another one. */
async function interactionOf(provider: Provider, request: FastifyRequest, reply: FastifyReply): Promise<Details> {
  let details: Details;
  try {
    details = await provider.interactionDetails(request.raw, reply.raw);
  } catch {
    throw new ApiError('CP_ERR_INVALID_INPUT', 'this sign-in request expired or was opened in another browser');
  }
  if (details.uid !== (request.params as { uid: string }).uid)
    throw new ApiError('CP_ERR_INVALID_INPUT', 'this sign-in request expired or was opened in another browser');
  return details;
}

function consentPage(details: Details, clientName: string, session: BrowserSession | null): string {
  const uid = escapeHtml(details.uid);
  const scopes = String(details.params.scope ?? '')
    .split(' ')
    .filter(Boolean)
    .map((s) => `<li>${escapeHtml(s)}</li>`)
    .join('');
  const body = session
    ? `<p>Signed in as ${escapeHtml(session.email)}.</p>
<p><strong>${escapeHtml(clientName)}</strong> asks to sign you in and to see:</p><ul>${scopes}</ul>
<form method="post" action="${INTERACTION_PATH}/${uid}/approve">
<input type="hidden" name="csrf_token" value="${escapeHtml(session.csrfToken)}"><button type="submit">Allow</button></form>
<form method="post" action="${INTERACTION_PATH}/${uid}/deny">
<input type="hidden" name="csrf_token" value="${escapeHtml(session.csrfToken)}"><button type="submit">Deny</button></form>`
    : `<p><strong>${escapeHtml(clientName)}</strong> asks you to sign in.</p>
<p>Sign in to the <a href="/panel/">panel</a> in this browser, then <a href="${INTERACTION_PATH}/${uid}">continue</a>.</p>`;
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>Sign in with your account</title></head><body><main>${body}</main></body></html>`;
}

/** Answers the browser: JSON `{ redirect_to }` for a script, 303 to it for our form. */
function sendRedirect(request: FastifyRequest, reply: FastifyReply, to: string) {
  if (wantsJson(request)) return reply.send({ redirect_to: to });
  return reply.code(303).header('location', to).send();
}

export async function interactionRoutes(scope: FastifyInstance, sso: { provider(): Promise<Provider> }) {
  // Our consent page posts a form; its fields are few and short.
  scope.addContentTypeParser(
    'application/x-www-form-urlencoded',
    { parseAs: 'string', bodyLimit: 4096 },
    (_request, body, done) => done(null, Object.fromEntries(new URLSearchParams(body as string))),
  );
  scope.addHook('onRequest', refuseApiKeys);
  scope.addHook('onSend', async (_request, reply) => {
    // The consent page must never be framed (clickjacking) nor run anything.
    reply.header('x-frame-options', 'DENY');
    reply.header('content-security-policy', "default-src 'none'; frame-ancestors 'none'; base-uri 'none'");
    reply.header('cache-control', 'no-store');
  });

  scope.get(
    `${INTERACTION_PATH}/:uid`,
    {
      config: { public: true },
      schema: {
        ...browserOnly,
        summary: 'SSO authorization request to approve',
        description:
          'Where the provider sends the browser: the app and the scopes it asks for, and whether the browser is ' +
          'signed in. HTML (a consent page) unless the request accepts application/json. Needs the interaction ' +
          'cookie the provider set.',
        params: Params,
        response: { 200: InteractionAnswer, 400: ErrorBody },
      },
    },
    async (request, reply) => {
      const provider = await sso.provider();
      const details = await interactionOf(provider, request, reply);
      const clientId = String(details.params.client_id);
      const client = await findClient(scope.db, clientId);
      if (!client) throw new ApiError('CP_ERR_INVALID_INPUT', 'the app of this request no longer exists');
      const session = await signedIn(request);
      if (!wantsJson(request))
        return reply.type('text/html; charset=utf-8').send(consentPage(details, client.name, session));
      return {
        uid: details.uid,
        prompt: details.prompt.name,
        client: { client_id: client.clientId, name: client.name },
        scopes: String(details.params.scope ?? '')
          .split(' ')
          .filter(Boolean),
        signed_in: session !== null,
      };
    },
  );

  scope.post(
    `${INTERACTION_PATH}/:uid/approve`,
    {
      config: { public: true },
      schema: {
        ...browserOnly,
        summary: 'SSO approve an authorization request',
        description:
          'The signed-in browser (session cookie and X-CSRF-Token) approves: the app gets a grant of the scopes ' +
          'it asked for, and the browser goes back to the provider (`redirect_to`, or 303 for a form post).',
        params: Params,
        body: Type.Optional(ApproveBody),
        response: { 200: Redirect, 303: Type.Null(), 400: ErrorBody, 401: ErrorBody, 403: ErrorBody },
      },
    },
    async (request, reply) => {
      const body = (request.body ?? {}) as Static<typeof ApproveBody>;
      const session = await signedIn(request);
      if (!session) throw new ApiError('CP_ERR_NOT_SIGNED_IN', 'not signed in');
      checkCsrfOf(request, session, body.csrf_token);
      const provider = await sso.provider();
      const details = await interactionOf(provider, request, reply);
      const accountId = String(session.userId);
      const clientId = String(details.params.client_id);
      // Checked before anything is stored: a bad name leaves no grant behind.
      const domains =
        body.domains === undefined ? undefined : await checkAppDomains(scope.db, session.userId, body.domains);
      const grant =
        (details.grantId && details.session?.accountId === accountId
          ? await provider.Grant.find(details.grantId)
          : undefined) ?? new provider.Grant({ accountId, clientId });
      // What the user approves is what the request asks for (idempotent on a grant that already has some of it).
      const requested = String(details.params.scope ?? '');
      if (requested !== '') grant.addOIDCScope(requested);
      const missingClaims = (details.prompt.details as { missingOIDCClaims?: string[] } | undefined)?.missingOIDCClaims;
      if (missingClaims?.length) grant.addOIDCClaims(missingClaims);
      const grantId = await grant.save();
      if (domains !== undefined) await storeAppDomains(scope.db, session.userId, clientId, domains);
      const to = await provider.interactionResult(
        request.raw,
        reply.raw,
        { login: { accountId }, consent: { grantId } },
        { mergeWithLastSubmission: false },
      );
      return sendRedirect(request, reply, to);
    },
  );

  scope.post(
    `${INTERACTION_PATH}/:uid/deny`,
    {
      config: { public: true },
      schema: {
        ...browserOnly,
        summary: 'SSO deny an authorization request',
        description: 'The app receives `access_denied` at its redirect URI.',
        params: Params,
        body: Type.Optional(ApproveBody),
        response: { 200: Redirect, 303: Type.Null(), 400: ErrorBody, 401: ErrorBody, 403: ErrorBody },
      },
    },
    async (request, reply) => {
      const body = (request.body ?? {}) as Static<typeof ApproveBody>;
      const session = await signedIn(request);
      if (!session) throw new ApiError('CP_ERR_NOT_SIGNED_IN', 'not signed in');
      checkCsrfOf(request, session, body.csrf_token);
      const provider = await sso.provider();
      await interactionOf(provider, request, reply);
      const to = await provider.interactionResult(
        request.raw,
        reply.raw,
        { error: 'access_denied', error_description: 'the user denied the request' },
        { mergeWithLastSubmission: false },
      );
      return sendRedirect(request, reply, to);
    },
  );
}
