// One error handler for the whole API: every error is { "error": "<text>" }; a 5xx logs its cause and says nothing more.
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { isApiError, MESSAGES } from '../errors.js';
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
 * A multipart body with more parts than its one field breaks the schema (no other field is allowed): 400 as any
 * unknown field, not the 413 @fastify/multipart gives, although the parts stop being read at the limit.
 */
const STATUS_BY_CODE: Record<string, number> = { FST_FILES_LIMIT: 400, FST_FIELDS_LIMIT: 400, FST_PARTS_LIMIT: 400 };

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
    if (isApiError(err)) {
      if (err.statusCode === 401) void reply.header('www-authenticate', 'Bearer realm="api"');
      if (err.statusCode >= 500) request.log.error({ err }, 'request failed');
      const status = err.statusCode;
      // 503 is a designed answer (issuer or workflow service unavailable): its text helps the caller and leaks nothing.
      return reply
        .code(status)
        .send(status >= 500 && status !== 503 ? { error: MESSAGES.internal } : { error: err.message, ...err.extra });
    }
    if (err.validation) {
      return reply
        .code(400)
        .send({ error: formatValidationError(err.validation as AjvError[], err.validationContext) });
    }
    const status =
      STATUS_BY_CODE[err.code] ??
      (typeof err.statusCode === 'number' && err.statusCode >= 400 && err.statusCode < 600 ? err.statusCode : 500);
    if (status === 429) return reply.code(429).send({ error: MESSAGES.rateLimited });
    if (status >= 500) {
      request.log.error({ err }, 'request failed');
      return reply.code(status).send({ error: MESSAGES.internal });
    }
    return reply.code(status).send({ error: clientMessage(err, bodyLimit) });
  });
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
  const answer = (request: FastifyRequest, reply: FastifyReply) => {
    const path = request.url.split('?')[0];
    const allowed = routes?.allowedMethods(request.url) ?? [];
    if (allowed.length > 0) {
      return reply
        .code(405)
        .header('allow', allowed.join(', '))
        .send({ error: `${MESSAGES.methodNotAllowed}: ${request.method} ${path} (allowed: ${allowed.join(', ')})` });
    }
    const near = routes?.trailingSlashHint(request.method, request.url);
    const seeAlso = near ? ` (trailing slashes are significant: did you mean ${near}?)` : '';
    return reply.code(404).send({ error: `${MESSAGES.routeNotFound}: ${request.method} ${path}${seeAlso}` });
  };
  // Answered as soon as the key is checked, before any body is read: a request no route takes has no body to
  // parse (a QUERY without Content-Type would be refused for that first, RFC 10008 §2, instead of 405). The router
  // also matches `/domains/` to `/domains/{domain}` with an empty name (PUT /domains/ would update the domain ""):
  // a route's parameter is never empty, so such a request is the unknown route it is too.
  app.addHook('onRequest', async (request, reply) => {
    const params = request.params as Record<string, string> | undefined;
    if (!request.is404 && !(params && Object.values(params).some((value) => value === ''))) return;
    await limit?.(request, reply);
    return answer(request, reply);
  });
  app.setNotFoundHandler(answer);
}
