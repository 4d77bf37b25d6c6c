// The cache rule type and the edge cache: hits, keys, origin headers, developer mode, purge generation, stale on error, cap.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { proxiedRecord, rule, send, snapshot, startStubOrigin, startTestEdge } from '../testing/harness.js';

test('cache through the edge', async (t) => {
  let down = false;
  let counter = 0;
  const origin = await startStubOrigin('c', (req, res) => {
    if (down) {
      res.statusCode = 500;
      res.end('broken');
      return;
    }
    counter++;
    if (req.url?.startsWith('/nostore')) res.setHeader('cache-control', 'no-store');
    if (req.url?.startsWith('/maxage')) res.setHeader('cache-control', 'public, max-age=60');
    if (req.url?.startsWith('/big')) {
      res.end(Buffer.alloc(700 * 1024, 97));
      return;
    }
    res.end(`n=${counter} ${req.url}`);
  });
  t.after(() => origin.close());
  const rec = proxiedRecord('www', origin.port);
  const rules = [
    rule('cache', { path_includes: ['/bypass/*'], action: 'bypass' }),
    rule('cache', { path_includes: ['/ignoreq/*'], edge_ttl: 60, query: 'ignore' }),
    rule('cache', { path_includes: ['/short/*'], edge_ttl: 1, stale_on_error: true }),
    rule('cache', { path_includes: ['/nostore/*', '/maxage/*', '/origin/*'] }),
    rule('cache', { path_includes: ['/*'], edge_ttl: 60, browser_ttl: 30 }),
  ];
  const snap = (settings = {}) => snapshot('cache.example.org', { records: [rec], rules, settings });
  const edge = await startTestEdge(t, [snap()]);
  const port = edge.node.server.httpPort;
  const get = (path: string) => send(port, 'www.cache.example.org', path);

  await t.test('first request is a MISS, the next one a HIT without asking the origin', async () => {
    const a = await get('/page');
    assert.equal(a.headers['x-cache-status'], 'MISS');
    assert.equal(a.headers['cache-control'], 'max-age=30', 'browser_ttl sets Cache-Control');
    const b = await get('/page');
    assert.equal(b.headers['x-cache-status'], 'HIT');
    assert.equal(b.body, a.body);
    assert.equal(b.headers['cache-control'], 'max-age=30');
  });

  await t.test('the query is part of the key unless the rule ignores it', async () => {
    const a = await get('/page?v=2');
    assert.equal(a.headers['x-cache-status'], 'MISS');
    await get('/ignoreq/x?a=1');
    const c = await get('/ignoreq/x?a=2');
    assert.equal(c.headers['x-cache-status'], 'HIT');
  });

  await t.test('bypass rules never store', async () => {
    await get('/bypass/x');
    const b = await get('/bypass/x');
    assert.equal(b.headers['x-cache-status'], 'BYPASS');
    assert.notEqual((await get('/bypass/x')).body, b.body);
  });

  await t.test('origin no-store is respected; origin max-age is used when the rule sets no TTL', async () => {
    await get('/nostore/x');
    assert.equal((await get('/nostore/x')).headers['x-cache-status'], 'MISS');
    await get('/origin/x');
    assert.equal((await get('/origin/x')).headers['x-cache-status'], 'MISS', 'nothing says how long: not stored');
    await get('/maxage/x');
    assert.equal((await get('/maxage/x')).headers['x-cache-status'], 'HIT');
  });

  await t.test('large bodies stream through and are cached whole', async () => {
    const a = await get('/big');
    assert.equal(a.body.length, 700 * 1024);
    const b = await get('/big');
    assert.equal(b.headers['x-cache-status'], 'HIT');
    assert.equal(b.body.length, 700 * 1024);
  });

  await t.test('stale entries are served when the origin fails', async () => {
    const a = await get('/short/x');
    assert.equal(a.headers['x-cache-status'], 'MISS');
    await new Promise((r) => setTimeout(r, 1100));
    down = true;
    const b = await get('/short/x');
    down = false;
    assert.equal(b.status, 200);
    assert.equal(b.headers['x-cache-status'], 'STALE');
    assert.equal(b.body, a.body);
  });

  await t.test('developer mode bypasses reads and writes', async () => {
    edge.apply(snap({ developerMode: true, developerModeExpiresAtMs: Date.now() + 60_000 }));
    const a = await get('/page');
    assert.equal(a.headers['x-cache-status'], 'BYPASS');
    edge.apply(snap());
    assert.equal(
      (await get('/page')).headers['x-cache-status'],
      'HIT',
      'entries stored before developer mode are still there',
    );
  });

  await t.test('a new purge generation drops the domain cache', async () => {
    edge.apply(snap({ cachePurgeGeneration: 1 }));
    assert.equal((await get('/page')).headers['x-cache-status'], 'MISS');
    assert.equal((await get('/page')).headers['x-cache-status'], 'HIT');
  });

  await t.test('a selective purge drops only the entries under its prefixes, once', async () => {
    await get('/maxage/x');
    assert.equal((await get('/maxage/x')).headers['x-cache-status'], 'HIT');
    assert.equal((await get('/page')).headers['x-cache-status'], 'HIT');
    const purges = [{ id: 7, prefixes: ['www.cache.example.org/page'] }];
    edge.apply(snap({ cachePurgeGeneration: 1, cachePurges: purges }));
    assert.equal((await get('/page')).headers['x-cache-status'], 'MISS');
    assert.equal((await get('/maxage/x')).headers['x-cache-status'], 'HIT');
    // The same purge in the next snapshot is not applied again.
    edge.apply(snap({ cachePurgeGeneration: 1, cachePurges: purges }));
    assert.equal((await get('/page')).headers['x-cache-status'], 'HIT');
  });

  await t.test('the cache stays within cache_cap_mb', async () => {
    edge.apply(snap({ cachePurgeGeneration: 2, cacheCapMb: 1 }));
    for (let i = 0; i < 4; i++) await get(`/big?i=${i}`);
    const stats = edge.node.cache.stats('cache.example.org');
    assert.ok(stats.bytes <= 1024 * 1024, `cache holds ${stats.bytes} bytes`);
    assert.equal(stats.entries, 1);
    assert.equal((await get('/big?i=3')).headers['x-cache-status'], 'HIT', 'the most recent entry is kept');
  });
});
