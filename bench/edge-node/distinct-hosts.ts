// Issue 10 item 5: the edge node's memory under a million distinct host names. An edge node (edge-node/src/main.ts, a
// child process) serves a `*` proxied record to a stub origin on 127.0.0.1, so every distinct Host is a distinct origin
// pool key; the load sends REQUESTS requests, each with a new Host, over CONNECTIONS keep-alive connections, and every
// SAMPLE_EVERY requests reads the edge's /metrics (RSS, V8 heap, origin pools, cache bytes, request-log drops),
// and checks another tenant is still answered. Bounded: it stops after REQUESTS or MAX_SECONDS.
// The control plane address points at a closed port, so the request-log buffer fills to EDGE_LOG_BUFFER_MAX (its
// worst case) instead of being shipped.
// Usage: node --import tsx bench/edge-node/distinct-hosts.ts
// Env: REQUESTS (1000000), CONNECTIONS (8), SAMPLE_EVERY (10000), MAX_SECONDS (1800), and any EDGE_* variable
// passed through to the edge (EDGE_ORIGIN_POOLS_MAX, EDGE_LOG_BUFFER_MAX: the edge's defaults when unset).
import { createServer, type Server } from 'node:http';
import { Pool } from 'undici';
import { proxiedRecord, snapshot } from '../../edge-node/src/testing/harness.js';
import { startEdgeNodeProcess } from '../../test/e2e/edge-harness.js';
import { freePort } from '../../test/e2e/sync-harness.js';

const num = (name: string, dflt: number): number => {
  const v = Number(process.env[name] ?? dflt);
  if (!Number.isInteger(v) || v <= 0) throw new Error(`${name} must be a positive integer`);
  return v;
};
const REQUESTS = num('REQUESTS', 1_000_000);
const CONNECTIONS = num('CONNECTIONS', 8);
const SAMPLE_EVERY = num('SAMPLE_EVERY', 10_000);
const MAX_SECONDS = num('MAX_SECONDS', 1800);
const WILDCARD = 'distinct.bench.example.org';
const OTHER = 'other.bench.example.org';

// The origin: a small fixed answer, keep-alive (each new pool of the edge opens its own connection to it).
const origin: Server = createServer((_req, res) => {
  res.setHeader('content-type', 'text/plain');
  res.end('origin\n');
});
origin.keepAliveTimeout = 5000;
await new Promise<void>((r) => origin.listen(0, '127.0.0.1', r));
const originPort = (origin.address() as { port: number }).port;

const [metricsPort, closedPort] = await Promise.all([freePort(), freePort()]);
const passed = Object.fromEntries(
  Object.entries(process.env).filter((e): e is [string, string] => e[0].startsWith('EDGE_') && e[1] !== undefined),
);
const edge = await startEdgeNodeProcess(
  null,
  {
    EDGE_LOG_FLUSH_MS: '2000',
    ...passed,
    EDGE_HTTPS_PORT: '-1',
    EDGE_METRICS_PORT: String(metricsPort),
    EDGE_WORKERS: '1',
    // Nothing listens there: request logs stay in the buffer (bounded by EDGE_LOG_BUFFER_MAX) and are never shipped.
    CONTROL_PLANE_URL: `http://127.0.0.1:${closedPort}`,
  },
  [
    snapshot(WILDCARD, { records: [proxiedRecord('*', originPort), proxiedRecord('@', originPort)] }),
    snapshot(OTHER, { records: [proxiedRecord('www', originPort)] }),
  ],
);
const httpPort = edge.httpPort;

async function cleanup(): Promise<void> {
  await edge.stop();
  origin.closeAllConnections();
  origin.close();
}

async function metrics(): Promise<Map<string, number>> {
  const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    const m = /^([a-z_]+)(?:\{[^}]*\})? (\S+)$/.exec(line);
    if (m) out.set(m[1]!, (out.get(m[1]!) ?? 0) + Number(m[2]));
  }
  return out;
}

const client = new Pool(`http://127.0.0.1:${httpPort}`, { connections: CONNECTIONS, pipelining: 1 });
const statuses = new Map<number, number>();
async function get(host: string, path: string): Promise<number> {
  const r = await client.request({ path, method: 'GET', headers: { host } });
  await r.body.dump();
  return r.statusCode;
}

try {
  // The harness waited for the node to listen; the store was read before that.
  if ((await get(`www.${OTHER}`, '/')) !== 200) throw new Error('the other tenant is not answered');

  interface Sample {
    requests: number;
    seconds: number;
    rss: number;
    heapUsed: number;
    heapTotal: number;
    external: number;
    pools: number;
    evicted: number;
    cacheBytes: number;
    logsDropped: number;
    other: number;
  }
  const samples: Sample[] = [];
  const started = performance.now();
  const sample = async (requests: number): Promise<void> => {
    const m = await metrics();
    const other = await get(`www.${OTHER}`, '/');
    samples.push({
      requests,
      seconds: (performance.now() - started) / 1000,
      rss: m.get('process_resident_memory_bytes') ?? NaN,
      heapUsed: m.get('nodejs_heap_size_used_bytes') ?? NaN,
      heapTotal: m.get('nodejs_heap_size_total_bytes') ?? NaN,
      external: m.get('nodejs_external_memory_bytes') ?? NaN,
      pools: m.get('edge_origin_pools') ?? NaN,
      evicted: m.get('edge_origin_pools_evicted_total') ?? NaN,
      cacheBytes: m.get('edge_cache_bytes') ?? NaN,
      logsDropped: m.get('edge_request_logs_dropped_total') ?? NaN,
      other,
    });
    const s = samples.at(-1)!;
    const mb = (b: number) => (b / 1048576).toFixed(1);
    console.error(
      `${s.requests} req ${s.seconds.toFixed(0)} s: rss ${mb(s.rss)} MB heap ${mb(s.heapUsed)}/${mb(s.heapTotal)} MB ` +
        `pools ${s.pools} evicted ${s.evicted} logs dropped ${s.logsDropped} other tenant ${s.other}`,
    );
  };
  await sample(0);

  const deadline = Date.now() + MAX_SECONDS * 1000;
  let next = 0;
  let done = 0;
  let nextSample = SAMPLE_EVERY;
  let sampling: Promise<void> = Promise.resolve();
  let stoppedEarly = false;
  let failuresInARow = 0;
  const loop = async (): Promise<void> => {
    for (;;) {
      // Stops at the deadline, or when the edge stopped answering (100 failures in a row).
      if (Date.now() > deadline || failuresInARow >= 100) {
        stoppedEarly = true;
        return;
      }
      const i = next++;
      if (i >= REQUESTS) return;
      // A distinct name per request: h<i>.distinct.bench.example.org, answered by the `*` record.
      const status = await get(`h${i.toString(36)}.${WILDCARD}`, '/x').catch(() => 0);
      failuresInARow = status === 0 ? failuresInARow + 1 : 0;
      statuses.set(status, (statuses.get(status) ?? 0) + 1);
      done++;
      if (done >= nextSample) {
        nextSample += SAMPLE_EVERY;
        const at = done;
        sampling = sampling.then(() => sample(at));
      }
    }
  };
  await Promise.all(Array.from({ length: CONNECTIONS }, loop));
  await sampling;
  if (samples.at(-1)!.requests !== done) await sample(done);
  const seconds = (performance.now() - started) / 1000;

  const mb = (b: number) => (b / 1048576).toFixed(1);
  console.log(
    `\n${done} requests with distinct Host names in ${seconds.toFixed(0)} s (${Math.round(done / seconds)} req/s), ` +
      `${CONNECTIONS} keep-alive connections${stoppedEarly ? ', STOPPED EARLY (MAX_SECONDS, or the edge stopped answering)' : ''}`,
  );
  console.log(
    `statuses: ${[...statuses]
      .sort((a, b) => a[0] - b[0])
      .map(([s, n]) => `${s}×${n}`)
      .join(', ')}`,
  );
  console.log(
    '\n| requests | s | RSS MB | heap used MB | heap total MB | external MB | origin pools | pools evicted | cache bytes | logs dropped | other tenant |',
  );
  console.log('|---|---|---|---|---|---|---|---|---|---|---|');
  for (const s of samples)
    console.log(
      `| ${s.requests} | ${s.seconds.toFixed(0)} | ${mb(s.rss)} | ${mb(s.heapUsed)} | ${mb(s.heapTotal)} | ${mb(s.external)} | ` +
        `${s.pools} | ${s.evicted} | ${s.cacheBytes} | ${s.logsDropped} | ${s.other} |`,
    );
  const at = (n: number) => samples.find((s) => s.requests >= n);
  console.log(
    `\nRSS at ${[10_000, 100_000, 500_000, 1_000_000]
      .map((n) => `${n}: ${at(n) ? `${mb(at(n)!.rss)} MB` : 'n/a'}`)
      .join(', ')}`,
  );
  const failedOther = samples.filter((s) => s.other !== 200).length;
  if (failedOther > 0) console.log(`the other tenant was NOT answered 200 at ${failedOther} samples`);
} finally {
  await client.close().catch(() => undefined);
  await cleanup();
}
