// One error handler for the whole API: every error is { "error": "<text>" } with the status the registry (errors.ts)
// gives its code, and the code in X-Error-Code; a 5xx logs its cause and says nothing more.
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ERRORS, isApiError, MESSAGES, type ApiErrorCode } from '../errors.js';
import type { RouteLookup } from './route-hints.js';

interface AjvError {
  instancePath?: string;
  keyword: string;
  message?: string;
  params?: Record<string, unknown>;
  /** The schema holding the failed keyword (Ajv option verbose). */
  parentSchema?: { minimum?: number; maximum?: number; 'x-expected'?: string };
}

/** "cache_l2_ttl_days must be between 1 and 7": the field named as the client wrote it, then what is wrong with it. */
export function formatValidationError(errors: AjvError[], context: string | undefined): string {
  const e = errors[0];
  if (!e) return 'invalid input';
  // JSON pointer "/users/999/username" → "users[999].username", as the services name list entries.
  const where = (e.instancePath ?? '')
    .split('/')
    .slice(1)
    .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'))
    .reduce((path, part) => (/^\d+$/.test(part) ? `${path}[${part}]` : path ? `${path}.${part}` : part), '');
  const field = where || (context === 'body' ? 'body' : (context ?? 'input'));
  const params = e.params ?? {};
  switch (e.keyword) {
    case 'required': {
      const missing = String(params.missingProperty);
      return `${where ? `${where}.` : ''}${missing} is required`;
    }
    case 'additionalProperties':
      return `unknown field ${where ? `${where}.` : ''}${String(params.additionalProperty)}`;
    case 'enum':
      return `${field} must be one of: ${(params.allowedValues as unknown[]).map(String).join(', ')}`;
    case 'type':
      return `${field} must be ${String(params.type).replace(/,/g, ' or ')}`;
    case 'pattern': {
      const expected = e.parentSchema?.['x-expected'];
      return expected ? `${field} must be ${expected}` : `${field} ${e.message ?? 'is invalid'}`;
    }
    case 'maxLength':
      return `${field} must be at most ${String(params.limit)} characters`;
    case 'minLength':
      return params.limit === 1
        ? `${field} must not be empty`
        : `${field} must be at least ${String(params.limit)} characters`;
    case 'maxItems':
      return `${field} must have at most ${String(params.limit)} entries`;
    case 'minItems':
      return `${field} must have at least ${String(params.limit)} ${params.limit === 1 ? 'entry' : 'entries'}`;
    case 'minimum':
    case 'maximum': {
      const { minimum, maximum } = e.parentSchema ?? {};
      if (minimum !== undefined && maximum !== undefined) return `${field} must be between ${minimum} and ${maximum}`;
      return `${field} ${e.message ?? 'is out of range'}`;
    }
    default:
      return `${field} ${e.message ?? 'is invalid'}`;
  }
}

const UPLOAD_FIELDS = 'an upload has one form field, file';

/**
 * Errors raised by Fastify and its plugins, by their code → ours. A multipart body with more parts than its one
 * field breaks the schema (no other field is allowed): invalid input as any unknown field, not the 413
 * @fastify/multipart gives, although the parts stop being read at the limit.
 */
const FRAMEWORK_CODES: Record<string, ApiErrorCode> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'CP_ERR_UNSUPPORTED_MEDIA_TYPE',
  FST_ERR_CTP_BODY_TOO_LARGE: 'CP_ERR_BODY_TOO_LARGE',
  FST_REQ_FILE_TOO_LARGE: 'CP_ERR_BODY_TOO_LARGE',
  FST_FILES_LIMIT: 'CP_ERR_INVALID_INPUT',
  FST_FIELDS_LIMIT: 'CP_ERR_INVALID_INPUT',
  FST_PARTS_LIMIT: 'CP_ERR_INVALID_INPUT',
};

const BY_STATUS: Record<number, ApiErrorCode> = {
  404: 'CP_ERR_NOT_FOUND',
  405: 'CP_ERR_METHOD_NOT_ALLOWED',
  413: 'CP_ERR_BODY_TOO_LARGE',
  415: 'CP_ERR_UNSUPPORTED_MEDIA_TYPE',
  429: 'CP_ERR_RATE_LIMITED',
};

/** Our code for an error of Fastify or a plugin: by its code, else by the status it carries (4xx: invalid input). */
function frameworkCode(err: FastifyError): ApiErrorCode {
  const known = FRAMEWORK_CODES[err.code];
  if (known) return known;
  const status = typeof err.statusCode === 'number' ? err.statusCode : 500;
  const byStatus = BY_STATUS[status];
  if (byStatus) return byStatus;
  return status >= 400 && status < 500 ? 'CP_ERR_INVALID_INPUT' : 'CP_ERR_INTERNAL';
}

/** Sets the status of `code` (from the registry) and its X-Error-Code header. */
function answer(reply: FastifyReply, code: ApiErrorCode): FastifyReply {
  return reply.code(ERRORS[code].status).header('x-error-code', code);
}

function clientMessage(err: FastifyError, bodyLimit: number): string {
  switch (err.code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return 'unsupported content type: request bodies must be application/json';
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return `request body too large (limit ${bodyLimit} bytes)`;
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return 'malformed JSON body: the body is empty';
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return 'malformed JSON body';
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return 'request body does not match Content-Length';
    // Multipart uploads (the zone import only):
    case 'FST_REQ_FILE_TOO_LARGE':
      return `uploaded file too large (limit ${bodyLimit} bytes)`;
    case 'FST_FILES_LIMIT':
    case 'FST_FIELDS_LIMIT':
    case 'FST_PARTS_LIMIT':
      return UPLOAD_FIELDS;
    default:
      if (err instanceof SyntaxError || err.name === 'SyntaxError') return 'malformed JSON body';
      return err.message;
  }
}

export function installErrorHandlers(app: FastifyInstance, bodyLimit: number): void {
  app.setErrorHandler((err: FastifyError, request, reply) => {
    // A key the route's write was to read (auth/authenticate.ts KEY_READ_BY_WRITE) is checked first, as the
    // authentication hook would have before the body: its refusal (401, 403, 429) is the answer.
    const deferred = request.deferredKey;
    if (!deferred) return respond(err, request, reply);
    deferred.settle().then(
      () => respond(err, request, reply),
      (refusal: FastifyError) => respond(refusal, request, reply),
    );
  });

  function respond(err: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply {
    if (isApiError(err) && Object.hasOwn(ERRORS, err.code)) {
      const code = err.code;
      // RFC 9110 §15.5.2: every 401 names its scheme (API keys and node tokens are both Bearer tokens).
      if (ERRORS[code].status === 401) void reply.header('www-authenticate', 'Bearer realm="api"');
      if (code === 'CP_ERR_INTERNAL') {
        request.log.error({ err }, 'request failed');
        return answer(reply, code).send({ error: MESSAGES.internal });
      }
      // 503 is a designed answer (issuer or workflow service unavailable): its text helps the caller and leaks nothing.
      return answer(reply, code).send({ error: err.message, ...err.extra });
    }
    if (err.validation) {
      return answer(reply, 'CP_ERR_INVALID_INPUT').send({
        error: formatValidationError(err.validation as AjvError[], err.validationContext),
      });
    }
    const code = frameworkCode(err);
    if (code === 'CP_ERR_RATE_LIMITED') return answer(reply, code).send({ error: MESSAGES.rateLimited });
    if (code === 'CP_ERR_INTERNAL') {
      request.log.error({ err }, 'request failed');
      return answer(reply, code).send({ error: MESSAGES.internal });
    }
    // A route with its own body limit (the zone import) names that one.
    return answer(reply, code).send({ error: clientMessage(err, request.routeOptions.bodyLimit ?? bodyLimit) });
  }
}

/**
 * 404 for unknown routes, 405 with `Allow` for a path that exists with other methods (RFC 9110 §15.5.6);
 * `limit` (the rate limiter) keeps URL probing within the key's budget. The 404 names the route that differs
 * only by its trailing slash, if there is one.
 */
export function installNotFoundHandler(
  app: FastifyInstance,
  limit?: (request: FastifyRequest, reply: FastifyReply) => Promise<unknown>,
  routes?: RouteLookup,
): void {
  const noRoute = (request: FastifyRequest, reply: FastifyReply) => {
    const path = request.url.split('?')[0];
    const allowed = routes?.allowedMethods(request.url) ?? [];
    if (allowed.length > 0) {
      return answer(reply, 'CP_ERR_METHOD_NOT_ALLOWED')
        .header('allow', allowed.join(', '))
        .send({ error: `${MESSAGES.methodNotAllowed}: ${request.method} ${path} (allowed: ${allowed.join(', ')})` });
    }
    const near = routes?.trailingSlashHint(request.method, request.url);
    const seeAlso = near ? ` (trailing slashes are significant: did you mean ${near}?)` : '';
    return answer(reply, 'CP_ERR_ROUTE_NOT_FOUND').send({
      error: `${MESSAGES.routeNotFound}: ${request.method} ${path}${seeAlso}`,
    });
  };
  // Answered as soon as the key is checked, before any body is read: a request no route takes has no body to
  // parse (a QUERY without Content-Type would be refused for that first, RFC 10008 §2, instead of 405). The router
  // also matches `/domains/` to `/domains/{domain}` with an empty name (PUT /domains/ would update the domain ""):
  // a route's parameter is never empty, so such a request is the unknown route it is too.
  app.addHook('onRequest', async (request, reply) => {
    const params = request.params as Record<string, string> | undefined;
    if (!request.is404 && !(params && Object.values(params).some((value) => value === ''))) return;
    await limit?.(request, reply);
    return noRoute(request, reply);
  });
  app.setNotFoundHandler(noRoute);
}
