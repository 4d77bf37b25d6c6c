// The request-log ring: records written into columns come back whole, each from its own request, oldest first.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parsePeerAddress } from '@platform/shared/match';
import { RequestContext } from '../context.js';
import { RequestLogBuffer } from './buffer.js';

function request(i: number): RequestContext {
  const ctx = new RequestContext({
    method: i % 2 === 0 ? 'GET' : 'POST',
    host: `h${i}.example.org`,
    path: `/${i}`,
    query: '',
    headers: [['user-agent', i % 2 === 0 ? 'curl/8' : 'Mozilla/5.0 (X11; Linux x86_64)']],
    peer: parsePeerAddress(`192.0.2.${i}`),
    scheme: i % 2 === 0 ? 'http' : 'https',
    startedAt: performance.now(),
  });
  ctx.status = 200 + i;
  ctx.bytes = 10 * i;
  if (i % 3 === 0) ctx.hit(i, 'header', i % 2 === 0);
  if (i === 4) ctx.waf = [{ ruleId: 9, wafRule: '942100', phase: 1, target: 'ARGS:q', data: 'x', action: 'block' }];
  if (i === 5) ctx.fingerprint = 'fp5';
  if (i === 6) ctx.cacheStatus = 'HIT';
  return ctx;
}

test('a ring of columns: the newest records, each whole and its own, oldest first; emptied by drain', () => {
  const buffer = new RequestLogBuffer(3);
  for (let i = 1; i <= 5; i++) buffer.add(request(i));
  assert.deepEqual([buffer.size, buffer.dropped, buffer.total], [3, 2, 5]);
  const [a, b, c] = buffer.drain();
  assert.deepEqual(
    [a, b, c].map((r) => [r.path, r.host, r.method, r.status, r.bytes, r.peer, r.tls, r.ua]),
    [
      ['/3', 'h3.example.org', 'POST', 203, 30, '192.0.2.3', 'TLS', 'browser'],
      ['/4', 'h4.example.org', 'GET', 204, 40, '192.0.2.4', 'none', 'library'],
      ['/5', 'h5.example.org', 'POST', 205, 50, '192.0.2.5', 'TLS', 'browser'],
    ],
  );
  assert.deepEqual(a.rules, [[3, 'header', false]]);
  assert.deepEqual([b.rules, b.waf], [[], [[9, '942100', 1, 'ARGS:q', 'x', 'block']]]);
  assert.deepEqual([c.fp, a.fp, a.waf], ['fp5', undefined, undefined]);
  assert.equal(buffer.size, 0);
  assert.deepEqual(buffer.drain(), []);
  // After a drain the ring fills again from empty.
  for (let i = 6; i <= 7; i++) buffer.add(request(i));
  const again = buffer.drain();
  assert.deepEqual(
    again.map((r) => [r.path, r.cache, r.served, r.rules]),
    [
      ['/6', 'HIT', 'cache', [[6, 'header', true]]],
      ['/7', '', 'edge', []],
    ],
  );
  assert.equal(buffer.total, 7);
});

test('the number columns grow past their first rows and keep every row; rare fields are never left from a reused row', () => {
  // 2,500 rows: the number columns are made for 1,024 and doubled twice, the rows written so far copied each time.
  const buffer = new RequestLogBuffer(2500);
  for (let i = 0; i < 2500; i++) {
    const ctx = request(i);
    ctx.upstreamMs = i === 1500 ? 12.345 : -1;
    ctx.originBytes = i === 2 ** 11 ? 2 ** 40 : 0;
    buffer.add(ctx);
  }
  const all = buffer.drain();
  assert.equal(all.length, 2500);
  assert.deepEqual(
    all.filter((r, i) => r.status !== 200 + i || r.bytes !== 10 * i || r.path !== `/${i}`).map((r) => r.path),
    [],
  );
  assert.deepEqual([all[1500].upstreamMs, all[1499].upstreamMs, all[2048].originBytes], [12.35, -1, 2 ** 40]);
  assert.equal(all[2047].originBytes, undefined);
  assert.deepEqual([all[1].tls, all[2].tls], ['TLS', 'none']);
  // A ring of 2: a row holding every rare field, overwritten by a request with none of them, and the other way round.
  const ring = new RequestLogBuffer(2);
  const rare = request(1);
  rare.markdown = true;
  rare.rateLimitRule = 7;
  rare.rateLimitKey = 'k';
  rare.botScore = 3;
  rare.botClass = 'automated';
  rare.fingerprint = 'fp';
  ring.add(rare);
  ring.add(request(2));
  ring.add(request(3));
  const [plain, plain2] = ring.drain();
  for (const r of [plain, plain2])
    assert.deepEqual(
      [r.md, r.rlRule, r.rlKey, r.bot, r.botClass, r.fp, r.waf],
      [undefined, undefined, undefined, undefined, undefined, undefined, undefined],
    );
  ring.add(request(2));
  ring.add(rare);
  const [, withRare] = ring.drain();
  assert.deepEqual(
    [withRare.md, withRare.rlRule, withRare.rlKey, withRare.bot, withRare.botClass, withRare.fp, withRare.waf],
    [true, 7, 'k', 3, 'automated', 'fp', undefined],
  );
});
