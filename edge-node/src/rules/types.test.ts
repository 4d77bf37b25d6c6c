// Each rule type with an engine, through a running edge to stub origins.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { proxiedRecord, rule, send, snapshot, startStubOrigin, startTestEdge } from '../testing/harness.js';
import { hashPassword } from '@platform/shared/match';

test('rule types through the edge', async (t) => {
  const main = await startStubOrigin('main', (req, res) => {
    if (req.url?.startsWith('/fail')) {
      res.statusCode = 503;
      res.end('origin failure');
      return;
    }
    res.setHeader('x-origin-header', 'yes');
    res.end(
      `main ${req.url} host=${req.headers.host} x-add=${req.headers['x-add'] ?? '-'} cookie=${req.headers.cookie ?? '-'}`,
    );
  });
  const alt = await startStubOrigin('alt', (req, res) => res.end(`alt ${req.url} host=${req.headers.host}`));
  const p1 = await startStubOrigin('p1');
  const p2 = await startStubOrigin('p2');
  for (const o of [main, alt, p1, p2]) t.after(() => o.close());
  const www = proxiedRecord('www', main.port);
  const deadPort = 1; // nothing listens on port 1
  const edge = await startTestEdge(t, [
    snapshot('types.example.org', {
      records: [www],
      rules: [
        rule('drop', { path_includes: ['/blocked'], status_code: 451, body: 'unavailable here' }),
        rule('drop', { path_includes: ['/cut'], action: 'close' }),
        rule('basic_auth', {
          path_includes: ['/private/*'],
          realm: 'Staff',
          users: [{ username: 'alice', password_hash: await hashPassword('wonderland') }],
        }),
        rule('redirect', { path_includes: ['/old/*'], target: 'https://new.example.org/$1', status_code: 301 }),
        rule('redirect', {
          path_match_type: 'regex',
          path_includes: ['^/blog/(\\d+)/(\\w+)$'],
          target: '/posts/$2?id=$1',
          status_code: 308,
          keep_query: true,
        }),
        rule('rewrite', { path_includes: ['/r/*'], path: '/internal/$1', query: 'from=edge', append_query: true }),
        rule('origin_route', {
          path_includes: ['/alt/*'],
          address: '127.0.0.1',
          port: alt.port,
          host_header: 'alt.types.example.org',
        }),
        rule('origin_pool', {
          path_includes: ['/pool/*'],
          origins: [
            { address: '127.0.0.1', port: p1.port, weight: 1 },
            { address: '127.0.0.1', port: p2.port, weight: 3 },
          ],
        }),
        rule('origin_pool', {
          path_includes: ['/failover/*'],
          method: 'failover',
          origins: [
            { address: '127.0.0.1', port: deadPort },
            { address: '127.0.0.1', port: p2.port },
          ],
        }),
        rule('header', {
          request_headers: [
            { op: 'set', name: 'X-Add', value: 'added' },
            { op: 'remove', name: 'Cookie' },
          ],
          response_headers: [
            { op: 'add', name: 'X-Served-By', value: 'edge' },
            { op: 'remove', name: 'X-Origin-Header' },
          ],
        }),
        rule('error_page', { statuses: ['500-599'], body: '<h1>We will be back</h1>' }),
      ],
    }),
  ]);
  const port = edge.node.server.httpPort;
  const get = (path: string, headers: Record<string, string> = {}) =>
    send(port, 'www.types.example.org', path, { headers });

  await t.test('drop answers its status and body', async () => {
    const r = await get('/blocked');
    assert.equal(r.status, 451);
    assert.equal(r.body, 'unavailable here');
    assert.equal(
      main.seen.some((s) => s.url === '/blocked'),
      false,
    );
  });

  await t.test('drop with action close closes the connection without an answer', async () => {
    await assert.rejects(get('/cut'), /socket hang up|ECONNRESET/);
  });

  await t.test('basic_auth challenges, rejects wrong passwords, and lets users through', async () => {
    const none = await get('/private/x');
    assert.equal(none.status, 401);
    assert.match(String(none.headers['www-authenticate']), /Basic realm="Staff"/);
    const wrong = await get('/private/x', { authorization: `Basic ${Buffer.from('alice:nope').toString('base64')}` });
    assert.equal(wrong.status, 401);
    const ok = await get('/private/x', {
      authorization: `Basic ${Buffer.from('alice:wonderland').toString('base64')}`,
    });
    assert.equal(ok.status, 200);
    assert.match(ok.body, /^main \/private\/x/);
  });

  await t.test('redirect with wildcard captures and the query kept', async () => {
    const r = await get('/old/a/b?q=1');
    assert.equal(r.status, 301);
    assert.equal(r.headers.location, 'https://new.example.org/a/b?q=1');
  });

  await t.test('redirect with regex captures, 308, query appended after the target query', async () => {
    const r = await get('/blog/42/hello?utm=x');
    assert.equal(r.status, 308);
    assert.equal(r.headers.location, '/posts/hello?id=42&utm=x');
  });

  await t.test('rewrite changes path and query towards the origin only', async () => {
    const r = await get('/r/a/b?x=1');
    assert.equal(r.status, 200);
    assert.match(r.body, /^main \/internal\/a\/b\?x=1&from=edge /);
  });

  await t.test('origin_route sends matching paths to another origin with its host header', async () => {
    const r = await get('/alt/page');
    assert.equal(r.body, 'alt /alt/page host=alt.types.example.org');
  });

  await t.test('origin_pool spreads by weight', async () => {
    const before = [p1.seen.length, p2.seen.length];
    for (let i = 0; i < 40; i++) assert.equal((await get(`/pool/${i}`)).status, 200);
    const n1 = p1.seen.length - before[0];
    const n2 = p2.seen.length - before[1];
    assert.equal(n1 + n2, 40);
    assert.ok(n2 > n1, `weight 3 origin got ${n2}, weight 1 got ${n1}`);
  });

  await t.test('origin_pool fails over when an origin refuses connections', async () => {
    const r = await get('/failover/x');
    assert.equal(r.status, 200);
    assert.equal(r.body, 'origin p2 /failover/x');
  });

  await t.test('header rules set/remove request headers and add/remove response headers', async () => {
    const r = await get('/h', { cookie: 'secret=1' });
    assert.match(r.body, /x-add=added cookie=-$/);
    assert.equal(r.headers['x-served-by'], 'edge');
    assert.equal(r.headers['x-origin-header'], undefined);
  });

  await t.test('error_page replaces origin 5xx bodies and keeps the status', async () => {
    const r = await get('/fail');
    assert.equal(r.status, 503);
    assert.equal(r.body, '<h1>We will be back</h1>');
    assert.match(String(r.headers['content-type']), /text\/html/);
  });

  await t.test('error_page also covers edge errors (origin unreachable)', async () => {
    edge.apply(
      snapshot('types.example.org', {
        records: [www, proxiedRecord('down', deadPort)],
        rules: [rule('error_page', { statuses: ['502'], body: 'edge says sorry', content_type: 'text/plain' })],
      }),
    );
    const r = await send(port, 'down.types.example.org', '/');
    assert.equal(r.status, 502);
    assert.equal(r.body, 'edge says sorry');
  });
});
