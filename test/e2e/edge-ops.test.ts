// The edge node's /readyz and /metrics with cluster workers (EDGE_WORKERS=2): requests answered by either worker are
// summed by the primary, which serves the metrics; with SYNC_URL=off the node is ready on its store alone.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { send } from '../../edge-node/src/testing/harness.js';
import { startEdgeNodeProcess, waitUntil } from './edge-harness.js';
import { freePort } from './sync-harness.js';

test('cluster workers report their requests to the primary, whose /metrics sums them', async (t) => {
  const metricsPort = await freePort();
  const edge = await startEdgeNodeProcess(null, { EDGE_WORKERS: '2', EDGE_METRICS_PORT: String(metricsPort) });
  t.after(() => edge.stop());
  const ops = `http://127.0.0.1:${metricsPort}`;

  const ready = await fetch(`${ops}/readyz`);
  assert.equal(ready.status, 200);
  const body = (await ready.json()) as { checks: Record<string, { detail: string }> };
  assert.match(body.checks.sync!.detail, /^sync off/);

  // Hosts the node does not serve: 421, no cache rule looked (NONE), whichever worker answers.
  for (let i = 0; i < 20; i++) assert.equal((await send(edge.httpPort, `nobody-${i}.example.net`, '/')).status, 421);
  const series = /^edge_requests_total\{status="421",cache="NONE"\} (\d+)$/m;
  // The harness's own start-up probes were 421 too: at least the 20 sent here.
  const text = await waitUntil('the workers to report', async () => {
    const res = await fetch(`${ops}/metrics`);
    assert.match(res.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
    const t2 = await res.text();
    return Number(series.exec(t2)?.[1] ?? 0) >= 20 ? t2 : undefined;
  });
  assert.match(text, /^edge_sync_connected 0$/m);
  // The workers' memory bounds are summed too (nothing proxied: no pool, nothing cached or dropped).
  assert.match(text, /^edge_origin_pools 0$/m);
  assert.match(text, /^edge_cache_bytes 0$/m);
  assert.match(text, /^edge_request_logs_dropped_total 0$/m);
});
