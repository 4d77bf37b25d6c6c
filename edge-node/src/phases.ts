// The fixed order of work for one request: match → header rules collected → drop → custom rules → rate_limit →
// challenge (Under Attack Mode, the record's captcha flag, captcha rules) → waf → basic_auth → redirect → rewrite →
// origin_route / origin_pool → cache lookup → upstream → response headers, error_page, cache store → log.
import type { Readable } from 'node:stream';
import type { HttpResponse } from 'uWebSockets.js';
import type { RequestContext } from './context.js';
import {
  RULES_LINE,
  UPSTREAM_ACCEPT_ENCODING,
  baseKey,
  codingFits,
  carriesAuthorization,
  requestEncodingClass,
  variantSuffix,
  varyNames,
  withAcceptEncoding,
} from './cache/key.js';
import type { EdgeCache } from './cache/store.js';
import type { EdgeErrorCode } from './errors.js';
import type { UnservedReason } from '@platform/shared/types';
import type { CompiledDomain, DomainTable } from './store/snapshot.js';
import type { RuleIndexes } from './store/domain-builder.js';
import { ACME_HTTP01_PREFIX } from '@platform/shared/config';
import { answerAcmeHttp01 } from './acme-http01.js';
import { forward, type ResponsePlan } from './proxy/forward.js';
import { recordOrigin, type OriginTarget } from './proxy/origin.js';
import { answeringInHandler, respond, respondStored } from './proxy/respond.js';
import { wallClockAt } from './clock.js';
import { offersH2, type UpstreamPools } from './proxy/upstream.js';
import type { CompiledRule, RuleIndex } from './rules/compile.js';
import type { RuleActions } from './rules/index.js';
import { isAuthorized, retryAfterSec, type AuthVerdict, type BasicAuthAction } from './rules/basic-auth.js';
import {
  EDGE_SSO_PATH,
  acceptToken,
  clearState,
  sessionCookie,
  sessionValue,
  signIn,
  ssoVerdict,
  stateOf,
} from './rules/sso.js';
import { cacheKeyQuery, edgeTtl, sharedWithAuthorization, type CacheAction } from './rules/cache.js';
import { coversStatus, type ErrorPageAction } from './rules/error-page.js';
import { applyHeaderOps, type HeaderOp } from './rules/header.js';
import {
  CHALLENGE_PATH,
  CLEARANCE_COOKIE,
  DEFAULT_PASS_TTL_S,
  MAX_ANSWER_BYTES,
  challengePage,
  checkAnswer,
  hasClearance,
  issueNonce,
  parseAnswer,
  safeReturn,
} from './rules/challenge.js';
import { decideClient } from './rules/client-rules.js';
import { decideCustom } from './rules/custom.js';
import { clientAddress, keyText, rateLimits, type RateLimitAction } from './rules/rate-limit.js';
import { markOrigin, pickOrigin, poolTarget, type OriginPoolAction } from './rules/origin-pool.js';
import { routeTarget } from './rules/origin-route.js';
import { redirectLocation } from './rules/redirect.js';
import { applyRewrite } from './rules/rewrite.js';
import { changeableHead, chooseCoding, compressibleType, transforms, type Coding } from './rules/optimize.js';
import {
  MARKDOWN_TYPE,
  TRANSFORM_MAX_BYTES,
  mediaType,
  transformKind,
  wantsMarkdown,
  type TransformKind,
} from './rules/optimize-transform.js';
import { wafPhase } from './waf/phase.js';
import { customPagesOf, pageAnswer } from './custom-pages.js';

export interface EdgeState {
  table: DomainTable;
  pools: UpstreamPools;
  cache: EdgeCache;
  cacheMaxObjectBytes: number;
  /** Called once per finished request. */
  log(ctx: RequestContext): void;
}

const TEXT: [string, string][] = [['content-type', 'text/plain; charset=utf-8']];
/** The header operations of a request no header rule matched: read only. */
const NO_OPS: HeaderOp[] = Object.freeze([]) as unknown as HeaderOp[];
const text = (): [string, string][] => [...TEXT];
const DAY_MS = 86_400_000;

/** A domain's rule indexes by type (CompiledDomain.byType): a property read per phase, no Map lookup. */
type Rules = RuleIndexes;

/**
 * A rule scoped by client address (ip_includes / ip_excludes): when one that changes what the origin is sent (request
 * headers, rewrite, origin_route, origin_pool) matches, its id joins the cache key, so what the origin gave one range
 * of addresses is not served to the others.
 */
const ipScoped = (r: CompiledRule): boolean => r.ipIncludes !== null || r.ipExcludes !== null;

/**
 * Runs the phases for one request. Synchronous unless a basic_auth verdict must be awaited (scrypt) or a waf rule reads
 * the body: then the rest runs when it settles and the returned promise carries any failure. A failure answers 502 once and is logged by the
 * caller (thrown, or rejected from the returned promise).
 */
export function runPhases(
  res: HttpResponse,
  ctx: RequestContext,
  state: EdgeState,
  body: Readable | null,
): Promise<void> | undefined {
  const match = state.table.lookup(ctx.host);
  if (!match) {
    respond(
      res,
      ctx,
      421,
      [...TEXT, ['x-edge-error', 'EDGE_ERR_HOST_NOT_SERVED']],
      `${ctx.host || '(no host)'} is not served by this edge\n`,
      null,
    );
    ctx.unserved = 'host_not_served';
    state.log(ctx);
    return undefined;
  }
  const { domain, record } = match;
  // The table's string for the host (equal to the request's): the request log keeps the host for thousands of
  // requests, and one shared string is not copied into the old generation per request as each request's own would be.
  ctx.host = match.host;
  ctx.record = record;
  ctx.recordId = record.id;
  ctx.customPages = customPagesOf(domain.snapshot.settings);
  // An ACME http-01 key authorization the platform publishes is answered before any rule or the origin.
  if (ctx.path.startsWith(ACME_HTTP01_PREFIX)) {
    ctx.unserved = 'acme_challenge';
    if (answerAcmeHttp01(res, ctx, domain, state)) return undefined;
    ctx.unserved = '';
  }
  const rules = domain.byType;

  // header rules: every matching rule applies, in priority order; collected now, applied on the way out and back.
  // The lists are read only from here on: a shared empty one when no rule adds to it, the first adding rule's own
  // list while it is the only one, a new list (concat: the rules' lists are never written) once a second adds to it.
  let requestOps = NO_OPS;
  let responseOps = NO_OPS;
  let ipScope = '';
  const headerIdx = rules.header;
  if (headerIdx) {
    const matched = headerRules;
    // Empty unless a rule's evaluation threw during the last use; emptied by pop (cheaper than the length setter).
    if (matched.length !== 0) matched.length = 0;
    headerIdx.all(ctx, matched);
    for (let k = 0; k < matched.length; k++) {
      const r = matched[k];
      const { request, response } = r.action;
      ctx.hit(r.id, r.type, false);
      if (request.length > 0) {
        if (ipScoped(r)) ipScope += `,${r.id}`;
        requestOps = requestOps.length === 0 ? request : requestOps.concat(request);
      }
      if (response.length > 0) responseOps = responseOps.length === 0 ? response : responseOps.concat(response);
    }
    while (matched.length > 0) matched.pop();
  }

  const drop = rules.drop?.first(ctx);
  if (drop) {
    ctx.hit(drop.id, drop.type, false);
    ctx.unserved = 'drop';
    if (drop.action.close) {
      ctx.status = 444;
      if (!ctx.aborted) {
        ctx.aborted = true;
        res.close();
      }
    } else respond(res, ctx, drop.action.status, text(), drop.action.body, responseOps);
    state.log(ctx);
    return undefined;
  }

  const guarded = guardPhase(res, ctx, state, match, body, responseOps);
  if (guarded !== false) return guarded === true ? undefined : guarded;

  // waf (src/waf/phase.ts): may read a bounded prefix of the body, then goes on with the body to send.
  // A custom rule's allow (ctx.securityAllowed) exempts the request, as Cloudflare's allow skips its managed rules.
  const wafIndex = ctx.securityAllowed ? undefined : rules.waf;
  if (wafIndex) {
    const w = wafPhase(res, ctx, wafIndex, body, responseOps);
    if (w instanceof Promise)
      return w.then((o) => {
        if (o.answered) {
          ctx.unserved = 'waf_block';
          return state.log(ctx);
        }
        return authPhase(res, ctx, state, o.body, match, requestOps, responseOps, ipScope);
      });
    if (w.answered) {
      ctx.unserved = 'waf_block';
      state.log(ctx);
      return undefined;
    }
    body = w.body;
  }
  return authPhase(res, ctx, state, body, match, requestOps, responseOps, ipScope);
}

/**
 * What basic_auth decided: a Basic verdict, or for a rule with an `sso` block and no Basic credentials, `sso_other`
 * (signed in as an account the rule does not list: 403) or `sso_none` (no edge session: sent to sign in).
 */
type Verdict = AuthVerdict | 'sso_other' | 'sso_none';

/**
 * basic_auth, then the rest (afterAuth); a promise only when a password check or a sign-in token must be awaited.
 * EDGE_SSO_PATH on a hostname with an sso rule is the edge's own (the control plane's sign-in comes back to it).
 */
function authPhase(
  res: HttpResponse,
  ctx: RequestContext,
  state: EdgeState,
  body: Readable | null,
  match: NonNullable<ReturnType<DomainTable['lookup']>>,
  requestOps: HeaderOp[],
  responseOps: HeaderOp[],
  ipScope: string,
): Promise<void> | undefined {
  const rules = match.domain.byType;
  const authIdx = rules.basic_auth;
  if (authIdx !== undefined && ctx.path === EDGE_SSO_PATH) {
    const maxAge = ssoSessionSeconds(authIdx, ctx);
    if (maxAge > 0) return answerSsoToken(res, ctx, state, maxAge, responseOps);
  }
  const auth = authIdx?.first(ctx);
  if (auth) {
    const sso = auth.action.sso;
    const authorization = ctx.header('authorization');
    if (sso !== null && (auth.action.users.size === 0 || authorization === undefined)) {
      const v = ssoVerdict(sso, ctx.header('cookie'), ctx.host);
      const verdict: Verdict = v === 'pass' ? true : v === 'other' ? 'sso_other' : 'sso_none';
      afterAuth(res, ctx, state, body, match, auth, verdict, requestOps, responseOps, ipScope);
      return undefined;
    }
    const verdict = isAuthorized(auth.action, authorization, ctx.peer.text);
    if (typeof verdict === 'object') {
      return verdict.then((ok) => {
        afterAuth(res, ctx, state, body, match, auth, ok, requestOps, responseOps, ipScope);
      });
    }
    afterAuth(res, ctx, state, body, match, auth, verdict, requestOps, responseOps, ipScope);
  } else afterAuth(res, ctx, state, body, match, undefined, true, requestOps, responseOps, ipScope);
  return undefined;
}

/**
 * Seconds an edge session set on this hostname lasts: the longest session_ttl_s of the sso rules that may apply to it
 * (records and host filters; any path), 0 when none does (EDGE_SSO_PATH then goes to the origin like any path).
 */
function ssoSessionSeconds(authIdx: RuleIndex<BasicAuthAction>, ctx: RequestContext): number {
  let max = 0;
  for (const r of authIdx.rules) {
    const sso = r.action.sso;
    if (sso === null || (r.records !== null && !r.records.has(ctx.recordId)) || !r.host.matches(ctx.host)) continue;
    if (sso.ttlS > max) max = sso.ttlS;
  }
  return max;
}

/** GET EDGE_SSO_PATH?token=…&return_to=…: verifies the control plane's token, sets the edge session, goes back. */
function answerSsoToken(
  res: HttpResponse,
  ctx: RequestContext,
  state: EdgeState,
  maxAgeS: number,
  responseOps: HeaderOp[],
): Promise<void> | undefined {
  const fail = (status: number, message: string, extra: [string, string][] = []) => {
    ctx.unserved = 'auth_denied';
    respond(res, ctx, status, [...TEXT, ['cache-control', 'no-store'], ...extra], `${message}\n`, responseOps);
    state.log(ctx);
  };
  if (ctx.method !== 'GET' && ctx.method !== 'HEAD') {
    fail(405, 'sign-in answers are fetched with GET', [['allow', 'GET, HEAD']]);
    return undefined;
  }
  if (ctx.query.length > 8192) {
    fail(400, 'malformed sign-in answer');
    return undefined;
  }
  const q = new URLSearchParams(ctx.query);
  const back = safeReturn(q.get('return_to') ?? '/');
  const secure = ctx.scheme === 'https';
  return acceptToken(q.get('token') ?? '', ctx.host, stateOf(ctx.header('cookie'))).then((v) => {
    // A token of a sign-in this browser did not start (a link carrying someone's token): no session, back to the
    // page, which asks again when this browser has no session of its own.
    if (!v.ok && !v.otherBrowser) return fail(v.status, v.reason);
    const headers: [string, string][] = [
      ['location', back],
      ['cache-control', 'no-store'],
    ];
    ctx.unserved = 'auth_denied';
    if (v.ok) {
      ctx.unserved = 'sso_sign_in';
      headers.push(
        ['referrer-policy', 'no-referrer'],
        ['set-cookie', sessionCookie(sessionValue(v.email, ctx.host), maxAgeS, secure)],
        ['set-cookie', clearState(secure)],
      );
    }
    respond(res, ctx, 302, headers, '', responseOps);
    state.log(ctx);
  });
}

/** The Host header as the browser sent it (with its port) when it is a plain name, for URLs sent back to it. */
const PLAIN_HOST = /^[A-Za-z0-9.-]{1,253}(:\d{1,5})?$/;

/** Matching header rules of the request being evaluated (reused: emptied before and after each use). */
const headerRules: CompiledRule<RuleActions['header']>[] = [];

/** Matching rate_limit rules of the request being evaluated (reused: evaluation is synchronous). */
const rateScratch: CompiledRule<RateLimitAction>[] = [];

/** A rule's block: 403, never stored by a cache, logged. */
function answerBlocked(
  res: HttpResponse,
  ctx: RequestContext,
  state: EdgeState,
  by: string,
  responseOps: HeaderOp[],
  reason: UnservedReason,
): true {
  ctx.unserved = reason;
  const page = pageAnswer(ctx.customPages, 'waf_block', 403, `blocked by ${by}`);
  respond(
    res,
    ctx,
    403,
    page?.headers ?? [...TEXT, ['cache-control', 'no-store']],
    page?.body ?? `blocked by ${by}\n`,
    responseOps,
  );
  state.log(ctx);
  return true;
}

/**
 * Custom rules, rate_limit, then the challenge. A custom rule's block answers 403; allow skips the rest of this phase
 * (rate_limit, every challenge); challenge asks for the challenge below. Every matching rate_limit rule counts the request; the first enforced one over its
 * limit answers 429 (Retry-After) or asks for the challenge; dry-run ones over the limit are logged and pass. Then the
 * answer endpoint (CHALLENGE_PATH), then the challenge when Under Attack Mode is on, the record has `captcha`, a
 * captcha rule matches, or a rate limit asked for it: a client holding a valid clearance passes, others get the page.
 * Returns true when it answered, false to go on, a promise when it reads an answer's body.
 */
function guardPhase(
  res: HttpResponse,
  ctx: RequestContext,
  state: EdgeState,
  match: NonNullable<ReturnType<DomainTable['lookup']>>,
  body: Readable | null,
  responseOps: HeaderOp[],
): boolean | Promise<void> {
  const { domain, record } = match;
  const rules = domain.byType;
  const customIdx = rules.custom;
  const custom = customIdx ? decideCustom(customIdx, ctx) : undefined;
  if (custom && custom.action.kind !== 'challenge') {
    ctx.hit(custom.id, custom.type, false);
    if (custom.action.kind === 'block')
      return answerBlocked(res, ctx, state, 'a custom rule', responseOps, 'custom_block');
    if (custom.action.kind === 'allow') {
      ctx.securityAllowed = true;
      return ctx.path === CHALLENGE_PATH ? answerChallenge(res, ctx, state, body, responseOps) : false;
    }
  }
  const byCustom = custom !== undefined && custom.action.kind === 'challenge';
  // fingerprint and bot_route rules (rules/client-rules.ts): block answers 403, route picks the origin, challenge below.
  const fpIdx = rules.fingerprint;
  const botIdx = rules.bot_route;
  const byRule = fpIdx || botIdx ? decideClient(fpIdx, botIdx, ctx) : undefined;
  if (byRule?.action.kind === 'block') {
    ctx.hit(byRule.id, byRule.type, false);
    return byRule.type === 'fingerprint'
      ? answerBlocked(res, ctx, state, 'a fingerprint rule', responseOps, 'fingerprint_block')
      : answerBlocked(res, ctx, state, 'a bot rule', responseOps, 'bot_block');
  }
  if (byRule?.action.kind === 'route' && byRule.type === 'bot_route') {
    ctx.hit(byRule.id, byRule.type, false);
    ctx.botRoute = (byRule.action as { route?: typeof ctx.botRoute }).route;
    ctx.botRouteId = byRule.id;
  }
  const byClient = byRule !== undefined && byRule.action.kind === 'challenge';
  let challenge = false;
  let ttl = DEFAULT_PASS_TTL_S;
  const limits = rules.rate_limit;
  if (limits) {
    const now = Date.now();
    limits.all(ctx, rateScratch, false);
    for (let i = 0; i < rateScratch.length; i++) {
      const r = rateScratch[i];
      const wait = rateLimits.check(r.action, ctx, now);
      if (wait === 0) continue;
      ctx.hit(r.id, r.type, r.dryRun);
      if (r.dryRun) continue;
      ctx.rateLimitRule = r.id;
      ctx.rateLimitKey = keyText(r.action, ctx);
      if (r.action.challenge) {
        challenge = true;
        break;
      }
      rateScratch.length = 0;
      ctx.unserved = 'rate_limited';
      const retry: [string, string] = ['retry-after', String(wait)];
      const page = pageAnswer(
        ctx.customPages,
        'ratelimit_block',
        429,
        `rate limit exceeded; retry in ${wait} s`,
        retry,
      );
      respond(
        res,
        ctx,
        429,
        page?.headers ?? [...TEXT, retry, ['cache-control', 'no-store']],
        page?.body ?? 'rate limit exceeded; retry later\n',
        responseOps,
      );
      state.log(ctx);
      return true;
    }
    rateScratch.length = 0;
  }

  if (ctx.path === CHALLENGE_PATH) return answerChallenge(res, ctx, state, body, responseOps);
  // A certificate authority fetching an origin's HTTP-01 token cannot solve a challenge: never asked of it.
  if (ctx.path.startsWith(ACME_HTTP01_PREFIX)) return false;

  const byRateLimit = challenge;
  const underAttack = domain.snapshot.settings.underAttack === true;
  if (underAttack || record.captcha || byCustom || byClient) challenge = true;
  const captcha = rules.captcha?.first(ctx);
  if (captcha) {
    challenge = true;
    ttl = captcha.action.passTtlS;
  }
  if (!challenge) return false;
  const client = clientAddress(ctx.peer);
  if (hasClearance(ctx.header('cookie'), client, ctx.host)) return false;
  // The log names what asked (a rate_limit hit is already there); id 0: the domain's switch or the record's flag.
  if (captcha) ctx.hit(captcha.id, captcha.type, false);
  else if (byCustom) ctx.hit(custom.id, custom.type, false);
  else if (byClient) ctx.hit(byRule.id, byRule.type, false);
  else if (!byRateLimit) ctx.hit(0, underAttack ? 'under_attack' : 'captcha', false);
  const nonce = issueNonce(client, ctx.host, ttl);
  ctx.unserved = 'challenge_issued';
  respond(
    res,
    ctx,
    403,
    [
      ['content-type', 'text/html; charset=utf-8'],
      ['cache-control', 'no-store'],
      ['x-edge-challenge', 'pow'],
    ],
    challengePage(
      nonce,
      ctx.query === '' ? ctx.path : `${ctx.path}?${ctx.query}`,
      ctx.customPages?.get('managed_challenge'),
    ),
    responseOps,
  );
  state.log(ctx);
  return true;
}

/** POST CHALLENGE_PATH: checks the answer (form body: nonce, solution, return) and sets the clearance cookie. */
function answerChallenge(
  res: HttpResponse,
  ctx: RequestContext,
  state: EdgeState,
  body: Readable | null,
  responseOps: HeaderOp[],
): true | Promise<void> {
  const fail = (status: number, message: string, extra: [string, string][] = []) => {
    ctx.unserved = 'challenge_failed';
    respond(res, ctx, status, [...TEXT, ['cache-control', 'no-store'], ...extra], `${message}\n`, responseOps);
    state.log(ctx);
  };
  if (ctx.method !== 'POST') {
    fail(405, 'the challenge answer is posted', [['allow', 'POST']]);
    return true;
  }
  if (Number(ctx.header('content-length') ?? 0) > MAX_ANSWER_BYTES) {
    fail(413, 'answer too large');
    return true;
  }
  return readBounded(body, MAX_ANSWER_BYTES).then((form) => {
    if (form === null) return fail(413, 'answer too large');
    const a = parseAnswer(form);
    const v = checkAnswer(a.nonce, a.solution, clientAddress(ctx.peer), ctx.host);
    if (!v.ok) return fail(v.status, v.reason);
    const secure = ctx.scheme === 'https' ? '; Secure' : '';
    ctx.unserved = 'challenge_passed';
    respond(
      res,
      ctx,
      303,
      [
        ['location', safeReturn(a.returnTo)],
        ['cache-control', 'no-store'],
        [
          'set-cookie',
          `${CLEARANCE_COOKIE}=${v.cookie}; Max-Age=${v.passTtlS}; Path=/; HttpOnly; SameSite=Lax${secure}`,
        ],
      ],
      '',
      responseOps,
    );
    state.log(ctx);
  });
}

/** The body as text, or null once it passes `max` bytes (reading stops there). */
async function readBounded(body: Readable | null, max: number): Promise<string | null> {
  if (body === null) return '';
  const chunks: Buffer[] = [];
  let n = 0;
  for await (const c of body as AsyncIterable<Buffer>) {
    n += c.length;
    if (n > max) {
      body.destroy();
      return null;
    }
    chunks.push(c);
  }
  return Buffer.concat(chunks).toString('latin1');
}

/**
 * basic_auth's refusals: 429 while the address is throttled (no password is checked while an address keeps failing,
 * or too many checks are queued: no scrypt to spend), 403 for a session of an account an sso rule does not list, 302
 * to sign in at the control plane for an sso rule without a session (401 when no control plane is set), else 401.
 */
function refuseAuth(
  res: HttpResponse,
  ctx: RequestContext,
  state: EdgeState,
  auth: CompiledRule<BasicAuthAction>,
  ok: Exclude<Verdict, true>,
  responseOps: HeaderOp[],
): void {
  ctx.hit(auth.id, auth.type, false);
  let status = 401;
  let headers: [string, string][] = [...TEXT, ['www-authenticate', auth.action.challenge]];
  let message = 'authentication required\n';
  ctx.unserved = 'auth_required';
  if (ok === 'throttled') {
    ctx.unserved = 'auth_throttled';
    status = 429;
    headers = [...TEXT, ['retry-after', String(Math.max(1, retryAfterSec(auth.action, ctx.peer.text)))]];
    message = 'too many failed sign-ins from this address; retry later\n';
  } else if (ok === 'sso_other') {
    ctx.unserved = 'auth_denied';
    status = 403;
    headers = [...TEXT, ['cache-control', 'no-store']];
    message = 'the account you are signed in with is not allowed here\n';
  } else if (ok === 'sso_none') {
    const raw = ctx.header('host');
    const host = raw !== undefined && PLAIN_HOST.test(raw) ? raw.toLowerCase() : ctx.host;
    const to = signIn(ctx.scheme, host, ctx.path, ctx.query);
    if (to !== undefined) {
      status = 302;
      headers = [
        ['location', to.location],
        ['cache-control', 'no-store'],
        ['set-cookie', to.cookie],
      ];
      message = '';
    }
  }
  respond(res, ctx, status, headers, message, responseOps);
  state.log(ctx);
}

/** The phases after basic_auth's verdict: a refusal (refuseAuth), or redirect → rewrite → routing → cache → upstream. */
function afterAuth(
  res: HttpResponse,
  ctx: RequestContext,
  state: EdgeState,
  body: Readable | null,
  match: NonNullable<ReturnType<DomainTable['lookup']>>,
  auth: ReturnType<RuleIndex<BasicAuthAction>['first']>,
  ok: Verdict,
  requestOps: HeaderOp[],
  responseOps: HeaderOp[],
  ipScope: string,
): void {
  const { domain, record } = match;
  const rules = domain.byType;
  if (auth && ok !== true) return refuseAuth(res, ctx, state, auth, ok, responseOps);

  const redirect = rules.redirect?.first(ctx);
  if (redirect) {
    ctx.hit(redirect.id, redirect.type, false);
    ctx.unserved = 'redirect';
    respond(
      res,
      ctx,
      redirect.action.status,
      [['location', redirectLocation(redirect.action, ctx.path, ctx.query)]],
      '',
      responseOps,
    );
    return state.log(ctx);
  }

  const rewrite = rules.rewrite?.first(ctx);
  if (rewrite) {
    ctx.hit(rewrite.id, rewrite.type, false);
    if (ipScoped(rewrite)) ipScope += `,${rewrite.id}`;
    const r = applyRewrite(rewrite.action, ctx.path, ctx.query);
    ctx.upstreamPath = r.path;
    ctx.upstreamQuery = r.query;
  }

  // A routing bot_route rule (its hit recorded by the client phase) wins over origin_route and origin_pool. Which
  // rule routes is decided here (an address-scoped one joins the cache key); the origin it names is made after the
  // cache lookup, which a hit never passes.
  const botRoute = ctx.botRoute;
  const route = botRoute ? undefined : rules.origin_route?.first(ctx);
  const pool = route || botRoute ? undefined : rules.origin_pool?.first(ctx);
  let poolIndex = -1;
  if (botRoute) ipScope += `,${ctx.botRouteId}`;
  else if (route) {
    ctx.hit(route.id, route.type, false);
    if (ipScoped(route)) ipScope += `,${route.id}`;
  } else if (pool) {
    ctx.hit(pool.id, pool.type, false);
    if (ipScoped(pool)) ipScope += `,${pool.id}`;
    poolIndex = pickOrigin(pool.action, null);
    ctx.poolPick = { ruleId: pool.action.ruleId, index: poolIndex };
  }

  // Cache: the first matching cache rule decides (cache ignores dry_run); developer mode bypasses reads and writes.
  // The key (src/cache/key.ts): scheme + host + path + the rule's query part, then the variant of an answer that
  // varies; the ids of address-scoped rules that changed the origin request (ipScoped). A request carrying
  // Authorization is served only entries the origin marked shareable.
  const settings = domain.snapshot.settings;
  const generation = Number(settings.cachePurgeGeneration ?? 0);
  const cacheRule = ctx.method === 'GET' || ctx.method === 'HEAD' ? rules.cache?.first(ctx, false) : undefined;
  let cacheBase: string | undefined;
  let authorized = false;
  let stale: ReturnType<EdgeCache['get']>;
  const cacheAction = cacheRule?.action;
  if (cacheRule && cacheAction) {
    ctx.hit(cacheRule.id, cacheRule.type, false);
    const devMode =
      settings.developerMode &&
      (settings.developerModeExpiresAtMs === 0 || settings.developerModeExpiresAtMs > Date.now());
    if (cacheAction.bypass || devMode) ctx.cacheStatus = 'BYPASS';
    else {
      cacheBase = baseKey(ctx.scheme, ctx.host, ctx.path, cacheKeyQuery(cacheAction, ctx.query));
      if (ipScope !== '') cacheBase += `${RULES_LINE}${ipScope.slice(1)}`;
      // The Markdown answer for agents is kept apart from the HTML one (not by the whole Accept value: one key each).
      const markdown = markdownRequested(ctx, rules);
      if (markdown) cacheBase += MARKDOWN_LINE;
      authorized = carriesAuthorization(ctx, requestOps);
      // Looked up during uWS's call of the request handler (no phase awaited): the time the request arrived, no clock
      // read (clock.ts); after an awaited phase, the clock.
      const now = answeringInHandler(res) ? wallClockAt(ctx.startedAt) : Date.now();
      let entry = state.cache.get(domain.name, generation, cacheBase, now);
      if (entry?.vary) {
        const variant = variantSuffix(entry.vary, ctx, requestOps);
        entry =
          variant === undefined ? undefined : state.cache.getVariant(domain.name, generation, entry, variant, now);
      }
      if (entry && authorized && !entry.shared) entry = undefined;
      if (entry && entry.freshUntil > now) {
        ctx.cacheStatus = 'HIT';
        if (markdown) ctx.markdown = isMarkdown(entry.headers);
        state.cache.served(entry);
        // Never below 0: `now` may be up to a millisecond behind the Date.now() the entry was stored at.
        const age = now > entry.storedAt ? Math.floor((now - entry.storedAt) / 1000) : 0;
        respondStored(res, ctx, entry.status, entry.headers, entry.body, age, responseOps);
        return state.log(ctx);
      }
      state.cache.misses++;
      ctx.cacheStatus = entry ? 'EXPIRED' : 'MISS';
      stale = entry;
    }
  } else if (ctx.method === 'GET' || ctx.method === 'HEAD') ctx.cacheStatus = 'DYNAMIC';

  const base = recordOrigin(record, ctx.host);
  let target: OriginTarget = base;
  if (botRoute) target = routeTarget(botRoute, base, ctx.host);
  else if (route) target = routeTarget(route.action, base, ctx.host);
  else if (pool) target = poolTarget(pool.action, poolIndex, ctx.host, base.timeoutSec);

  let reqHeaders = requestOps.length > 0 ? applyOps(ctx.headers, requestOps) : ctx.headers;
  // A cacheable request sends the origin its Accept-Encoding class's value, so the answer fits the whole class.
  if (cacheBase !== undefined)
    reqHeaders = withAcceptEncoding(reqHeaders, UPSTREAM_ACCEPT_ENCODING[requestEncodingClass(ctx, requestOps)]);
  const plan = new Plan(
    res,
    ctx,
    state,
    domain,
    rules,
    requestOps,
    responseOps,
    cacheAction,
    cacheBase,
    authorized,
    generation,
    stale,
    pool?.action,
    base.timeoutSec,
  );
  const h2 = offersH2(settings.originProtocol);
  forward(res, ctx, state.pools, target, reqHeaders, body, plan, h2);
}

const MARKDOWN_MEDIA_TYPE = MARKDOWN_TYPE.split(';')[0];

/** The answer's headers say it is Markdown (the converted copy of an HTML page). */
function isMarkdown(headers: readonly (readonly [string, string])[]): boolean {
  for (const [k, v] of headers) if (k === 'content-type') return v.startsWith(MARKDOWN_MEDIA_TYPE);
  return false;
}

/** The request log's reason for each error code an origin failure answers with. */
const ORIGIN_FAILURE_REASON = {
  EDGE_ERR_ORIGIN_CERTIFICATE: 'origin_certificate',
  EDGE_ERR_ORIGIN_REFUSED: 'origin_refused',
  EDGE_ERR_UPSTREAM_TIMEOUT: 'origin_timeout',
  EDGE_ERR_UPSTREAM_UNREACHABLE: 'origin_unreachable',
} as const satisfies Partial<Record<EdgeErrorCode, UnservedReason>>;

/** What a 500_errors page's box says for each origin failure (the plain answer's detail stays in the log). */
const ORIGIN_FAILURE_TEXT = {
  EDGE_ERR_ORIGIN_CERTIFICATE: "the origin's certificate was not accepted",
  EDGE_ERR_ORIGIN_REFUSED: 'the origin address is not allowed',
  EDGE_ERR_UPSTREAM_TIMEOUT: 'the origin timed out',
  EDGE_ERR_UPSTREAM_UNREACHABLE: 'the origin is unreachable',
} as const satisfies Record<keyof typeof ORIGIN_FAILURE_REASON, string>;

/** The cache key's line for a request answered in Markdown (keys never hold a newline from the request). */
const MARKDOWN_LINE = '\n@markdown';

/** A GET asking for text/markdown to which an enforced optimize rule with markdown_for_agents applies. */
function markdownRequested(ctx: RequestContext, rules: Rules): boolean {
  const index = ctx.method === 'GET' ? rules.optimize : undefined;
  if (!index || !wantsMarkdown(ctx.header('accept'))) return false;
  for (const r of index.all(ctx, [], false)) if (!r.dryRun && r.action.markdown) return true;
  return false;
}

function applyOps(headers: [string, string][], ops: HeaderOp[]): [string, string][] {
  const copy = headers.map((h) => [h[0], h[1]] as [string, string]);
  applyHeaderOps(copy, ops);
  return copy;
}

function errorPage(ctx: RequestContext, rules: Rules, status: number): ErrorPageAction | undefined {
  const index = rules.error_page;
  if (!index) return undefined;
  for (const r of index.all(ctx, [])) {
    if (!coversStatus(r.action, status)) continue;
    ctx.hit(r.id, r.type, false);
    return r.action;
  }
  return undefined;
}

const transformingIndexes = new WeakMap<object, boolean>();
/** Whether any optimize rule of the index minifies or converts (computed once per compiled config). */
function anyTransforms(index: RuleIndex<RuleActions['optimize']>): boolean {
  let v = transformingIndexes.get(index);
  if (v === undefined) transformingIndexes.set(index, (v = index.rules.some((r) => transforms(r.action))));
  return v;
}

/** Adds `name` to the answer's Vary header unless it is listed there (or `*` is). */
function addVary(headers: [string, string][], name: string): void {
  for (let i = 0; i < headers.length; i++) {
    if (headers[i][0] !== 'vary') continue;
    const listed = headers[i][1].split(',').map((v) => v.trim().toLowerCase());
    if (!listed.includes(name.toLowerCase()) && !listed.includes('*'))
      headers[i] = ['vary', `${headers[i][1]}, ${name}`];
    return;
  }
  headers.push(['vary', name]);
}

/** The response side of one proxied request: error pages, cache store, stale answers, pool failover and health. */
class Plan implements ResponsePlan {
  readonly browserTtlSec: number;
  readonly needsOriginHeaders: boolean;
  private tried: Set<number> | null = null;
  /** Decided from the origin's head by captureLimit: seconds fresh, the vary names and variant part. */
  private storeTtlSec = 0;
  private storeVariant = '';
  private storeVary: readonly string[] = [];
  readonly compresses: boolean;
  /** Decided by compression(): the coding the edge compresses with, and whether the answer varies on Accept-Encoding. */
  private coding: Coding | undefined;
  private varyOnEncoding = false;

  constructor(
    private readonly res: HttpResponse,
    private readonly ctx: RequestContext,
    private readonly state: EdgeState,
    private readonly domain: CompiledDomain,
    private readonly rules: Rules,
    private readonly requestOps: HeaderOp[],
    readonly ops: HeaderOp[],
    private readonly cache: CacheAction | undefined,
    private readonly cacheBase: string | undefined,
    private readonly authorized: boolean,
    private readonly generation: number,
    private readonly stale: ReturnType<EdgeCache['get']>,
    private readonly pool: OriginPoolAction | undefined,
    private readonly timeoutSec: number,
  ) {
    this.browserTtlSec = cache && !cache.bypass ? cache.browserTtlSec : 0;
    this.needsOriginHeaders = cache !== undefined && cacheBase !== undefined;
    const optimize = rules.optimize;
    this.compresses = optimize !== undefined;
    this.transforms = ctx.method === 'GET' && optimize !== undefined && anyTransforms(optimize);
    this.nativeForwardable = pool === undefined && rules.error_page === undefined;
  }

  readonly nativeForwardable: boolean;

  readonly transforms: boolean;

  /**
   * optimize minification and Markdown (rules README "optimize"): for a 2xx answer (not 206) with a body, no
   * Content-Encoding, Content-Range or `no-transform`, at most TRANSFORM_MAX_BYTES by Content-Length (unknown
   * qualifies), the first matching rule that transforms its type decides. A rule with markdown_for_agents adds
   * `Vary: Accept` to every HTML answer it covers; for a client asking for text/markdown the answer's copy of the
   * headers gets the Markdown type and loses its ETag. Minified answers' ETags are made weak. A transformed answer
   * says `Accept-Ranges: none` (the origin's ranges are of its own bytes). Dry run: a hit with dry set, and the next
   * rule is asked.
   */
  transform(
    status: number,
    headers: [string, string][],
    contentLength: number,
  ): { kind: TransformKind; headers: [string, string][] } | undefined {
    if (status < 200 || status > 299 || status === 206) return undefined;
    if (contentLength > TRANSFORM_MAX_BYTES) return undefined;
    const head = changeableHead(headers);
    if (head === undefined) return undefined;
    const media = mediaType(head.type);
    const markdown = wantsMarkdown(this.ctx.header('accept'));
    const candidates = this.rules.optimize?.all(this.ctx, [], false) ?? [];
    for (const r of candidates) {
      const kind = transformKind(r.action, media, markdown);
      if (r.dryRun) {
        if (kind) this.ctx.hit(r.id, r.type, true);
        continue;
      }
      if (r.action.markdown && media === 'text/html') addVary(headers, 'Accept');
      if (!kind) continue;
      this.ctx.hit(r.id, r.type, false);
      const out: [string, string][] = [];
      for (const h of headers) {
        if (kind === 'markdown' && (h[0] === 'etag' || h[0] === 'content-type' || h[0] === 'content-language'))
          continue;
        if (h[0] === 'accept-ranges') continue; // the origin's byte ranges are of the other representation
        if (h[0] === 'etag' && h[1].startsWith('"')) out.push(['etag', `W/${h[1]}`]);
        else out.push(h);
      }
      if (kind === 'markdown') {
        out.push(['content-type', MARKDOWN_TYPE]);
        this.ctx.markdown = true;
      }
      out.push(['accept-ranges', 'none']);
      return { kind, headers: out };
    }
    return undefined;
  }

  /**
   * optimize (rules README "optimize"): the first matching rule for which the answer qualifies decides — an answer
   * with a body, not a 206, no Content-Encoding, Content-Range or `no-transform`, of a type the rule names and not
   * smaller than its min_size (an unknown length qualifies). Enforced: Vary gets Accept-Encoding (also for a client
   * that takes no coding, so a cached identity copy is a variant too), and for a client that takes br or gzip the
   * body is compressed. Dry run: a hit with dry set when it would compress, and the next rule is asked.
   */
  compression(status: number, headers: [string, string][], contentLength: number): Coding | undefined {
    if (status === 206) return undefined;
    const head = changeableHead(headers);
    if (head === undefined) return undefined;
    const { type, etag } = head;
    const candidates = this.rules.optimize?.all(this.ctx, [], false) ?? [];
    const cls = requestEncodingClass(this.ctx, this.requestOps);
    for (const r of candidates) {
      const a = r.action;
      if (!a.br && !a.gzip) continue;
      if (contentLength >= 0 && contentLength < a.minSize) continue;
      if (!compressibleType(a, type)) continue;
      const coding = chooseCoding(a, cls);
      if (r.dryRun) {
        if (coding) this.ctx.hit(r.id, r.type, true);
        continue;
      }
      this.varyOnEncoding = true;
      addVary(headers, 'Accept-Encoding');
      if (!coding) return undefined;
      this.ctx.hit(r.id, r.type, false);
      // Strong validators name the bytes: the compressed body is another representation (weak, as nginx does).
      if (etag >= 0 && headers[etag][1].startsWith('"')) headers[etag] = ['etag', `W/${headers[etag][1]}`];
      headers.push(['content-encoding', coding]);
      this.coding = coding;
      return coding;
    }
    return undefined;
  }

  replaceBody(status: number): { body: Buffer; contentType: string } | undefined {
    if (this.pool && this.ctx.poolPick) markOrigin(this.pool, this.ctx.poolPick.index, status < 500);
    const ep = errorPage(this.ctx, this.rules, status);
    return ep ? { body: ep.body, contentType: ep.contentType } : undefined;
  }

  /**
   * Whether the answer is stored, decided from its head: storable by the rule and the origin's headers (edgeTtl),
   * its Vary nameable in a key (not `*`, no credentials), the request's variant short enough, and its
   * Content-Encoding one every client of the request's Accept-Encoding class takes.
   */
  captureLimit(status: number, headers: Record<string, string | string[]>): number {
    if (this.pool && this.ctx.poolPick) markOrigin(this.pool, this.ctx.poolPick.index, true);
    if (!this.cache || this.cacheBase === undefined) return 0;
    const ttl = edgeTtl(this.cache, status, headers, this.authorized);
    if (ttl <= 0) return 0;
    // An answer the edge compresses is stored compressed, as a variant of the request's Accept-Encoding class.
    const ce = this.coding ?? headers['content-encoding'];
    if (ce !== undefined && typeof ce !== 'string') return 0;
    const coding = ce?.trim().toLowerCase();
    const encoded = coding !== undefined && coding !== '' && coding !== 'identity';
    const names = varyNames(headers['vary'], encoded || this.varyOnEncoding);
    if (names === null) return 0;
    let variant = '';
    if (names.length > 0) {
      const v = variantSuffix(names, this.ctx, this.requestOps);
      if (v === undefined) return 0;
      variant = v;
    }
    if (encoded && !codingFits(coding, requestEncodingClass(this.ctx, this.requestOps))) return 0;
    this.storeTtlSec = ttl;
    this.storeVariant = variant;
    this.storeVary = names;
    return this.state.cacheMaxObjectBytes;
  }

  onStored(
    status: number,
    headers: [string, string][],
    body: Buffer,
    originHeaders: Record<string, string | string[]>,
  ): void {
    if (this.cacheBase === undefined || this.storeTtlSec <= 0) return;
    const settings = this.domain.snapshot.settings;
    const now = Date.now();
    const expiresAt = now + Math.max(1, settings.cacheL2TtlDays || 1) * DAY_MS;
    const capBytes = Math.max(1, settings.cacheCapMb || 100) * 1024 * 1024;
    const kept = headers.filter(([k]) => k !== 'x-cache-status' && k !== 'age');
    const shared = sharedWithAuthorization(String(originHeaders['cache-control'] ?? '').toLowerCase());
    const cache = this.state.cache;
    const entry = {
      status,
      headers: kept,
      body,
      storedAt: now,
      freshUntil: now + this.storeTtlSec * 1000,
      expiresAt,
      shared,
    };
    // A varying answer: the base key holds a marker naming what it varies on, the variant key holds the answer.
    if (this.storeVary.length > 0)
      cache.setVariant(
        this.domain.name,
        this.generation,
        this.cacheBase,
        this.storeVary,
        this.storeVariant,
        entry,
        capBytes,
      );
    else cache.set(this.domain.name, this.generation, this.cacheBase, entry, capBytes);
  }

  onFailure(): boolean {
    if (this.stale && this.cache?.staleOnError) {
      this.ctx.cacheStatus = 'STALE';
      this.ctx.unserved = 'stale_on_origin_error';
      this.ctx.markdown = isMarkdown(this.stale.headers);
      respond(this.res, this.ctx, this.stale.status, [...this.stale.headers], this.stale.body, this.ops);
      return true;
    }
    return false;
  }

  sendError(status: number, cause?: Error): void {
    const ep = errorPage(this.ctx, this.rules, status);
    const code: keyof typeof ORIGIN_FAILURE_REASON =
      status === 526
        ? 'EDGE_ERR_ORIGIN_CERTIFICATE'
        : cause
          ? 'EDGE_ERR_ORIGIN_REFUSED'
          : status === 504
            ? 'EDGE_ERR_UPSTREAM_TIMEOUT'
            : 'EDGE_ERR_UPSTREAM_UNREACHABLE';
    this.ctx.unserved = ORIGIN_FAILURE_REASON[code];
    const page = ep
      ? undefined
      : pageAnswer(this.ctx.customPages, '500_errors', status, ORIGIN_FAILURE_TEXT[code], ['x-edge-error', code]);
    if (page) respond(this.res, this.ctx, status, page.headers, page.body, this.ops);
    else if (ep)
      respond(
        this.res,
        this.ctx,
        status,
        [
          ['content-type', ep.contentType],
          ['x-edge-error', code],
        ],
        ep.body,
        this.ops,
      );
    else
      respond(
        this.res,
        this.ctx,
        status,
        [...TEXT, ['x-edge-error', code]],
        status === 526
          ? `origin certificate not accepted: ${cause?.message ?? 'invalid'} (error ${code}; a record with ` +
              `scheme Auto does not verify it).\n`
          : cause
            ? `origin refused: ${cause.message}. This edge does not connect to loopback, private, link-local or ` +
              `its own addresses (error ${code}).\n`
            : status === 504
              ? 'origin timed out\n'
              : 'origin unreachable\n',
        this.ops,
      );
  }

  retarget(): OriginTarget | undefined {
    const a = this.pool;
    const pick = this.ctx.poolPick;
    if (!a || !pick) return undefined;
    markOrigin(a, pick.index, false);
    this.tried ??= new Set([pick.index]);
    const next = pickOrigin(a, this.tried);
    if (next < 0) return undefined;
    this.tried.add(next);
    pick.index = next;
    return poolTarget(a, next, this.ctx.host, this.timeoutSec);
  }

  done(): void {
    this.state.log(this.ctx);
  }
}
