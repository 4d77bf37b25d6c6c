// Control-plane error codes and ApiError: thrown anywhere in a route, answered as { "error": message, ...extra }
// with the status the registry gives its code.
import { PlatformError } from '@platform/shared';

/**
 * THE registry of error codes: each code's HTTP status and what it means. Code drives status: a thrown ApiError
 * names its code and the error handler answers with the status found here (and the code in `X-Error-Code`).
 * README "Errors" lists this table; `errors.test.ts` keeps the two equal and finds every code used in src here.
 * Where the spec names a code it is used as named (`not_a_member`).
 */
export const ERRORS = {
  CP_ERR_INVALID_INPUT: { status: 400, meaning: 'a bad value or a malformed body' },
  CP_ERR_WRONG_STATE: {
    status: 400,
    meaning: 'the domain (or a support ticket) is not in a state or DNS mode the operation accepts',
  },
  CP_ERR_RECORD_INVALID: { status: 400, meaning: 'a DNS record field breaks a rule of the record table' },
  CP_ERR_RECORD_CONFLICT: { status: 400, meaning: 'a DNS record breaks CNAME exclusivity or another zone rule' },
  CP_ERR_RULE_INVALID: { status: 400, meaning: 'a rule breaks its schema; the body lists every problem' },
  CP_ERR_MONITOR_INVALID: { status: 400, meaning: 'an uptime monitor breaks its schema; the body lists every problem' },
  CP_ERR_MONITOR_CAP: { status: 400, meaning: 'the domain already has the most uptime monitors a domain may have' },
  CP_ERR_CONFIG_TOO_LARGE: {
    status: 400,
    meaning: "the domain's compiled config would exceed DOMAIN_CONFIG_MAX_BYTES",
  },
  not_a_member: { status: 400, meaning: 'billing member: the user has no accepted membership (spec code)' },
  CP_ERR_INVALID_API_KEY: { status: 401, meaning: 'missing, malformed, unknown, revoked or expired API key' },
  CP_ERR_SIGN_IN_FAILED: { status: 401, meaning: 'sign-in: unknown email address or wrong password' },
  CP_ERR_NOT_SIGNED_IN: { status: 401, meaning: 'a browser surface without a live session' },
  CP_ERR_INVALID_NODE_TOKEN: { status: 401, meaning: '/internal/**: missing or wrong node token' },
  CP_ERR_ACCOUNT_INACTIVE: { status: 403, meaning: "the key's account is deactivated" },
  CP_ERR_READ_ONLY_KEY: { status: 403, meaning: 'a read-only key on a write' },
  CP_ERR_DENIED_SURFACE: { status: 403, meaning: 'a surface no API key may reach' },
  CP_ERR_CSRF: { status: 403, meaning: "a browser session's state-changing request without its X-CSRF-Token" },
  CP_ERR_ROLE: { status: 403, meaning: "the caller's role on the domain lacks the permission" },
  CP_ERR_SSO_NOT_ALLOWED: {
    status: 403,
    meaning: "edge SSO: no basic_auth rule of the hostname's domain lists the signed-in account",
  },
  CP_ERR_NOT_INVITEE: { status: 403, meaning: "a domain invitation addressed to another account's email address" },
  CP_ERR_PLAN_LIMIT: {
    status: 403,
    meaning: 'the plan lacks the feature or its limit is reached (`feature` names it)',
  },
  CP_ERR_TERMS_NOT_ACCEPTED: {
    status: 403,
    meaning: "the caller has not accepted the current version of the gateways' terms of use",
  },
  CP_ERR_NOT_FOUND: { status: 404, meaning: 'no such resource, or not visible to the caller' },
  CP_ERR_ROUTE_NOT_FOUND: { status: 404, meaning: 'no route for this method and path' },
  CP_ERR_METHOD_NOT_ALLOWED: { status: 405, meaning: 'the path exists with other methods (`Allow` lists them)' },
  CP_ERR_DOMAIN_EXISTS: { status: 409, meaning: 'the domain, or a zone around or inside it, is already registered' },
  CP_ERR_DOMAIN_DISABLED: { status: 409, meaning: 'the domain is disabled or banned' },
  CP_ERR_TOKEN_EXPIRED: { status: 409, meaning: 'the verification token expired' },
  CP_ERR_RECORD_DUPLICATE: { status: 409, meaning: 'an identical DNS record already exists' },
  CP_ERR_ISSUANCE_RUNNING: { status: 409, meaning: 'a certificate order of the domain is already running' },
  CP_ERR_CONFLICT: {
    status: 409,
    meaning: 'another conflict with stored state (admin commands, an attack already enforced)',
  },
  CP_ERR_GONE: { status: 410, meaning: 'the endpoint was removed (its description names what replaces it)' },
  CP_ERR_BODY_TOO_LARGE: { status: 413, meaning: 'a body, file or form field above API_BODY_LIMIT_BYTES' },
  CP_ERR_UNSUPPORTED_MEDIA_TYPE: { status: 415, meaning: 'a body that is not application/json' },
  CP_ERR_CHECK_FAILED: { status: 422, meaning: 'a verification or delegation check found no valid record' },
  CP_ERR_RATE_LIMITED: { status: 429, meaning: 'RATE_LIMIT_PER_MINUTE exceeded, or a per-domain check limit' },
  CP_ERR_SIGN_IN_THROTTLED: { status: 429, meaning: 'too many failed sign-ins of the account or client network' },
  CP_ERR_INTERNAL: { status: 500, meaning: 'unexpected failure; logged, the client sees a generic text' },
  CP_ERR_UNAVAILABLE: { status: 503, meaning: 'a dependency (Temporal, certificate issuer) is unavailable' },
} as const satisfies Record<string, { status: number; meaning: string }>;

export type ApiErrorCode = keyof typeof ERRORS;

/** Known message texts (spec "Errors"). */
export const MESSAGES = {
  invalidKey: 'invalid API key',
  inactive: 'account is inactive',
  readOnly: 'read-only API key',
  rateLimited: 'rate limit exceeded',
  deniedSurface: 'this endpoint is not available to API keys',
  internalForKeys: 'internal endpoints do not accept API keys',
  domainNotFound: 'domain not found',
  routeNotFound: 'route not found',
  methodNotAllowed: 'method not allowed',
  internal: 'internal server error',
} as const;

export class ApiError<C extends ApiErrorCode = ApiErrorCode> extends PlatformError<C> {
  /** From the registry: the code decides the status. */
  readonly statusCode: number;
  readonly extra: Record<string, unknown> | undefined;

  constructor(code: C, message: string, extra?: Record<string, unknown>, options: { cause?: unknown } = {}) {
    const statusCode = ERRORS[code].status;
    super(code, message, { kind: statusCode >= 500 ? 'system' : 'user', cause: options.cause });
    this.statusCode = statusCode;
    this.extra = extra;
  }
}

export function isApiError(err: unknown): err is ApiError {
  return (
    typeof err === 'object' &&
    err !== null &&
    (err as { name?: unknown }).name === 'PlatformError' &&
    typeof (err as { statusCode?: unknown }).statusCode === 'number'
  );
}
