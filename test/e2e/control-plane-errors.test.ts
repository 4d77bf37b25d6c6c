// The spec's Errors section and global conventions: every error is { "error": "<text>" }, with the exact statuses.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestControlPlane } from '../helpers/control-plane.js';

test('errors: unknown routes, trailing slashes, malformed JSON, content type, body size, validation, 5xx', async (t) => {
  const cp = await startTestControlPlane(t, { API_BODY_LIMIT_BYTES: '4096' });
  cp.app.get('/test-only/boom', async () => {
    throw new Error('secret database detail');
  });
  cp.app.get('/test-only/public', { config: { public: true } }, async () => ({ ok: true }));
  const u = await cp.user();
  const domain = await cp.domain(u.key, 'errors.example.org');

  const expectError = async (
    res: { statusCode: number; json(): unknown; headers: Record<string, unknown> },
    status: number,
    error: string | RegExp,
  ) => {
    assert.equal(res.statusCode, status);
    assert.match(String(res.headers['content-type']), /^application\/json/);
    const body = res.json() as { error: unknown };
    assert.equal(typeof body.error, 'string');
    if (typeof error === 'string') assert.equal(body.error, error);
    else assert.match(body.error as string, error);
  };

  await t.test('unknown routes are 404 with a JSON error', async () => {
    await expectError(await cp.call(u.key, 'GET', '/no-such-thing'), 404, 'route not found: GET /no-such-thing');
  });

  await t.test(
    'a path that exists with other methods is 405 with Allow (found by schemathesis: it was 404)',
    async () => {
      const patch = await cp.call(u.key, 'PATCH', '/domains/');
      await expectError(patch, 405, 'method not allowed: PATCH /domains/ (allowed: GET, HEAD, POST)');
      assert.equal(patch.headers.allow, 'GET, HEAD, POST');
      const trace = await cp.app.inject({
        method: 'TRACE',
        url: `/domains/${domain}/records/export?x=1`,
        headers: { authorization: `Bearer ${u.key}` },
      });
      await expectError(trace, 405, `method not allowed: TRACE /domains/${domain}/records/export (allowed: GET, HEAD)`);
      assert.equal(trace.headers.allow, 'GET, HEAD');
      // An empty path parameter is no route: PUT /domains/ is not PUT /domains/{domain} with the name "" (found by
      // schemathesis: it answered the update's 400 `unknown field name`).
      const put = await cp.call(u.key, 'PUT', '/domains/', { name: 'x.example.org' });
      await expectError(put, 405, 'method not allowed: PUT /domains/ (allowed: GET, HEAD, POST)');
      await expectError(
        await cp.call(u.key, 'GET', '/domains//records/'),
        404,
        'route not found: GET /domains//records/',
      );
      // An id segment is digits: `/records/batch-update` is not the record `batch-update` (found by schemathesis: PUT
      // answered the record update's 400 `id must be integer`).
      await expectError(
        await cp.call(u.key, 'PUT', `/domains/${domain}/records/batch-update`, {}),
        405,
        `method not allowed: PUT /domains/${domain}/records/batch-update (allowed: POST)`,
      );
      await expectError(
        await cp.call(u.key, 'PUT', `/domains/${domain}/rules/cache/reorder`, {}),
        405,
        `method not allowed: PUT /domains/${domain}/rules/cache/reorder (allowed: PATCH)`,
      );
      await expectError(await cp.call(u.key, 'DELETE', `/domains/${domain}/records/x1`), 404, /^route not found/);
      // QUERY (RFC 10008) without a Content-Type is refused only where QUERY is served: here it is 405 too.
      const query = await cp.app.inject({
        method: 'QUERY',
        url: '/account/whoami',
        headers: { authorization: `Bearer ${u.key}` },
      });
      await expectError(query, 405, 'method not allowed: QUERY /account/whoami (allowed: GET, HEAD)');
      // A path served without a key answers its 405 without a key too (found by schemathesis: TRACE /healthz was 401).
      for (const path of ['/openapi.json', '/healthz']) {
        const res = await cp.app.inject({ method: 'TRACE', url: path });
        await expectError(res, 405, `method not allowed: TRACE ${path} (allowed: GET, HEAD)`);
      }
      // Without a key the request is refused before any route is looked up.
      assert.equal((await cp.app.inject({ method: 'TRACE', url: '/account/whoami' })).statusCode, 401);
    },
  );

  await t.test('trailing slashes are significant: /domains is not /domains/', async () => {
    // The 404 names the route that differs only by its trailing slash (issue 9).
    await expectError(
      await cp.call(u.key, 'GET', '/domains'),
      404,
      'route not found: GET /domains (trailing slashes are significant: did you mean GET /domains/?)',
    );
    await expectError(
      await cp.call(u.key, 'GET', `/domains/${domain}/records?x=1`),
      404,
      `route not found: GET /domains/${domain}/records (trailing slashes are significant: did you mean GET /domains/${domain}/records/?)`,
    );
    await expectError(
      await cp.call(u.key, 'GET', '/domains/ns-sets/'),
      404,
      'route not found: GET /domains/ns-sets/ (trailing slashes are significant: did you mean GET /domains/ns-sets?)',
    );
    await expectError(await cp.call(u.key, 'POST', '/domains', { name: 'x.example.org' }), 404, /^route not found/);
    await expectError(await cp.call(u.key, 'GET', `/domains/${domain}/`), 404, /^route not found/);
    assert.equal((await cp.call(u.key, 'GET', '/domains/')).statusCode, 200);
  });

  await t.test('malformed JSON is 400', async () => {
    await expectError(
      await cp.call(u.key, 'POST', '/domains/', '{"name": "x.example.org"'),
      400,
      'malformed JSON body',
    );
    await expectError(await cp.call(u.key, 'PUT', `/domains/${domain}`, 'not json'), 400, 'malformed JSON body');
    await expectError(await cp.call(u.key, 'POST', '/domains/', ''), 400, 'body must be object');
    await expectError(
      await cp.call(u.key, 'POST', '/domains/', '{"name": "x.example.org"}{'),
      400,
      'malformed JSON body',
    );
    await expectError(
      await cp.call(u.key, 'POST', '/domains/', '{"__proto__": {"x": 1}, "name": "p.example.org"}'),
      400,
      'malformed JSON body',
    );
  });

  await t.test('an empty JSON body is no body: DELETE with Content-Type application/json works', async () => {
    const name = await cp.domain(u.key, 'empty-body.example.org');
    const res = await cp.call(u.key, 'DELETE', `/domains/${name}`, '');
    assert.equal(res.statusCode, 200);
  });

  await t.test('a body that is not application/json is 415', async () => {
    for (const type of [
      'text/plain',
      'application/x-www-form-urlencoded',
      'application/xml',
      'multipart/form-data; boundary=x',
    ]) {
      await expectError(
        await cp.call(u.key, 'POST', '/domains/', 'name=x.example.org', { 'content-type': type }),
        415,
        'unsupported content type: request bodies must be application/json',
      );
    }
  });

  await t.test('an oversized body is 413', async () => {
    const big = JSON.stringify({ name: `${'a'.repeat(5000)}.example.org` });
    await expectError(await cp.call(u.key, 'POST', '/domains/', big), 413, 'request body too large (limit 4096 bytes)');
  });

  await t.test('validation errors are 400 and name the field', async () => {
    const cases: Array<[string, string, unknown, string]> = [
      ['POST', '/domains/', {}, 'name is required'],
      ['POST', '/domains/', [], 'body must be object'],
      [
        'POST',
        '/domains/',
        { name: 'v.example.org', dns_mode: 'hosted' },
        'dns_mode must be one of: managed, external',
      ],
      ['POST', '/domains/', { name: 42 }, 'name must be string'],
      ['PUT', `/domains/${domain}`, { cache_l2_ttl_days: 8 }, 'cache_l2_ttl_days must be between 1 and 7'],
      ['PUT', `/domains/${domain}`, { cache_l2_ttl_days: 0 }, 'cache_l2_ttl_days must be between 1 and 7'],
      ['PUT', `/domains/${domain}`, { cache_l2_ttl_days: 2.5 }, 'cache_l2_ttl_days must be integer'],
      ['PUT', `/domains/${domain}`, { cache_l2_ttl_days: 'soon' }, 'cache_l2_ttl_days must be integer'],
      [
        'PUT',
        `/domains/${domain}`,
        { origin_protocol: 'gopher' },
        'origin_protocol must be one of: auto, http1, http2, http3',
      ],
    ];
    for (const [method, url, body, error] of cases) {
      await expectError(await cp.call(u.key, method as 'POST', url, body), 400, error);
    }
  });

  await t.test('routes marked config.public (SSO-style, own credential) take no API key', async () => {
    const res = await cp.call(null, 'GET', '/test-only/public');
    assert.equal(res.statusCode, 200);
    const denied = await cp.call(null, 'GET', '/domains/');
    assert.equal(denied.statusCode, 401);
    assert.equal(denied.headers['www-authenticate'], 'Bearer realm="api"');
  });

  await t.test('a 5xx answers a generic text and never leaks the cause', async () => {
    const res = await cp.call(u.key, 'GET', '/test-only/boom');
    await expectError(res, 500, 'internal server error');
    assert.ok(!res.body.includes('secret'));
  });
});
