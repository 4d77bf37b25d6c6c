// The edge node's /readyz and /metrics with cluster workers (EDGE_WORKERS=2): requests answered by either worker are
// summed by the primary, which serves the metrics; with SYNC_URL=off the node is ready on its store alone.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { proxiedRecord, send, snapshot, startStubOrigin } from '../../edge-node/src/testing/harness.js';
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

/** The command name, state and parent pid of a process, from /proc (undefined once it is gone). */
function procStat(pid: number | string): { comm: string; state: string; parent: number } | undefined {
  try {
    // The command name is in parentheses and may hold spaces: the state, then the parent's pid, follow it.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const [state, parent] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { comm: stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')), state: state!, parent: Number(parent) };
  } catch {
    return undefined;
  }
}

/**
 * Pids of the live cluster workers of a primary: its children running the same program (not a helper process a
 * worker or loader started, such as tsx's esbuild service, and not an exited worker not yet reaped).
 */
function workersOf(pid: number): number[] {
  const comm = procStat(pid)?.comm;
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = procStat(entry);
    if (stat && stat.parent === pid && stat.comm === comm && stat.state !== 'Z') out.push(Number(entry));
  }
  return out;
}

test("a worker that dies takes its open pools out of the primary's gauge; another tenant is still answered", async (t) => {
  const origin = await startStubOrigin('o', (req, res) => res.end(`origin ${req.headers.host}`));
  t.after(() => origin.close());
  const metricsPort = await freePort();
  const edge = await startEdgeNodeProcess(
    null,
    { EDGE_WORKERS: '2', EDGE_METRICS_PORT: String(metricsPort), EDGE_ORIGIN_POOLS_MAX: '3' },
    [
      snapshot('flood.example.org', { records: [proxiedRecord('*', origin.port)] }),
      snapshot('neighbour.example.org', { records: [proxiedRecord('www', origin.port)] }),
    ],
  );
  t.after(() => edge.stop());
  const gauge = async (name: string) => {
    const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    return Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(text)?.[1] ?? NaN);
  };
  // Each request on a new connection, which the kernel hands to either worker: send new host names until both hold
  // their 3 newest pools, then wait for the reports (once a second) made after the last request.
  let sent = 0;
  let pools = NaN;
  await waitUntil(
    'both workers to hold 3 pools',
    async () => {
      for (let i = 0; i < 10; i++) {
        const host = `h${sent++}.flood.example.org`;
        assert.equal((await send(edge.httpPort, host, '/')).status, 200);
      }
      pools = await gauge('edge_origin_pools');
      return pools === 6 ? true : undefined;
    },
    60_000,
  ).catch((err: Error) => {
    throw new Error(
      `${err.message} (last gauge ${pools}, ${sent} sent)\n--- edge node output ---\n${edge.output().slice(-4000)}`,
    );
  });
  await waitUntil('the workers to report their evictions', async () =>
    (await gauge('edge_origin_pools')) === 6 && (await gauge('edge_origin_pools_evicted_total')) === sent - 6
      ? true
      : undefined,
  );

  const workers = workersOf(edge.pid());
  assert.equal(workers.length, 2, `workers of ${edge.pid()}: ${workers.join(', ')}`);
  process.kill(workers[0]!, 'SIGKILL');
  // The primary starts another worker; the dead one's 3 pools leave the gauge, its evictions stay in the total.
  await waitUntil("the dead worker's pools to leave the gauge", async () =>
    (await gauge('edge_origin_pools')) === 3 ? true : undefined,
  );
  assert.equal(await gauge('edge_origin_pools_evicted_total'), sent - 6);
  await waitUntil('a replacement worker', async () => (workersOf(edge.pid()).length === 2 ? true : undefined));
  for (let i = 0; i < 10; i++) {
    const r = await send(edge.httpPort, 'www.neighbour.example.org', `/n${i}`);
    assert.equal(r.status, 200);
    assert.equal(r.body, 'origin www.neighbour.example.org');
  }
});
