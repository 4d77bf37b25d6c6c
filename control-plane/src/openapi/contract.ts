// What makes the OpenAPI document exact without each route repeating it: the error statuses every route can answer
// because of the plugins in front of it (authentication, rate limit, body parsing, parameter validation), and the
// links between operations that let a client (or a stateful fuzzer) chain them: a domain → its records → a rule.
import type { RouteOptions } from 'fastify';
import type { TSchema } from '@sinclair/typebox';
import { ErrorBody } from './schemas.js';
import { ERRORS, type ApiErrorCode } from '../errors.js';

/** Methods whose request bodies Fastify parses: malformed JSON (400), too large (413), not JSON (415). */
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * The statuses a route can answer before its handler runs, added to its response schema (an onRoute hook):
 * 401 and 429 (key, rate limit), 403 (inactive account, read-only key, denied surface), 400 for a path or query
 * parameter that fails its schema, 404 `domain not found` under /domains/{domain}, and 400/413/415 where a body is
 * parsed. Routes that serve themselves without a key (config.public, hidden routes) are left as they are.
 */
export function completeErrorResponses(route: RouteOptions): void {
  const schema = route.schema as { hide?: boolean; response?: Record<string, unknown> } | undefined;
  if (!schema?.response || schema.hide || route.url.startsWith('/internal')) return;
  if ((route.config as { public?: boolean } | undefined)?.public === true) return;
  if (route.url === '/openapi.json') return;
  const statuses = [401, 403, 429];
  const methods = [route.method].flat().map((m) => m.toUpperCase());
  if (/:[A-Za-z]/.test(route.url) || (route.schema as { querystring?: unknown }).querystring) statuses.push(400);
  if (route.url.startsWith('/domains/:domain')) statuses.push(404);
  if (methods.some((m) => BODY_METHODS.has(m))) statuses.push(400, 413, 415);
  for (const status of statuses) schema.response[status] ??= ErrorBody as TSchema;
}

interface OpenApiOperation {
  parameters?: Array<{ name: string; in: string }>;
  responses?: Record<
    string,
    { content?: Record<string, { schema?: { properties?: Record<string, unknown> } }> } & {
      links?: Record<string, unknown>;
      headers?: Record<string, unknown>;
    }
  >;
  operationId?: string;
}
type Paths = Record<string, Record<string, OpenApiOperation>>;

/** The field of a created resource that fills the path parameter naming it: `/domains/{domain}` ← name, else ← id. */
function keyField(param: string, properties: Record<string, unknown>): string | undefined {
  if (param in properties) return param;
  if (param === 'domain' && 'name' in properties) return 'name';
  if ('id' in properties) return 'id';
  return undefined;
}

function operationName(method: string, path: string): string {
  return `${method.toUpperCase()} ${path}`;
}

/**
 * OpenAPI links, added to the generated document (transformObject): every create (`POST <collection>/`) links to
 * each operation on `<collection>/{param}` and below, the new resource's key filling {param} and the request's own
 * path parameters the rest; a record create also links to each rule create, scoped to that record.
 */
export function addLinks(paths: Paths): void {
  const operations = Object.entries(paths).flatMap(([path, ops]) =>
    Object.entries(ops).map(([method, op]) => ({ path, method, op })),
  );
  for (const create of operations) {
    if (create.method !== 'post' || !create.path.endsWith('/')) continue;
    const ok = create.op.responses?.['200'];
    const properties = ok?.content?.['application/json']?.schema?.properties;
    if (!ok || !properties) continue;
    const links: Record<string, unknown> = {};
    const ownParams = [...create.path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]!);
    for (const target of operations) {
      const m = new RegExp(`^${escapeRegExp(create.path)}\\{([^}/]+)\\}`).exec(target.path);
      if (!m) continue;
      if (deletesSettingBelow(target, `${create.path}{${m[1]!}}`)) continue;
      const field = keyField(m[1]!, properties);
      if (!field) continue;
      const parameters: Record<string, string> = { [m[1]!]: `$response.body#/${field}` };
      for (const p of ownParams) parameters[p] = `$request.path.${p}`;
      // A target below another resource (`/domains/{domain}/records/{id}` from a domain create) has a parameter
      // this create cannot fill: no link.
      if ([...target.path.matchAll(/\{([^}]+)\}/g)].some((p) => !(p[1]! in parameters))) continue;
      links[linkName(target.method, target.path)] = {
        operationRef: `#/paths/${pointer(target.path)}/${target.method}`,
        parameters,
        description: `${operationName(target.method, target.path)} on the resource just created`,
      };
    }
    if (create.path === '/domains/{domain}/records/') {
      for (const target of operations) {
        if (target.method !== 'post' || !/^\/domains\/\{domain\}\/(rules\/[a-z_]+|custom-rules)\/$/.test(target.path))
          continue;
        links[linkName(target.method, target.path)] = {
          operationRef: `#/paths/${pointer(target.path)}/post`,
          parameters: { domain: '$request.path.domain' },
          requestBody: { record_ids: ['$response.body#/id'] },
          description: `${operationName(target.method, target.path)} scoped to the record just created`,
        };
      }
    }
    if (Object.keys(links).length > 0) ok.links = { ...ok.links, ...links };
  }
  addItemLinks(operations);
}

/**
 * A change of one resource (a non-GET operation on `…/{param}`, or on a sub-action of it such as `…/{id}/enabled`)
 * links to every other operation on that resource and its sub-actions, with the same path parameters: update →
 * read → delete, and delete → read (which must then answer 404), as a client goes on with the resource it holds.
 */
function addItemLinks(operations: Array<{ path: string; method: string; op: OpenApiOperation }>): void {
  for (const source of operations) {
    if (source.method === 'get') continue;
    // Not from a domain's own DELETE: scripts/api-fuzz.sh fuzzes one fixed domain and recreates it right after its
    // DELETE (hooks.py), so a read following the link would find the new domain and look like a use after free.
    if (source.method === 'delete' && source.path === '/domains/{domain}') continue;
    const ok = source.op.responses?.['200'];
    const item = /^(.*\/\{[^}/]+\})(?:\/[^{}/]+)?$/.exec(source.path)?.[1];
    if (!ok || !item || deletesSettingBelow(source, item)) continue;
    const params = [...item.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]!);
    const links: Record<string, unknown> = {};
    for (const target of operations) {
      if (target === source || !(target.path === item || /^\/[^{}/]+$/.test(target.path.slice(item.length)))) continue;
      if (!target.path.startsWith(item)) continue;
      if (deletesSettingBelow(target, item)) continue;
      links[linkName(target.method, target.path)] = {
        operationRef: `#/paths/${pointer(target.path)}/${target.method}`,
        parameters: Object.fromEntries(params.map((p) => [p, `$request.path.${p}`])),
        description: `${operationName(target.method, target.path)} on the same resource`,
      };
    }
    if (Object.keys(links).length > 0) ok.links = { ...ok.links, ...links };
  }
}

/**
 * A DELETE below a resource rather than of it (`DELETE /domains/{domain}/analytics-tag`) switches a setting off or
 * empties a collection; the GET of the same path then answers the setting's off state with 200, by design
 * (docs/decisions.md, "Domain operations of issue 16"). A fuzzer following links from the resource to both reads that
 * 200 as a use after free, so such DELETEs get no links, to or from them; the other fuzz phases still call them.
 */
function deletesSettingBelow(target: { path: string; method: string }, resourcePath: string): boolean {
  return target.method === 'delete' && target.path !== resourcePath;
}

function linkName(method: string, path: string): string {
  return `${method}${path.replace(/[{}]/g, '').replace(/[^A-Za-z0-9]+/g, '_')}`.replace(/_+$/, '');
}

/** A JSON pointer segment for a path (RFC 6901: ~ → ~0, / → ~1). */
function pointer(path: string): string {
  return path.replace(/~/g, '~0').replace(/\//g, '~1');
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** The codes of the registry (errors.ts) answered with `status`, in registry order. */
export function codesOfStatus(status: number): ApiErrorCode[] {
  return (Object.keys(ERRORS) as ApiErrorCode[]).filter((code) => ERRORS[code].status === status);
}

/**
 * Every error response (4xx, 5xx with the Error body) declares the `X-Error-Code` header the error handler sets on
 * each error it answers (plugins/error-handler.ts), with the codes of that status as its enum.
 */
export function addErrorCodeHeaders(paths: Paths): void {
  for (const ops of Object.values(paths)) {
    for (const op of Object.values(ops)) {
      for (const [status, response] of Object.entries(op.responses ?? {})) {
        // Answers of the error handler only: their body is the Error object (`/readyz`'s 503 is a status report).
        const isError = response.content?.['application/json']?.schema?.properties?.error !== undefined;
        const codes = isError && /^[45]\d\d$/.test(status) ? codesOfStatus(Number(status)) : [];
        if (codes.length === 0) continue;
        response.headers = {
          ...response.headers,
          'X-Error-Code': {
            description: 'The error code (errors.ts registry; the README lists each with its meaning)',
            required: true,
            schema: { type: 'string', enum: codes },
          },
        };
      }
    }
  }
}
