// The OpenAPI document: 3.1.0, interface version 1.0.0, both security schemes, every public route with its schemas.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestControlPlane } from '../helpers/control-plane.js';
import { ERRORS, type ApiErrorCode } from '../../control-plane/src/errors.js';

interface Operation {
  requestBody?: { content?: Record<string, { schema?: unknown }> };
  responses?: Record<string, { content?: Record<string, { schema?: unknown }> }>;
  security?: unknown[];
}
interface Doc {
  openapi: string;
  info: { version: string; title: string };
  servers?: Array<{ url: string }>;
  components: { securitySchemes: Record<string, Record<string, string>> };
  security: Array<Record<string, string[]>>;
  paths: Record<string, Record<string, Operation>>;
}

test('GET /openapi.json: generated from the route schemas; responses serialized through them', async (t) => {
  const cp = await startTestControlPlane(t, { PUBLIC_BASE_URL: 'https://api.example.org/' });
  const res = await cp.call(null, 'GET', '/openapi.json');
  assert.equal(res.statusCode, 200, 'served without a key');
  const doc = res.json<Doc>();

  assert.equal(doc.openapi, '3.1.0');
  assert.equal(doc.info.version, '1.0.0');
  assert.deepEqual(doc.servers, [{ url: 'https://api.example.org' }]);
  assert.deepEqual(doc.components.securitySchemes.bearerAuth, {
    type: 'http',
    scheme: 'bearer',
    description: doc.components.securitySchemes.bearerAuth.description,
  });
  assert.equal(doc.components.securitySchemes.apiKeyHeader.type, 'apiKey');
  assert.equal(doc.components.securitySchemes.apiKeyHeader.in, 'header');
  assert.equal(doc.components.securitySchemes.apiKeyHeader.name, 'X-Api-Key');
  assert.deepEqual(doc.security, [{ bearerAuth: [] }, { apiKeyHeader: [] }]);
  assert.deepEqual(doc.paths['/openapi.json'].get.security, []);

  const routes = cp.app.routeTable.filter((r) => r.method !== 'HEAD');
  assert.ok(routes.length >= 7);
  for (const r of routes) {
    // `:id(^\d+$)`: a parameter with its router pattern is `{id}` in the document.
    const path = r.url.replace(/:([A-Za-z0-9_]+)(\([^/]*\))?/g, '{$1}');
    const op = doc.paths[path]?.[r.method.toLowerCase()];
    if (r.hidden) {
      assert.equal(op, undefined, `${r.method} ${r.url} is hidden`);
      continue;
    }
    assert.ok(op, `${r.method} ${path} is in the document`);
    const ok = Object.entries(op.responses ?? {}).find(([status]) => /^2\d\d$/.test(status));
    assert.ok(
      Object.values(ok?.[1].content ?? {}).some((c) => c.schema),
      `${r.method} ${path} has a success response schema`,
    );
    // Routes without a key (security: []) cannot answer 401; every other route documents it.
    if (op.security?.length === 0) assert.equal(op.responses?.['401'], undefined, `${r.method} ${path} takes no key`);
    else assert.ok(op.responses?.['401'], `${r.method} ${path} documents 401`);
  }
  for (const path of Object.keys(doc.paths)) assert.ok(!path.startsWith('/internal'), `${path} is not public`);

  // Request bodies are documented where routes take them.
  assert.ok(doc.paths['/domains/'].post.requestBody?.content?.['application/json']?.schema);
  assert.ok(doc.paths['/domains/{domain}'].put.requestBody?.content?.['application/json']?.schema);
  // Every schema object is valid JSON (no TypeBox symbols leak) and refs resolve.
  const text = JSON.stringify(doc);
  for (const m of text.matchAll(/"\$ref":"#\/components\/schemas\/([^"]+)"/g)) {
    assert.ok(
      (doc.components as unknown as { schemas: Record<string, unknown> }).schemas[m[1]],
      `$ref ${m[1]} resolves`,
    );
  }

  // Responses are serialized through their schemas: fields outside the schema never leak.
  const u = await cp.user();
  const name = await cp.domain(u.key, 'serialize.example.org', 'external');
  const body = (await cp.call(u.key, 'GET', `/domains/${name}`)).json<Record<string, unknown>>();
  assert.equal(Object.hasOwn(body, 'ownerId'), false);
  assert.equal(Object.hasOwn(body, 'zoneSerial'), false);
  assert.equal(Object.hasOwn(body.ssl_delegation as object, 'canary'), false, 'the delegation canary stays private');
});

test('every error response declares X-Error-Code with the codes of its status, and errors carry one of them (issue 8)', async (t) => {
  const cp = await startTestControlPlane(t);
  const doc = (await cp.call(null, 'GET', '/openapi.json')).json<{
    paths: Record<
      string,
      Record<
        string,
        {
          responses: Record<
            string,
            {
              content?: Record<string, { schema?: { properties?: Record<string, unknown> } }>;
              headers?: Record<string, { required?: boolean; schema: { enum: string[] } }>;
            }
          >;
        }
      >
    >;
  }>();
  let declared = 0;
  for (const [path, ops] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(ops)) {
      for (const [status, response] of Object.entries(op.responses)) {
        const isError = response.content?.['application/json']?.schema?.properties?.error !== undefined;
        const header = response.headers?.['X-Error-Code'];
        if (!isError || !/^[45]/.test(status)) {
          assert.equal(header, undefined, `${method} ${path} ${status}: no error code`);
          continue;
        }
        assert.ok(header?.required, `${method} ${path} ${status} declares X-Error-Code`);
        assert.ok(header.schema.enum.length > 0);
        for (const code of header.schema.enum) assert.equal(ERRORS[code as ApiErrorCode].status, Number(status));
        declared++;
      }
    }
  }
  assert.ok(declared > 50, `${declared} error responses declare the header`);

  // Answers carry a code their status's enum holds.
  const u = await cp.user();
  const name = await cp.domain(u.key, 'codes.example.org');
  const records = `/domains/${name}/records/`;
  const cases: Array<[string, 'GET' | 'POST' | 'DELETE', string, unknown, string | null, number]> = [
    ['/domains/', 'GET', '/domains/', undefined, null, 401],
    ['/domains/{domain}/records/', 'POST', records, { name: 'x', type: 'A', destination: 'nope' }, u.key, 400],
    ['/domains/{domain}', 'GET', '/domains/nothing.example.org', undefined, u.key, 404],
    ['/domains/{domain}/records/{id}', 'DELETE', `${records}999999`, undefined, u.key, 404],
  ];
  await cp.call(u.key, 'POST', records, { name: 'dup', type: 'A', destination: '192.0.2.1' });
  cases.push([
    '/domains/{domain}/records/',
    'POST',
    records,
    { name: 'dup', type: 'A', destination: '192.0.2.1' },
    u.key,
    409,
  ]);
  for (const [path, method, url, body, key, status] of cases) {
    const res = await cp.call(key, method, url, body);
    assert.equal(res.statusCode, status, `${method} ${url}: ${res.body}`);
    const code = res.headers['x-error-code'] as string;
    const header = doc.paths[path]![method.toLowerCase()]!.responses[String(status)]!.headers!['X-Error-Code']!;
    assert.ok(header.schema.enum.includes(code), `${method} ${url}: ${code} is declared for ${status}`);
  }
});

test('links let a stateful client chain operations: domain → records → rule, and change → read → delete (issue 8)', async (t) => {
  const cp = await startTestControlPlane(t);
  type Link = { operationRef: string; parameters: Record<string, string>; requestBody?: unknown };
  const doc = (await cp.call(null, 'GET', '/openapi.json')).json<{
    paths: Record<string, Record<string, { responses: Record<string, { links?: Record<string, Link> }> }>>;
  }>();
  const links = (path: string, method: string) =>
    Object.values(doc.paths[path]![method]!.responses['200']!.links ?? {});
  const to = (path: string, method: string) => `#/paths/${path.replace(/~/g, '~0').replace(/\//g, '~1')}/${method}`;
  const find = (from: Link[], path: string, method: string) => from.find((l) => l.operationRef === to(path, method));
  // Every link points at an operation of the document.
  for (const [path, ops] of Object.entries(doc.paths))
    for (const method of Object.keys(ops))
      for (const link of links(path, method)) {
        const [, target, targetMethod] = /^#\/paths\/(.+)\/([a-z]+)$/.exec(link.operationRef)!;
        const targetPath = target!.replace(/~1/g, '/').replace(/~0/g, '~');
        assert.ok(doc.paths[targetPath]?.[targetMethod!], `${method} ${path} → ${link.operationRef}`);
        for (const p of targetPath.match(/\{[^}]+\}/g) ?? [])
          assert.ok(link.parameters[p.slice(1, -1)], `${method} ${path} → ${targetPath} fills ${p}`);
      }
  assert.deepEqual(find(links('/domains/', 'post'), '/domains/{domain}/records/', 'post')?.parameters, {
    domain: '$response.body#/name',
  });
  const ruleFromRecord = find(links('/domains/{domain}/records/', 'post'), '/domains/{domain}/rules/captcha/', 'post');
  assert.deepEqual(ruleFromRecord?.requestBody, { record_ids: ['$response.body#/id'] });
  assert.deepEqual(
    find(links('/domains/{domain}/records/', 'post'), '/domains/{domain}/records/{id}', 'put')?.parameters,
    {
      id: '$response.body#/id',
      domain: '$request.path.domain',
    },
  );
  const rule = '/domains/{domain}/rules/captcha/{ruleId}';
  const same = { domain: '$request.path.domain', ruleId: '$request.path.ruleId' };
  assert.deepEqual(find(links(rule, 'put'), rule, 'delete')?.parameters, same);
  assert.deepEqual(find(links(rule, 'delete'), rule, 'get')?.parameters, same, 'delete → read (404 after)');
  assert.deepEqual(find(links(`${rule}/enabled`, 'patch'), rule, 'get')?.parameters, same);
  assert.ok(find(links('/domains/{domain}/records/{id}', 'put'), '/domains/{domain}/records/{id}', 'delete'));
  assert.ok(find(links('/domains/{domain}', 'put'), '/domains/{domain}', 'get'));
  assert.equal(links('/domains/{domain}', 'delete').length, 0, 'the fuzzer recreates its domain after a DELETE');
  // A DELETE of a setting below the domain answers its GET with the setting off (200), not 404: no links to it.
  assert.ok(find(links('/domains/{domain}/developer-mode', 'post'), '/domains/{domain}/analytics-tag', 'get'));
  assert.equal(
    find(links('/domains/{domain}/developer-mode', 'post'), '/domains/{domain}/analytics-tag', 'delete'),
    undefined,
  );
  assert.equal(find(links('/domains/', 'post'), '/domains/{domain}/analytics-tag', 'delete'), undefined);
  assert.equal(links('/domains/{domain}/analytics-tag', 'delete').length, 0);
});

test('GET /docs: the API reference page, without a key, with every asset served here (issue 9)', async (t) => {
  const cp = await startTestControlPlane(t);
  const page = await cp.call(null, 'GET', '/docs');
  assert.equal(page.statusCode, 200);
  assert.match(String(page.headers['content-type']), /^text\/html/);
  assert.match(String(page.headers['content-security-policy']), /script-src 'self';/);

  // Every stylesheet, icon and script the page loads is a relative URL answered by this process, without a key.
  const refs = [...page.body.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
  assert.ok(refs.length >= 4, refs.join(' '));
  const base = 'http://api.test/docs';
  const loaded = new Map<string, string>();
  for (const ref of refs) {
    assert.doesNotMatch(ref, /^(?:[a-z]+:)?\/\//i, `${ref} is served locally, not from a CDN`);
    const url = new URL(ref, base);
    assert.equal(url.origin, 'http://api.test');
    const res = await cp.call(null, 'GET', url.pathname);
    assert.equal(res.statusCode, 200, ref);
    assert.ok(res.rawPayload.length > 0, ref);
    loaded.set(url.pathname, String(res.headers['content-type']));
  }
  assert.match(loaded.get('/docs/swagger-ui-bundle.js') ?? '', /^application\/javascript/);
  assert.match(loaded.get('/docs/swagger-ui.css') ?? '', /^text\/css/);

  // The initializer starts Swagger UI on the document this API serves; run it with a stand-in for the bundle.
  const init = await cp.call(null, 'GET', '/docs/initializer.js');
  let config: { url?: string; validatorUrl?: unknown } = {};
  const window: { onload?: () => void; ui?: unknown } = {};
  const SwaggerUIBundle = Object.assign((c: typeof config) => ((config = c), {}), { presets: { apis: {} } });
  new Function('window', 'SwaggerUIBundle', init.body)(window, SwaggerUIBundle);
  window.onload?.();
  const specUrl = new URL(config.url ?? '', base);
  assert.equal(specUrl.pathname, '/openapi.json');
  assert.equal(config.validatorUrl, null, 'the document is never sent to an online validator');
  const spec = await cp.call(null, 'GET', specUrl.pathname);
  assert.equal(spec.json<Doc>().openapi, '3.1.0');

  // Not part of the document; nothing else is reachable under /docs/.
  assert.equal(spec.json<Doc>().paths['/docs'], undefined);
  assert.equal((await cp.call(null, 'GET', '/docs/package.json')).statusCode, 404);
  assert.notEqual((await cp.call(null, 'GET', '/docs/%2e%2e/package.json')).statusCode, 200);
});

test('the OpenAPI document states every constraint: closed request objects, bounded arrays and ids (issue 8)', async (t) => {
  const cp = await startTestControlPlane(t);
  const doc = (await cp.call(null, 'GET', '/openapi.json')).json<Doc>();
  const components = (doc.components as unknown as { schemas?: Record<string, unknown> }).schemas ?? {};
  const problems: string[] = [];
  const seen = new Set<unknown>();
  /** Walks a request schema: every object is closed, every array has maxItems. */
  const walk = (schema: unknown, where: string): void => {
    if (!schema || typeof schema !== 'object' || seen.has(schema)) return;
    seen.add(schema);
    const s = schema as Record<string, unknown>;
    if (typeof s.$ref === 'string') return walk(components[s.$ref.split('/').pop()!], where);
    if (s.type === 'object' && s.additionalProperties !== false) problems.push(`${where}: object is not closed`);
    if (s.type === 'array' && typeof s.maxItems !== 'number') problems.push(`${where}: array without maxItems`);
    for (const [key, value] of Object.entries(s.properties ?? {})) walk(value, `${where}.${key}`);
    if (s.items) walk(s.items, `${where}[]`);
    for (const k of ['anyOf', 'oneOf', 'allOf'] as const)
      for (const [i, sub] of ((s[k] as unknown[]) ?? []).entries()) walk(sub, `${where}<${k}${i}>`);
  };
  for (const [path, ops] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(ops)) {
      const name = `${method.toUpperCase()} ${path}`;
      seen.clear();
      walk(op.requestBody?.content?.['application/json']?.schema, `${name} body`);
      const params = (op as { parameters?: Array<{ name: string; in: string; schema: Record<string, unknown> }> })
        .parameters;
      for (const p of params ?? []) {
        if (p.in !== 'path' || p.name === 'domain') continue;
        const s = p.schema;
        // A token (an invitation link's) is bounded by its exact pattern and length instead.
        if (s.type === 'string' && typeof s.pattern === 'string' && typeof s.maxLength === 'number') continue;
        // A closed set of names (a gateway id of the catalogue) is as bounded as an id.
        if (s.type === 'string' && Array.isArray(s.enum) && s.enum.length > 0) continue;
        if (s.type !== 'integer' || s.minimum !== 1 || s.maximum !== 2147483647)
          problems.push(`${name} {${p.name}}: not an integer from 1 to 2147483647`);
      }
    }
  }
  assert.deepEqual(problems, []);
});
