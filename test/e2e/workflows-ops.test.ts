// The worker's /healthz, /readyz and /metrics (WORKER_METRICS_PORT, issue 9 item 7): not ready naming Temporal while it
// cannot reach it; ready while polling, with the SDK's workflow and activity task latencies moving as workflows run.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ScriptProcess } from '../helpers/child-process.js';
import { eventually, startLifecycle } from '../helpers/workflows-harness.js';
import { freePort } from './sync-harness.js';

interface Readiness {
  status: string;
  failing: string[];
  checks: Record<string, { ready: boolean; detail: string }>;
}

test('a worker that cannot reach Temporal is alive and not ready, naming Temporal and why', async (t) => {
  const temporalPort = await freePort();
  const metricsPort = await freePort();
  const worker = new ScriptProcess('workflows/src/main.ts', () => ({
    TEMPORAL_ADDRESS: `127.0.0.1:${temporalPort}`,
    NODE_TOKEN: 'workflows-ops-token',
    CONTROL_PLANE_URL: 'http://127.0.0.1:1',
    WORKER_METRICS_PORT: String(metricsPort),
  }));
  worker.start();
  t.after(() => worker.stop());
  const ops = `http://127.0.0.1:${metricsPort}`;
  const alive = await eventually('the worker ops listener', async () => {
    if (!worker.running) throw new Error(`worker exited:\n${worker.out}`);
    return fetch(`${ops}/healthz`);
  });
  assert.equal(alive.status, 200);
  assert.deepEqual(await alive.json(), { status: 'alive' });
  const report = await eventually('the reason on /readyz', async () => {
    const res = await fetch(`${ops}/readyz`);
    assert.equal(res.status, 503);
    const body = (await res.json()) as Readiness;
    return /cannot reach Temporal/.test(body.checks.temporal?.detail ?? '') ? body : undefined;
  });
  assert.equal(report.status, 'not ready');
  assert.deepEqual(report.failing, ['temporal']);
  assert.match(report.checks.temporal!.detail, new RegExp(`127\\.0\\.0\\.1:${temporalPort}`));
});

test('a polling worker is ready, and its workflow and activity task latencies move as workflows run', async (t) => {
  const metricsPort = await freePort();
  const L = await startLifecycle('wf-ops', {}, { workerEnv: { WORKER_METRICS_PORT: String(metricsPort) } });
  t.after(() => L.close());
  const ops = `http://127.0.0.1:${metricsPort}`;
  const ready = await fetch(`${ops}/readyz`);
  assert.equal(ready.status, 200);
  assert.match(((await ready.json()) as Readiness).checks.temporal!.detail, /^polling task queue /);
  // The control plane reaches the same Temporal.
  const cpReady = (await (await fetch(`${L.apiUrl}/readyz`)).json()) as Readiness;
  assert.equal(cpReady.status, 'ready', JSON.stringify(cpReady));
  assert.equal(cpReady.checks.temporal?.ready, true);

  // A managed domain starts its zone scan and delegation watch: workflow tasks and activities run.
  assert.equal((await L.api('POST', '/domains/', { name: 'ops.example.org' })).status, 200);
  const count = (text: string, name: string) =>
    text
      .split('\n')
      .filter((l) => l.startsWith(`${name}{`))
      .reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
  const metrics = await eventually('task latencies in /metrics', async () => {
    const res = await fetch(`${ops}/metrics`);
    assert.match(res.headers.get('content-type') ?? '', /^text\/plain/);
    const text = await res.text();
    return count(text, 'temporal_workflow_task_execution_latency_count') > 0 &&
      count(text, 'temporal_activity_execution_latency_count') > 0
      ? text
      : undefined;
  });
  assert.match(metrics, /^process_cpu_user_seconds_total /m);
});
