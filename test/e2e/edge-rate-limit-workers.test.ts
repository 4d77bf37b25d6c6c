// rate_limit with two worker processes (EDGE_WORKERS=2, edge-node/src/main.ts as a user starts it): each request on
// a new connection, so the kernel spreads them over both workers; the workers exchange their counts through the
// primary every 100 ms, so the client gets the rule's limit for the node, not twice it (README "rate_limit").
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { proxiedRecord, rule, send, snapshot } from '../../edge-node/src/testing/harness.js';
import { startEdgeNodeProcess } from './edge-harness.js';

test('a rate_limit is for the node: two workers together admit the limit', { timeout: 180_000 }, async (t) => {
  const origin = createServer((_req, res) => res.end('origin\n'));
  await new Promise<void>((r) => origin.listen(0, '127.0.0.1', r));
  t.after(() => origin.close());
  const port = (origin.address() as { port: number }).port;
  const LIMIT = 6;
  const edge = await startEdgeNodeProcess(null, { EDGE_WORKERS: '2', EDGE_HTTPS_PORT: '-1' }, [
    snapshot('shared.example.org', {
      records: [proxiedRecord('www', port)],
      rules: [rule('rate_limit', { requests: LIMIT, period_s: 600, block_s: 600, key: 'ip' })],
    }),
  ]);
  t.after(() => edge.stop());
  const host = 'www.shared.example.org';
  // Both workers answering (421/200 from either) before counting starts: another address warms them.
  for (let i = 0; i < 10; i++) assert.equal((await send(edge.httpPort, 'probe.invalid', '/')).status, 421);

  // Paced ten times slower than the exchange round (100 ms), as the error bound is one round: under a loaded CI
  // (every test file at once on 2 cores) 8 of 6 passed once at a 400 ms pace: exchange rounds that late.
  const REQUESTS = 3 * LIMIT;
  let passed = 0;
  let limited = 0;
  for (let i = 0; i < REQUESTS; i++) {
    const res = await send(edge.httpPort, host, `/r/${i}`, { localAddress: '127.0.0.21' });
    if (res.status === 200) passed++;
    else if (res.status === 429) limited++;
    else assert.fail(`status ${res.status}`);
    await sleep(1000);
  }
  assert.equal(passed + limited, REQUESTS);
  // Without sharing this was up to 2 × LIMIT (bench/RESULTS.md); one request may slip in a round that was late.
  assert.ok(passed >= LIMIT && passed <= LIMIT + 1, `${passed} passed of a limit of ${LIMIT}`);
  // Another client is not limited.
  assert.equal((await send(edge.httpPort, host, '/x', { localAddress: '127.0.0.22' })).status, 200);
});
