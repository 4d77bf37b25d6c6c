// Uptime probes end to end, with no client traffic at all: a running edge node learns the watched host and the
// monitor from the config it syncs, probes the stub origin on loopback itself, and ships the outcomes; when the origin
// answers 5xx the incident opens and `outage.opened` reaches the receiver once, signed; when it recovers the incident
// resolves and `outage.resolved` arrives once. Real minutes (open and resolve after one), so this takes minutes.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { ensureNodeToken } from '@platform/shared/node-token';
import { eventually } from '../helpers/workflows-harness.js';
import { startEdgeNodeProcess } from './edge-harness.js';
import { freePort } from './sync-harness.js';
import {
  assertSigned,
  flippingOrigin,
  startUptimeLifecycle,
  watchedDomain,
  type UptimeLifecycle,
} from './uptime-harness.js';

const PROBE_AGENT = 'Service-Uptime-Probe/1';
let U: UptimeLifecycle;

before(async () => {
  U = await startUptimeLifecycle('uptime-probes');
});
after(() => U?.close());

test('no client traffic: the edge probes, the origin fails, outage.opened once; it recovers, outage.resolved once', async (t) => {
  const name = 'probed.example.org';
  const www = `www.${name}`;
  const q = `?domain=${name}`;
  const { L, received } = U;
  const origin = await flippingOrigin('probed-origin');
  t.after(() => origin.close());
  await watchedDomain(L, name, origin.port);
  const mon = await L.api('POST', `/uptime/monitors${q}`, { name: 'API', path_includes: ['/api/*'] });
  assert.equal(mon.status, 200, JSON.stringify(mon.body));
  const saved = await L.api('PUT', `/uptime/settings${q}`, {
    webhook_url: `http://127.0.0.1:${U.receiverPort}/outages`,
    notify_webhook: true,
    min_requests_per_minute: 20,
    open_after_minutes: 1,
    resolve_after_minutes: 1,
  });
  assert.equal(saved.status, 200);
  const secret = (await L.api('GET', `/uptime/webhook${q}`)).body.signing_secret as string;
  const metricsPort = await freePort();
  const edge = await startEdgeNodeProcess(
    { syncUrl: `ws://127.0.0.1:${U.syncPort}`, nodeToken: ensureNodeToken(L.dataDir), apiUrl: L.apiUrl },
    { EDGE_METRICS_PORT: String(metricsPort) },
  );
  t.after(() => edge.stop());

  // Nobody sends the edge a request: what reaches the origin are the edge's probes, of the host and of the monitor.
  const probes = () => origin.seen.filter((r) => r.headers['user-agent'] === PROBE_AGENT);
  await eventually('the edge to probe the watched host and the monitor', async () =>
    probes().some((r) => r.url === '/') && probes().some((r) => r.url === '/api/') ? true : undefined,
  );
  assert.equal(origin.seen.length, probes().length, 'only probes reached the origin');
  assert.ok(probes().every((r) => r.headers.host === www && r.method === 'GET'));

  const hostEvents = () =>
    received.filter((r) => {
      const b = JSON.parse(r.body);
      return b.domain === name && b.monitor_id === null;
    });
  origin.failing = true;
  const firstFailure = Date.now();
  const opened = await eventually(
    'outage.opened from probes alone',
    async () => (hostEvents().length >= 1 ? hostEvents()[0] : undefined),
    240_000,
  );
  const toOpened = Date.now() - firstFailure;
  assert.equal(opened.headers['x-service-event'], 'outage.opened');
  assertSigned(opened, secret);
  const ob = JSON.parse(opened.body);
  assert.deepEqual([ob.event, ob.hostname, ob.monitor_id, ob.scope], ['outage.opened', www, null, '']);
  assert.ok(ob.peak_error_pct >= 50, `peak ${ob.peak_error_pct}`);
  // The monitor's scope failed as well: its own incident. It is judged on its own probes only, so the minute the
  // origin turned may not hold enough failures for it, and it can open a minute after the host's.
  await eventually(
    'the monitor incident',
    async () => {
      const open = (await L.api('GET', `/uptime/incidents/open${q}`)).body as { monitor_id: number | null }[];
      return open.some((i) => i.monitor_id === mon.body.id) ? true : undefined;
    },
    150_000,
  );

  origin.failing = false;
  const recovered = Date.now();
  const resolved = await eventually(
    'outage.resolved from probes alone',
    async () => (hostEvents().length >= 2 ? hostEvents()[1] : undefined),
    240_000,
  );
  const rb = JSON.parse(resolved.body);
  assert.equal(rb.event, 'outage.resolved');
  assert.equal(rb.incident_id, ob.incident_id);
  assert.ok(Number.isInteger(rb.duration_sec) && rb.duration_sec >= 60, `duration_sec ${rb.duration_sec}`);
  console.log(
    `# uptime probes, no traffic: first origin failure -> outage.opened ${Math.round(toOpened / 1000)} s; ` +
      `recovery -> outage.resolved ${Math.round((Date.now() - recovered) / 1000)} s (open/resolve after 1 minute); ` +
      `${probes().length} probes reached the origin`,
  );
  await new Promise((r) => setTimeout(r, 3000));
  assert.equal(hostEvents().length, 2, 'each event once');
  // The node's metrics count what it sent (a probe may be on its way: at least what the origin saw).
  const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  const metric = (name: string) => Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(metrics)?.[1] ?? NaN);
  assert.ok(metric('edge_uptime_probes_total') >= probes().length, metrics);
  assert.ok(metric('edge_uptime_probes_failed_total') >= 3, "the failing minute's probes");
  assert.ok(metric('edge_uptime_probes_failed_total') < metric('edge_uptime_probes_total'));
  const list = (await L.api('GET', `/uptime/incidents${q}`)).body as { monitor_id: number | null; state: string }[];
  assert.equal(list.filter((i) => i.monitor_id === null).length, 1);
});
