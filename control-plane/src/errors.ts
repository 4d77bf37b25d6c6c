// Control-plane error codes and ApiError: thrown anywhere in a route, answered as { "error": message, ...extra }.
import { PlatformError } from '@platform/shared';

/** Error codes of the control plane, one per HTTP status it answers (see README "Errors"). */
export const ERROR_CODES = {
  400: 'CP_ERR_INVALID_INPUT', // bad value, malformed body, wrong state for the operation
  401: 'CP_ERR_INVALID_API_KEY', // missing, malformed, unknown, revoked or expired key
  403: 'CP_ERR_FORBIDDEN', // read-only key, role, denied surface, inactive account, plan feature
  404: 'CP_ERR_NOT_FOUND', // no such route or resource, or not visible to the caller
  405: 'CP_ERR_METHOD_NOT_ALLOWED', // the path exists with other methods (Allow lists them)
  409: 'CP_ERR_CONFLICT', // already exists, in progress, expired token, disabled domain
  413: 'CP_ERR_BODY_TOO_LARGE', // request body above API_BODY_LIMIT_BYTES
  415: 'CP_ERR_UNSUPPORTED_MEDIA_TYPE', // body that is not application/json
  422: 'CP_ERR_CHECK_FAILED', // verification or delegation check found no valid record
  429: 'CP_ERR_RATE_LIMITED', // RATE_LIMIT_PER_MINUTE exceeded or a per-domain cooldown
  500: 'CP_ERR_INTERNAL', // unexpected failure; the cause is logged, the client sees a generic text
  503: 'CP_ERR_UNAVAILABLE', // a dependency (certificate issuer, Temporal) is temporarily unavailable
} as const;

export type ApiErrorCode = (typeof ERROR_CODES)[keyof typeof ERROR_CODES] | 'CP_ERR_HTTP';

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

export class ApiError extends PlatformError<ApiErrorCode> {
  readonly statusCode: number;
  readonly extra: Record<string, unknown> | undefined;

  constructor(statusCode: number, message: string, extra?: Record<string, unknown>, options: { cause?: unknown } = {}) {
    const code = (ERROR_CODES as Record<number, ApiErrorCode>)[statusCode] ?? 'CP_ERR_HTTP';
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
