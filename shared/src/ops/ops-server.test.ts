// The operations listener every node and the worker use: what each path answers, with which status and content type.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRegistry, counterFrom } from './metrics.js';
import { startOpsServer } from './ops-server.js';

test('/healthz, /readyz and /metrics answer with their statuses and content types; a counter read at scrape moves', async (t) => {
  let answers = 0;
  let ready = false;
  const registry = createRegistry();
  counterFrom(registry, 'test_answers_total', 'Answers', () => answers);
  const ops = await startOpsServer({
    host: '127.0.0.1',
    port: 0,
    registry,
    checks: {
      store: () => ({ ready: true, detail: 'open' }),
      sync: () => (ready ? { ready: true, detail: 'caught up' } : { ready: false, detail: 'cannot reach ws://hub' }),
      hung: () => new Promise(() => undefined),
    },
  });
  t.after(() => ops.close());
  const url = (path: string) => `http://127.0.0.1:${ops.port}${path}`;

  const health = await fetch(url('/healthz'));
  assert.equal(health.status, 200);
  assert.equal(health.headers.get('content-type'), 'application/json; charset=utf-8');
  assert.deepEqual(await health.json(), { status: 'alive' });

  const notReady = await fetch(url('/readyz'));
  assert.equal(notReady.status, 503);
  assert.equal(notReady.headers.get('content-type'), 'application/json; charset=utf-8');
  assert.deepEqual(await notReady.json(), {
    status: 'not ready',
    failing: ['sync', 'hung'],
    checks: {
      store: { ready: true, detail: 'open' },
      sync: { ready: false, detail: 'cannot reach ws://hub' },
      hung: { ready: false, detail: 'no answer within 2000 ms' },
    },
  });

  const before = await fetch(url('/metrics'));
  assert.equal(before.status, 200);
  assert.match(before.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
  const text = await before.text();
  assert.match(text, /^# TYPE test_answers_total counter$/m);
  assert.match(text, /^test_answers_total 0$/m);
  assert.match(text, /^process_resident_memory_bytes \d+/m);
  answers = 3;
  assert.match(await (await fetch(url('/metrics'))).text(), /^test_answers_total 3$/m);

  ready = true;
  const head = await fetch(url('/healthz'), { method: 'HEAD' });
  assert.equal(head.status, 200);
  assert.equal((await fetch(url('/nope'))).status, 404);
  const post = await fetch(url('/metrics'), { method: 'POST' });
  assert.equal(post.status, 405);
  assert.equal(post.headers.get('allow'), 'GET, HEAD');
});
