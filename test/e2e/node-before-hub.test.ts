// A DNS node (and an edge node) started before its sync hub (issue 9, item 3): it warns with the hub's URL and the reason, says on /readyz
// that it is not ready and why, keeps retrying, and once the control plane appears on that port it catches up, logs
// it once, answers a record written after that over real UDP DNS, and /readyz turns ready.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildQuery } from '../../dns-server/src/testing/fixtures.js';
import { decode } from '../../dns-server/src/testing/decode.js';
import { freePort, startControlPlane, type ControlPlaneProcess } from './sync-harness.js';
import { removeDir, startDnsProcess, udpQuery, type DnsProcess } from './dns-helpers.js';
import { startEdgeNodeProcess } from './edge-harness.js';
import { send, startStubOrigin } from '../../edge-node/src/testing/harness.js';

let cp: ControlPlaneProcess | undefined;
let dns: DnsProcess | undefined;
const dataDir = mkdtempSync(join(tmpdir(), 'node-before-hub-'));
after(async () => {
  await dns?.stop();
  await cp?.stop();
  removeDir(dataDir);
});

interface LogLine {
  level: number;
  msg: string;
  hub?: string;
  reason?: string;
}

function logLines(out: string): LogLine[] {
  return out
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as LogLine);
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, detail: () => string): Promise<T> {
  const end = Date.now() + 60_000;
  for (;;) {
    const v = await probe().catch(() => undefined);
    if (v !== undefined) return v;
    if (Date.now() > end) assert.fail(`timed out waiting for ${what}\n${detail()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

test('a node started before its hub warns, then catches up when the hub appears', async () => {
  const syncPort = await freePort();
  const metricsPort = await freePort();
  const hubUrl = `ws://127.0.0.1:${syncPort}`;
  const nodeToken = 'node-before-hub-token-0123456789';
  dns = await startDnsProcess({
    DATA_DIR: dataDir,
    SYNC_URL: hubUrl,
    NODE_TOKEN: nodeToken,
    DNS_METRICS_PORT: String(metricsPort),
  });
  const ops = `http://127.0.0.1:${metricsPort}`;

  // The warning names the URL and the reason (nothing listens: connection refused).
  const warning = await until(
    'the warning',
    async () =>
      logLines(dns!.output()).find((l) => l.level === 40 && l.hub === hubUrl && /ECONNREFUSED/.test(l.reason ?? '')),
    dns.output,
  );
  assert.match(warning.msg, new RegExp(`${hubUrl}.*ECONNREFUSED`));

  const health = await fetch(`${ops}/healthz`);
  assert.equal(health.status, 200);
  assert.deepEqual(await health.json(), { status: 'alive' });
  const notReady = await fetch(`${ops}/readyz`);
  assert.equal(notReady.status, 503);
  assert.match(notReady.headers.get('content-type') ?? '', /^application\/json/);
  const body = (await notReady.json()) as {
    status: string;
    failing: string[];
    checks: Record<string, { ready: boolean; detail: string }>;
  };
  assert.equal(body.status, 'not ready');
  assert.deepEqual(body.failing, ['sync']);
  assert.match(body.checks.sync!.detail, new RegExp(`cannot reach ${hubUrl}: .*ECONNREFUSED`));
  const before = await (await fetch(`${ops}/metrics`)).text();
  assert.match(before, /^dns_sync_connected 0$/m);
  assert.ok(Number(/^dns_sync_connect_failures_total (\d+)$/m.exec(before)?.[1]) >= 1, before);

  // The hub appears on that port; a record written now is answered over UDP.
  cp = await startControlPlane('node-before-hub', { SYNC_PORT: String(syncPort), NODE_TOKEN: nodeToken });
  await cp.api('POST', '/domains/', { name: 'late-hub.example' });
  await cp.api('POST', '/domains/late-hub.example/records/', {
    name: 'www',
    type: 'A',
    destination: '192.0.2.7',
    proxied: false,
    ttl: 300,
  });
  const answer = await until(
    'the record over UDP',
    async () => {
      const a = await udpQuery(dns!.port, buildQuery('www.late-hub.example', 1), 1000);
      const d = a ? decode(a) : undefined;
      return d?.answer[0] === 'www.late-hub.example 300 A 192.0.2.7' ? d : undefined;
    },
    dns.output,
  );
  assert.equal(answer.rcode, 0);

  const ready = await until(
    '/readyz to turn ready',
    async () => {
      const r = await fetch(`${ops}/readyz`);
      return r.status === 200 ? ((await r.json()) as typeof body) : undefined;
    },
    dns.output,
  );
  assert.equal(ready.status, 'ready');
  assert.match(ready.checks.sync!.detail, new RegExp(`caught up with ${hubUrl}`));
  const caughtUp = logLines(dns.output()).filter((l) => /^caught up with the sync hub/.test(l.msg));
  assert.equal(caughtUp.length, 1, dns.output());
  // The hub sees the node, and its lag reaches 0 once the node reports the version it applied.
  const hubMetrics = await until(
    'the node to report its version to the hub',
    async () => {
      const text = await (await fetch(`${cp!.apiUrl}/metrics`)).text();
      return /^control_plane_sync_node_lag_versions\{node="dns-\d+"\} 0$/m.test(text) ? text : undefined;
    },
    dns.output,
  );
  assert.match(hubMetrics, /^control_plane_sync_connected_nodes 1$/m);
  const cpReady = (await (await fetch(`${cp.apiUrl}/readyz`)).json()) as typeof body;
  assert.equal(cpReady.checks.sync?.ready, true, JSON.stringify(cpReady));
  const metrics = await (await fetch(`${ops}/metrics`)).text();
  assert.match(metrics, /^dns_sync_connected 1$/m);
  assert.match(metrics, /^dns_responses_total\{rcode="NOERROR"\} [1-9]\d*$/m);
  assert.ok(Number(/^dns_sync_config_version (\d+)$/m.exec(metrics)?.[1]) > 0, metrics);
});

test('an edge node started before its hub warns, is not ready, then serves a record written once the hub appears', async (t) => {
  const syncPort = await freePort();
  const apiPort = await freePort();
  const metricsPort = await freePort();
  const hubUrl = `ws://127.0.0.1:${syncPort}`;
  const nodeToken = 'edge-before-hub-token-0123456789';
  const origin = await startStubOrigin('late-hub', (req, res) => res.end(`origin ${req.url}`));
  t.after(() => origin.close());
  const edge = await startEdgeNodeProcess(
    { syncUrl: hubUrl, nodeToken, apiUrl: `http://127.0.0.1:${apiPort}` },
    { EDGE_METRICS_PORT: String(metricsPort) },
  );
  t.after(() => edge.stop());
  const ops = `http://127.0.0.1:${metricsPort}`;

  await until(
    'the warning',
    async () =>
      logLines(edge.output()).find((l) => l.level === 40 && l.hub === hubUrl && /ECONNREFUSED/.test(l.reason ?? '')),
    edge.output,
  );
  assert.equal((await fetch(`${ops}/healthz`)).status, 200);
  const notReady = await fetch(`${ops}/readyz`);
  assert.equal(notReady.status, 503);
  assert.deepEqual(((await notReady.json()) as { failing: string[] }).failing, ['sync']);

  const cp = await startControlPlane('edge-before-hub', {
    API_PORT: String(apiPort),
    SYNC_PORT: String(syncPort),
    NODE_TOKEN: nodeToken,
  });
  t.after(() => cp.stop());
  const domain = 'edge-late-hub.example.org';
  await cp.api('POST', '/domains/', { name: domain });
  await cp.api('POST', `/domains/${domain}/records/`, {
    name: 'www',
    type: 'A',
    destination: '127.0.0.1',
    proxied: true,
    scheme: 'Http',
    port: origin.port,
  });
  const served = await until(
    'the record at the edge',
    async () => {
      const r = await send(edge.httpPort, `www.${domain}`, '/hello');
      return r.status === 200 ? r : undefined;
    },
    edge.output,
  );
  assert.equal(served.body, 'origin /hello');
  assert.equal((await fetch(`${ops}/readyz`)).status, 200);
  const metrics = await (await fetch(`${ops}/metrics`)).text();
  assert.match(metrics, /^edge_requests_total\{status="200",cache="DYNAMIC"\} [1-9]\d*$/m);
  assert.match(metrics, /^edge_requests_total\{status="421",cache="NONE"\} [1-9]\d*$/m);
  assert.match(metrics, /^edge_sync_connected 1$/m);
  assert.ok(Number(/^edge_sync_config_version (\d+)$/m.exec(metrics)?.[1]) > 0, metrics);
  assert.match(metrics, /^edge_domains 1$/m);
});
