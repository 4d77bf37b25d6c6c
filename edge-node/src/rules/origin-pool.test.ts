import { test } from 'node:test';
import assert from 'node:assert/strict';
import { proxiedRecord, rule, send, snapshot, startStubOrigin, startTestEdge } from '../testing/harness.js';
import { healthTracked, sweepHealth } from './origin-pool.js';

test('origin_pool active health checks take a failing origin out and bring it back', async (t) => {
  let sick = false;
  const a = await startStubOrigin('a', (req, res) => {
    if (req.url === '/health' && sick) {
      res.statusCode = 503;
      res.end('sick');
      return;
    }
    res.end(`origin a ${req.url}`);
  });
  const b = await startStubOrigin('b');
  t.after(() => a.close());
  t.after(() => b.close());
  const edge = await startTestEdge(t, [
    snapshot('pool.example.org', {
      records: [proxiedRecord('www', a.port)],
      rules: [
        rule('origin_pool', {
          origins: [
            { address: '127.0.0.1', port: a.port, weight: 1 },
            { address: '127.0.0.1', port: b.port, weight: 0, backup: true },
          ],
          health_check: { path: '/health', interval_s: 1, timeout_s: 1, unhealthy_threshold: 1, healthy_threshold: 1 },
        }),
      ],
    }),
  ]);
  const get = () => send(edge.node.server.httpPort, 'www.pool.example.org', '/x');
  assert.equal((await get()).body, 'origin a /x');
  sick = true;
  const until = async (want: string) => {
    for (let i = 0; i < 100; i++) {
      if ((await get()).body === want) return;
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.fail(`never answered ${want}`);
  };
  await until('origin b /x');
  sick = false;
  await until('origin a /x');
  assert.ok(a.seen.some((s) => s.url === '/health' && s.headers['user-agent'] === 'edge-health-check/1'));
});

test('origin_pool health of a deleted rule is forgotten by the sweep; the pools in use and another tenant are still served', async (t) => {
  const a = await startStubOrigin('a');
  const b = await startStubOrigin('b');
  t.after(() => a.close());
  t.after(() => b.close());
  const first = rule('origin_pool', {
    origins: [
      { address: '127.0.0.1', port: a.port },
      { address: '127.0.0.1', port: b.port, backup: true },
    ],
  });
  const next = rule('origin_pool', { origins: [{ address: '127.0.0.1', port: b.port }] });
  const pooled = (r: typeof first) =>
    snapshot('sweep.example.org', { records: [proxiedRecord('www', a.port)], rules: [r] });
  const edge = await startTestEdge(t, [
    pooled(first),
    snapshot('neighbour.example.org', { records: [proxiedRecord('www', a.port)] }),
  ]);
  const port = edge.node.server.httpPort;
  assert.equal((await send(port, 'www.sweep.example.org', '/1')).body, 'origin a /1');
  assert.equal(healthTracked(first.id), 1, 'the origin asked about (the backup was not needed)');

  // The tenant replaces its pool rule (a new rule id each time it does): the old rule's health is now garbage.
  edge.apply(pooled(next));
  sweepHealth();
  assert.equal((await send(port, 'www.sweep.example.org', '/2')).body, 'origin b /2');
  sweepHealth();
  assert.equal(healthTracked(first.id), 0, 'the deleted rule is forgotten');
  assert.equal(healthTracked(next.id), 1, 'the rule in use is kept');
  assert.equal((await send(port, 'www.sweep.example.org', '/3')).body, 'origin b /3');
  const other = await send(port, 'www.neighbour.example.org', '/n');
  assert.equal(other.status, 200);
  assert.equal(other.body, 'origin a /n');
});
