// The auth matrix (issue 16 item 1): every operation of the OpenAPI document (so a new route is covered without
// touching this file) × key mode (full, read-only, none) × role (owner, admin, editor, viewer, non-member), checked
// against the one role → permission table (control-plane/src/auth/permissions.ts) and the spec's Authentication
// section: 401 without a key, 403 `read-only API key` for every write of a read-only key, 404 for a domain the
// caller cannot see, 403 CP_ERR_ROLE exactly for the roles that lack the permission a route names, and 403 for
// every key on the money-moving and other denied surfaces (spec Authentication §6), whether a route exists or not.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestControlPlane } from '../helpers/control-plane.js';
import { hasPermission, PERMISSIONS, type Permission, type Role } from '../../control-plane/src/auth/permissions.js';
import { isDeniedSurface, readOnlyMayCall } from '../../control-plane/src/auth/surfaces.js';
import { setPlan } from '../../control-plane/src/plans/subscriptions.js';

type Schema = Record<string, unknown>;
interface Operation {
  security?: unknown[];
  parameters?: Array<{ name: string; in: string; required?: boolean; schema: Schema }>;
  requestBody?: {
    content?: Record<string, { schema?: Schema; example?: unknown; examples?: Record<string, { value: unknown }> }>;
  };
}

const MEMBER_ROLES: Role[] = ['viewer', 'editor', 'admin', 'owner'];

/**
 * Writes on a domain that a viewer may make: choices about oneself (spec: roles apply to what a key may change on a
 * domain; leaving it and one's own notifications are one's own). Each still names its permission for others.
 */
const SELF_SERVICE = new Set([
  'PATCH /domains/{domain}/members/{user_id}',
  'DELETE /domains/{domain}/members/{user_id}',
]);

/** Spec Authentication §6: 403 for every key, full access included; checked whether or not a route exists. */
const DENIED = [
  ['POST', '/wallet/topup'],
  ['POST', '/subscriptions/purchase'],
  ['POST', '/subscriptions/switch'],
  ['POST', '/subscriptions/auto-renew'],
  ['POST', '/domains/{domain}/subscriptions/purchase'],
  ['POST', '/domains/{domain}/subscriptions/switch'],
  ['POST', '/domains/{domain}/subscriptions/auto-renew'],
  ['GET', '/users/me'],
  ['POST', '/users/me/api-keys'],
  ['POST', '/auth/login'],
  ['GET', '/billing/plans'],
  ['GET', '/admin/users'],
] as const;

/** A small instance of a JSON schema: enough to pass validation, so the role check (in the handler) is reached. */
function instance(schema: Schema | undefined, refs: Record<string, Schema>, depth = 0): unknown {
  if (!schema || depth > 8) return undefined;
  if (typeof schema.$ref === 'string') return instance(refs[schema.$ref.split('/').pop()!], refs, depth + 1);
  if ('const' in schema) return schema.const;
  if (Array.isArray(schema.enum)) return schema.enum[0];
  if (Array.isArray(schema.examples) && schema.examples.length > 0) return schema.examples[0];
  for (const k of ['anyOf', 'oneOf'] as const)
    if (Array.isArray(schema[k])) return instance((schema[k] as Schema[])[0], refs, depth + 1);
  if (Array.isArray(schema.allOf)) return instance((schema.allOf as Schema[])[0], refs, depth + 1);
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  switch (type) {
    case 'object': {
      const props = (schema.properties ?? {}) as Record<string, Schema>;
      const required = new Set((schema.required as string[] | undefined) ?? []);
      const out: Record<string, unknown> = {};
      const min = Number(schema.minProperties ?? 0);
      for (const [name, sub] of Object.entries(props))
        if (required.has(name) || Object.keys(out).length < min) out[name] = instance(sub, refs, depth + 1);
      return out;
    }
    case 'array':
      return Array.from({ length: Number(schema.minItems ?? 0) }, () =>
        instance(schema.items as Schema, refs, depth + 1),
      );
    case 'integer':
    case 'number':
      return Number(schema.minimum ?? 1);
    case 'boolean':
      return false;
    case 'null':
      return null;
    case 'string':
      if (schema.format === 'date-time') return new Date().toISOString();
      if (schema.format === 'uri') return 'https://example.org/';
      return 'a'.repeat(Number(schema.minLength ?? 1));
    default:
      return undefined;
  }
}

test('auth matrix: every route × key mode × role, as the role → permission table says', async (t) => {
  const cp = await startTestControlPlane(t, { RATE_LIMIT_PER_MINUTE: '1000000' });
  const people = {
    owner: await cp.user('owner@matrix.test'),
    admin: await cp.user('admin@matrix.test'),
    editor: await cp.user('editor@matrix.test'),
    viewer: await cp.user('viewer@matrix.test'),
    stranger: await cp.user('stranger@matrix.test'),
  };
  const domain = await cp.domain(people.owner.key, 'matrix.example.org');
  const { id: domainId } = (await cp.call(people.owner.key, 'GET', `/domains/${domain}`)).json<{ id: number }>();
  // Enterprise: a plan feature never answers 403 where the role is what is checked.
  await setPlan(cp.database.db, domainId, 'enterprise');
  for (const role of ['admin', 'editor', 'viewer'] as const) await cp.addMember(domain, people[role].id, role);
  const readOnly: Record<string, string> = {};
  for (const [who, p] of Object.entries(people)) readOnly[who] = (await cp.key(p.id, { readOnly: true })).key;

  const doc = (await cp.call(null, 'GET', '/openapi.json')).json<{
    paths: Record<string, Record<string, Operation>>;
    components?: { schemas?: Record<string, Schema> };
  }>();
  const refs = doc.components?.schemas ?? {};

  const problems: string[] = [];
  const unreached: string[] = [];
  const named = new Map<string, Permission | 'write access'>();
  let checked = 0;

  for (const [path, ops] of Object.entries(doc.paths)) {
    for (const [m, op] of Object.entries(ops)) {
      const method = m.toUpperCase();
      if (method === 'HEAD') continue;
      const name = `${method} ${path}`;
      const query = (op.parameters ?? []).filter((p) => p.in === 'query' && p.required);
      const scoped = path.includes('{domain}') || query.some((p) => p.name === 'domain');
      // Path parameters: the domain; an id 1 (any id: the role is checked before the id is looked up); a named
      // value (a gateway, a check) by its schema; a token by its pattern.
      const pathParam = (p: string) => {
        const schema = (op.parameters ?? []).find((q) => q.in === 'path' && q.name === p)?.schema ?? {};
        if (p === 'domain') return domain;
        if (p === 'token') return `inv_${'a'.repeat(43)}`;
        if (schema.type === 'integer') return '1';
        return encodeURIComponent(String(instance(schema, refs) ?? '1'));
      };
      let url = path.replace(/\{([^}]+)\}/g, (_, p: string) => pathParam(p));
      if (query.length > 0)
        url += `?${query.map((p) => `${p.name}=${encodeURIComponent(p.name === 'domain' ? domain : String(instance(p.schema, refs)))}`).join('&')}`;
      const media = op.requestBody?.content?.['application/json'];
      const example = media?.example ?? Object.values(media?.examples ?? {})[0]?.value;
      const body = media ? (example ?? instance(media.schema, refs) ?? {}) : undefined;
      const send = (key: string | null) => cp.call(key, method as 'GET', url, body);

      if (Array.isArray(op.security) && op.security.length === 0) continue; // public: no key taken
      checked++;
      // No key: 401 everywhere.
      const none = await send(null);
      if (none.statusCode !== 401) problems.push(`${name} without a key: ${none.statusCode}`);

      // Read-only keys: a write is 403 `read-only API key` for every role, before anything else.
      if (!readOnlyMayCall(method, path)) {
        const answers = await Promise.all(Object.values(readOnly).map(send));
        for (const res of answers)
          if (res.headers['x-error-code'] !== 'CP_ERR_READ_ONLY_KEY')
            problems.push(`${name} read-only: ${res.statusCode} ${res.body}`);
      }
      // Denied surfaces: 403 for every full key.
      if (isDeniedSurface(method, url)) {
        for (const p of Object.values(people)) {
          const res = await send(p.key);
          if (res.headers['x-error-code'] !== 'CP_ERR_DENIED_SURFACE')
            problems.push(`${name} denied: ${res.statusCode}`);
        }
        continue;
      }

      if (!scoped) {
        // Not about one domain: any account's full key gets past authentication and no role is consulted.
        for (const p of [people.viewer, people.stranger]) {
          const res = await send(p.key);
          if (res.statusCode === 401 || res.headers['x-error-code'] === 'CP_ERR_ROLE')
            problems.push(`${name} (no domain) as a full key: ${res.statusCode} ${res.body}`);
        }
        continue;
      }

      // A domain the caller cannot see: 404 (400 when the body is refused before the domain is read).
      if (!(path === '/domains/{domain}' && method === 'DELETE')) {
        const res = await send(people.stranger.key);
        if (![400, 404].includes(res.statusCode) || res.headers['x-error-code'] === 'CP_ERR_ROLE')
          problems.push(`${name} as a non-member: ${res.statusCode} ${res.body}`);
      }
      // Each role, least privileged first (a write that succeeds must not pre-empt the next role's check); the
      // owner's DELETE of the domain is not sent.
      const answers: Array<[Role, number, string | undefined, string]> = [];
      for (const role of MEMBER_ROLES) {
        if (role === 'owner' && path === '/domains/{domain}' && method === 'DELETE') continue;
        const res = await send(people[role].key);
        answers.push([role, res.statusCode, res.headers['x-error-code'] as string | undefined, res.body]);
      }
      const refused = answers.filter(([, , code]) => code === 'CP_ERR_ROLE');
      const permission =
        refused.length > 0 ? (/lacks the (\S+) permission/.exec(refused[0]![3])?.[1] as Permission) : undefined;
      if (permission) {
        if (!PERMISSIONS.includes(permission)) problems.push(`${name}: names an unknown permission ${permission}`);
        named.set(name, permission);
        // Exactly the roles without the permission are refused it, whatever else their answer is.
        for (const [role, status, code, resBody] of answers) {
          const lacks = !hasPermission(role, permission);
          if (lacks !== (code === 'CP_ERR_ROLE'))
            problems.push(`${name} as ${role} (${permission}): ${status} ${resBody}`);
        }
      } else if (refused.length > 0) {
        // "Any role with write access" (spec: POST ssl/parse): refused exactly to the roles that can only read.
        const readOnlyRole = (role: Role) => PERMISSIONS.every((p) => p === 'domain.view' || !hasPermission(role, p));
        named.set(name, 'write access');
        for (const [role, status, code, resBody] of answers)
          if (readOnlyRole(role) !== (code === 'CP_ERR_ROLE') || !/write access/.test(refused[0]![3]))
            problems.push(`${name} as ${role} (write access): ${status} ${resBody}`);
      } else if (method !== 'GET') {
        // A write no role was refused: it reached no role check (a body refused first) or it is self-service.
        if (answers.every(([, status]) => status === 400)) unreached.push(name);
        else if (!SELF_SERVICE.has(name))
          problems.push(`${name}: a viewer may write (${answers[0]![1]} ${answers[0]![3]})`);
      } else {
        named.set(name, 'domain.view');
        for (const [role, status, , resBody] of answers)
          if (status === 403) problems.push(`${name} as ${role}: 403 ${resBody}`);
      }
    }
  }

  // The money-moving and other denied surfaces, whether a route serves them or not: 403 for every key.
  for (const [method, template] of DENIED) {
    const url = template.replace('{domain}', domain);
    for (const key of [...Object.values(people).map((p) => p.key), ...Object.values(readOnly)]) {
      const res = await cp.call(key, method, url, method === 'POST' ? {} : undefined);
      if (res.statusCode !== 403) problems.push(`${method} ${template}: ${res.statusCode} for a key`);
    }
  }

  t.diagnostic(`${checked} operations checked; ${named.size} with a role check observed`);
  assert.deepEqual(problems, []);
  assert.deepEqual(unreached, [], 'writes whose generated request is refused before the role check');
  assert.ok(checked > 100, `${checked} operations`);
  // The spec's named permissions land where the spec puts them.
  assert.equal(named.get('PUT /domains/{domain}'), 'domain.settings');
  assert.equal(named.get('DELETE /domains/{domain}'), 'domain.delete');
  assert.equal(named.get('PUT /domains/{domain}/billing-member'), 'billing.manage');
  assert.equal(named.get('POST /domains/{domain}/records/'), 'records.edit');
  assert.equal(named.get('POST /domains/{domain}/ssl/issue'), 'ssl.manage');
  assert.equal(named.get('POST /domains/{domain}/invitations'), 'members.manage');
  assert.equal(named.get('GET /domains/{domain}/members'), 'domain.view');
  assert.equal(named.get('POST /domains/{domain}/ssl/parse'), 'write access');
});
