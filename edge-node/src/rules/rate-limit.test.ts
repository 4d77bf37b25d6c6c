// rate_limit through a running edge (every key, block and captcha actions, enforce and dry run, another tenant
// served), and the counter table's bounds under many keys.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parsePeerAddress } from '@platform/shared/match';
import { RequestContext } from '../context.js';
import { proxiedRecord, rule, send, snapshot, startStubOrigin, startTestEdge } from '../testing/harness.js';
import { clientAddress, compileRateLimit, RateLimitTable } from './rate-limit.js';

test('rate_limit through the edge', async (t) => {
  const origin = await startStubOrigin('main');
  t.after(() => origin.close());
  const limited = snapshot('limits.example.org', {
    records: [proxiedRecord('www', origin.port)],
    rules: [
      rule('rate_limit', { path_includes: ['/api/*'], requests: 3, period_s: 60, block_s: 30 }),
      rule('rate_limit', { path_includes: ['/p/*'], requests: 1, period_s: 60, key: 'ip_path' }),
      rule('rate_limit', {
        path_includes: ['/k/*'],
        requests: 2,
        period_s: 60,
        key: 'header',
        key_header: 'X-Api-Key',
      }),
      rule('rate_limit', { path_includes: ['/c/*'], requests: 1, period_s: 60, action: 'captcha' }),
      rule('rate_limit', { path_includes: ['/dry/*'], requests: 1, period_s: 60, action_mode: 'dry_run' }),
      rule('rate_limit', {
        path_includes: ['/dryc/*'],
        requests: 1,
        period_s: 60,
        action: 'captcha',
        action_mode: 'dry_run',
      }),
    ],
  });
  const other = snapshot('other.example.net', { records: [proxiedRecord('www', origin.port)] });
  const edge = await startTestEdge(t, [limited, other]);
  const port = edge.node.server.httpPort;
  const host = 'www.limits.example.org';
  const [ipRule, pathRule, headerRule, captchaRule, dryRule, dryCaptchaRule] = limited.ruleSet.rules.map((r) => r.id);

  await t.test(
    'key ip: block with 429 and Retry-After after `requests`, other addresses and tenants pass',
    async () => {
      for (let i = 0; i < 3; i++) assert.equal((await send(port, host, `/api/${i}`)).status, 200);
      const over = await send(port, host, '/api/x');
      assert.equal(over.status, 429);
      const wait = Number(over.headers['retry-after']);
      assert.ok(wait >= 1 && wait <= 30, `Retry-After ${wait}`);
      assert.equal((await send(port, host, '/api/y')).status, 429, 'stays limited for block_s');
      assert.equal((await send(port, host, '/api/z', { localAddress: '127.0.0.2' })).status, 200, 'another client');
      assert.equal((await send(port, host, '/other')).status, 200, 'paths outside the rule');
      for (let i = 0; i < 5; i++) assert.equal((await send(port, 'www.other.example.net', '/api/x')).status, 200);
      const log = edge.node.logs.drain().filter((r) => r.status === 429);
      assert.ok(log.length >= 2 && log.every((r) => r.rules.some(([id, , dry]) => id === ipRule && !dry)));
    },
  );

  await t.test('key ip_path: each path has its own count', async () => {
    assert.equal((await send(port, host, '/p/a')).status, 200);
    assert.equal((await send(port, host, '/p/a')).status, 429);
    assert.equal((await send(port, host, '/p/b')).status, 200);
    const log = edge.node.logs.drain();
    assert.ok(log.some((r) => r.status === 429 && r.rules.some(([id]) => id === pathRule)));
  });

  await t.test('key header: each header value has its own count; a missing header is one key', async () => {
    const a = { 'x-api-key': 'alpha' };
    const b = { 'x-api-key': 'beta' };
    for (let i = 0; i < 2; i++) assert.equal((await send(port, host, '/k/1', { headers: a })).status, 200);
    assert.equal((await send(port, host, '/k/1', { headers: a })).status, 429);
    assert.equal((await send(port, host, '/k/1', { headers: b })).status, 200);
    // The same key from another address shares the count (the key is the header alone).
    assert.equal((await send(port, host, '/k/1', { headers: a, localAddress: '127.0.0.3' })).status, 429);
    for (let i = 0; i < 2; i++) assert.equal((await send(port, host, '/k/2')).status, 200);
    assert.equal((await send(port, host, '/k/2')).status, 429);
    assert.ok(edge.node.logs.drain().some((r) => r.rules.some(([id]) => id === headerRule)));
  });

  await t.test('action captcha: over the limit the challenge page is served', async () => {
    assert.equal((await send(port, host, '/c/1')).status, 200);
    const page = await send(port, host, '/c/1');
    assert.equal(page.status, 403);
    assert.equal(page.headers['x-edge-challenge'], 'pow');
    assert.match(page.body, /name="nonce"/);
    assert.ok(edge.node.logs.drain().some((r) => r.status === 403 && r.rules.some(([id]) => id === captchaRule)));
  });

  await t.test('dry run: over the limit the request passes and the log says it would have acted', async () => {
    for (let i = 0; i < 4; i++) assert.equal((await send(port, host, '/dry/1')).status, 200);
    const log = edge.node.logs.drain();
    const dry = log.filter((r) => r.rules.some(([id, , d]) => id === dryRule && d));
    assert.equal(dry.length, 3, 'the three requests over the limit are logged as dry hits');
    // The challenge action in dry run: no page, a dry hit.
    for (let i = 0; i < 3; i++) assert.equal((await send(port, host, '/dryc/1')).status, 200);
    const dryc = edge.node.logs.drain().filter((r) => r.rules.some(([id, , d]) => id === dryCaptchaRule && d));
    assert.equal(dryc.length, 2);
  });

  await t.test('abuse: a huge header key and many rules are served, bounded', async () => {
    const huge = { 'x-api-key': 'k'.repeat(12_000) };
    assert.equal((await send(port, host, '/k/huge', { headers: huge })).status, 200);
    // 300 rate_limit rules matching one path: every one counts, the first enforced one over its limit acts.
    const many = Array.from({ length: 300 }, (_, i) =>
      rule('rate_limit', { path_includes: ['/m/*'], requests: 2 + (i % 7), period_s: 60, priority: i }),
    );
    edge.apply(snapshot('limits.example.org', { records: limited.zone.records, rules: many }));
    assert.equal((await send(port, host, '/m/1')).status, 200);
    assert.equal((await send(port, host, '/m/1')).status, 200);
    const over = await send(port, host, '/m/1');
    assert.equal(over.status, 429);
    assert.ok(edge.node.logs.drain().some((r) => r.rules.some(([id]) => id === many[0].id)));
    assert.equal((await send(port, 'www.other.example.net', '/m/1')).status, 200, 'the other tenant');
  });
});

function ctxFor(peer: string, path = '/', headers: [string, string][] = []): RequestContext {
  return new RequestContext({
    method: 'GET',
    host: 'h.example',
    path,
    query: '',
    headers,
    peer: parsePeerAddress(peer),
    scheme: 'http',
    startedAt: 0,
  });
}

test('the counter table is fixed-size: many keys evict the lightest, a heavy hitter stays limited', () => {
  const table = new RateLimitTable(64);
  const bytes = table.bytes;
  const a = compileRateLimit({ requests: 5, period_s: 60, key: 'ip', block_s: 60 } as never, { id: 1 });
  const now = 1_000_000_000_000;
  const heavy = ctxFor('192.0.2.1');
  for (let i = 0; i < 5; i++) assert.equal(table.check(a, heavy, now + i), 0);
  assert.ok(table.check(a, heavy, now + 6) > 0, 'over the limit');
  // 10,000 one-off clients through a 64-slot table.
  for (let i = 0; i < 10_000; i++)
    table.check(a, ctxFor(`10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`), now + 10);
  assert.equal(table.bytes, bytes);
  assert.ok(table.evictions > 0);
  assert.ok(table.check(a, heavy, now + 20) > 0, 'the limited client kept its slot');
});

test('sliding window: the previous window counts for what still overlaps', () => {
  const table = new RateLimitTable(64);
  const a = compileRateLimit({ requests: 10, period_s: 10, key: 'ip', block_s: 5 } as never, { id: 2 });
  const c = ctxFor('192.0.2.9');
  const t0 = 1_700_000_000_000; // a window boundary (multiple of 10 s)
  for (let i = 0; i < 10; i++) assert.equal(table.check(a, c, t0 + 9_000), 0);
  // 1 s into the next window 90 % of the previous 10 still count: 9 + 1 = 10 allowed, then over.
  assert.equal(table.check(a, c, t0 + 11_000), 0);
  assert.ok(table.check(a, c, t0 + 11_001) > 0);
  // After the penalty and two windows everything is forgotten.
  assert.equal(table.check(a, c, t0 + 40_000), 0);
});

test('rule ids and key parts are part of the key', () => {
  const table = new RateLimitTable(1024);
  const r1 = compileRateLimit({ requests: 1, period_s: 60, key: 'ip_path' } as never, { id: 1 });
  const r2 = compileRateLimit({ requests: 1, period_s: 60, key: 'ip_path' } as never, { id: 2 });
  const now = 1_700_000_000_000;
  assert.equal(table.check(r1, ctxFor('192.0.2.1', '/ab'), now), 0);
  assert.equal(table.check(r2, ctxFor('192.0.2.1', '/ab'), now), 0, 'another rule');
  assert.equal(table.check(r1, ctxFor('192.0.2.1', '/a'), now), 0, 'another path');
  assert.ok(table.check(r1, ctxFor('192.0.2.1', '/ab'), now) > 0);
});

test('IPv6 clients are counted and cleared per /64, IPv4 per address', () => {
  const id = (t: string) => clientAddress(parsePeerAddress(t));
  assert.equal(id('192.0.2.7'), '192.0.2.7');
  assert.equal(id('::ffff:192.0.2.7'), '192.0.2.7');
  assert.equal(id('2001:db8:1:2::1'), id('2001:db8:1:2:ffff:eeee:dddd:cccc'));
  assert.notEqual(id('2001:db8:1:2::1'), id('2001:db8:1:3::1'));
  const table = new RateLimitTable(1024);
  const a = compileRateLimit({ requests: 2, period_s: 60, key: 'ip' } as never, { id: 9 });
  const now = 1_700_000_000_000;
  assert.equal(table.check(a, ctxFor('2001:db8:1:2::1'), now), 0);
  assert.equal(table.check(a, ctxFor('2001:db8:1:2::2'), now), 0);
  assert.ok(table.check(a, ctxFor('2001:db8:1:2::3'), now) > 0, 'a new address in the same /64 is the same client');
  assert.equal(table.check(a, ctxFor('2001:db8:1:3::1'), now), 0, 'another /64');
});

test('two workers sharing counts (collect → merge): the limit is for both together, the previous window too', () => {
  // Both tables live in this process, so they share the module's seed as the primary makes the workers do.
  const a = new RateLimitTable(64);
  const b = new RateLimitTable(64);
  a.sharing = b.sharing = true;
  const rule = compileRateLimit({ requests: 10, period_s: 10, key: 'ip', block_s: 5 } as never, { id: 3 });
  const c = ctxFor('192.0.2.10');
  const other = ctxFor('192.0.2.11');
  const t0 = 1_700_000_000_000;
  for (let i = 0; i < 6; i++) assert.equal(a.check(rule, c, t0 + 1000), 0);
  a.check(rule, other, t0 + 1000);
  const sent = a.collect();
  assert.equal(sent.length, 2 * 5, 'one entry per key counted in');
  assert.deepEqual(a.collect(), [], 'nothing new since');
  b.merge(sent, t0 + 1100);
  for (let i = 0; i < 4; i++) assert.equal(b.check(rule, c, t0 + 1200), 0, 'b admits what is left of 10');
  assert.ok(b.check(rule, c, t0 + 1200) > 0, 'the 11th request on b is over the node-wide limit');
  assert.equal(b.check(rule, other, t0 + 1200), 0, 'another client is not');
  // a hears b's 4 (its 11th was not counted: limited) and is over too.
  a.merge(b.collect(), t0 + 1300);
  assert.ok(a.check(rule, c, t0 + 1300) > 0);
  // Next window, 1 s in: 90 % of both workers' 10 still count on a fresh table that only heard of them.
  const d = new RateLimitTable(64);
  d.sharing = true;
  const e = new RateLimitTable(64);
  e.sharing = true;
  for (let i = 0; i < 5; i++) d.check(rule, c, t0 + 9000);
  for (let i = 0; i < 5; i++) e.check(rule, c, t0 + 9000);
  d.merge(e.collect(), t0 + 9100);
  assert.equal(d.check(rule, c, t0 + 11_000), 0, '9 + 1');
  assert.ok(d.check(rule, c, t0 + 11_001) > 0, '9 + 2 is over');
  // Malformed entries are skipped.
  d.merge([1, 0, 5, 1, 10_000, 1, 2, 1.5, 1, 10_000, 1, 2, 3, -1, 10_000, 1, 2], t0);
});
