// Uptime incidents end to end from the edge's side of the wire: per-minute origin counts arrive with request-log
// batches (POST /internal/request-logs, msgpack, as edge-node/src/log/shipper.ts sends them; minutes in the recent
// past so no test waits for a clock minute), the detector opens an incident, its workflow delivers `outage.opened`
// once to a receiver on loopback, healthy minutes resolve it and `outage.resolved` arrives once with duration_sec.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { pack } from 'msgpackr';
import { ensureNodeToken } from '@platform/shared/node-token';
import { eventually, type Lifecycle } from '../helpers/workflows-harness.js';
import { send } from '../../edge-node/src/testing/harness.js';
import { startEdgeNodeProcess } from './edge-harness.js';
import {
  assertSigned,
  flippingOrigin,
  startUptimeLifecycle,
  watchedDomain,
  type Received,
  type UptimeLifecycle,
} from './uptime-harness.js';

const domain = 'outage.example.org';
const host = `shop.${domain}`;
const q = `?domain=${domain}`;
let U: UptimeLifecycle;
let L: Lifecycle;
let port = 0;
let syncPort = 0;
let received: Received[] = [];

before(async () => {
  // The detector judges a domain at most every second here (5 s by default): the waits below follow it.
  U = await startUptimeLifecycle('uptime-incidents', { UPTIME_EVALUATE_EVERY_MS: '1000' });
  ({ L, receiverPort: port, syncPort, received } = U);
});
after(() => U?.close());

/** Ships minute counts as an edge node does. */
async function ship(node: string, minutes: [number, string, number, number][], records: unknown[] = []) {
  const res = await fetch(`${L.apiUrl}/internal/request-logs`, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-msgpack',
      authorization: `Bearer ${ensureNodeToken(L.dataDir)}`,
    },
    body: pack({ node, records, minutes }),
  });
  assert.equal(res.status, 200, await res.clone().text());
  return (await res.json()) as { minutes: number; monitor_minutes: number };
}

test('failing minutes open an incident and outage.opened arrives once; healthy ones resolve it, outage.resolved once', async () => {
  assert.equal((await L.api('POST', '/domains/', { name: domain })).status, 200);
  const rec = await L.api('POST', `/domains/${domain}/records/`, {
    name: 'shop',
    type: 'A',
    destination: '192.0.2.10',
    proxied: true,
    monitor: true,
  });
  assert.equal(rec.status, 200, JSON.stringify(rec.body));
  const saved = await L.api('PUT', `/uptime/settings${q}`, {
    webhook_url: `http://127.0.0.1:${port}/outages`,
    notify_webhook: true,
    min_requests_per_minute: 10,
    open_after_minutes: 2,
    resolve_after_minutes: 2,
  });
  assert.equal(saved.status, 200);
  const secret = (await L.api('GET', `/uptime/webhook${q}`)).body.signing_secret as string;

  const now = Date.now();
  const m = (ago: number) => now - (now % 60_000) - ago * 60_000;
  // Two edge nodes: together 80% then 95% of origin requests fail. A thin minute is ignored, and the counts of a host
  // no monitored record serves are not even stored (2 of the 3 entries are).
  assert.equal(
    (
      await ship('edge-a', [
        [m(7), host, 3, 3],
        [m(6), host, 10, 8],
        [m(6), `api.${domain}`, 50, 50],
      ])
    ).minutes,
    2,
  );
  await ship('edge-b', [
    [m(6), host, 10, 8],
    [m(5), host, 20, 19],
    [m(5), `api.${domain}`, 50, 50],
  ]);
  const incident = await eventually('an open incident', async () => {
    const open = (await L.api('GET', `/uptime/incidents/open${q}`)).body as { id: number }[];
    return open.length === 1 ? open[0] : undefined;
  });
  assert.deepEqual(
    (await L.api('GET', `/uptime/status${q}`)).body.map((s: { hostname: string; status: string }) => [
      s.hostname,
      s.status,
    ]),
    [[host, 'down']],
  );
  const opened = await eventually('outage.opened at the receiver', async () =>
    received.length >= 1 ? received[0] : undefined,
  );
  assert.equal(opened.headers['x-service-event'], 'outage.opened');
  assertSigned(opened, secret);
  const ob = JSON.parse(opened.body);
  assert.deepEqual(
    [ob.event, ob.incident_id, ob.domain, ob.hostname, ob.monitor_id, ob.scope, ob.resolved_at, ob.duration_sec],
    ['outage.opened', incident.id, domain, host, null, '', null, null],
  );
  assert.equal(ob.peak_error_pct, 95);
  assert.equal(Date.parse(ob.started_at), m(6));

  // A node's late counts for a minute of the incident raise its peak and send nothing more.
  await ship('edge-a', [[m(5), host, 20, 20]]);
  // Recovery: two healthy minutes.
  await ship('edge-a', [
    [m(4), host, 30, 1],
    [m(3), host, 30, 0],
  ]);
  const resolved = await eventually('outage.resolved at the receiver', async () =>
    received.length >= 2 ? received[1] : undefined,
  );
  const rb = JSON.parse(resolved.body);
  assert.equal(rb.event, 'outage.resolved');
  assert.equal(rb.incident_id, incident.id);
  assert.equal(Date.parse(rb.resolved_at), m(4));
  assert.equal(rb.duration_sec, 120);
  assert.equal(rb.peak_error_pct, 97.5, 'the peak counts every minute of the incident (39 of 40)');
  assert.equal(
    await L.temporal.client.workflow.getHandle(`uptime-incident:${incident.id}`).result(),
    'opened: delivered; resolved: delivered',
  );

  // More healthy minutes, and a worker restart: nothing is sent twice.
  await ship('edge-b', [[m(2), host, 30, 0]]);
  await L.stopWorker();
  await L.startWorker();
  await new Promise((r) => setTimeout(r, 3000));
  assert.equal(received.length, 2, 'each event once');
  const list = (await L.api('GET', `/uptime/incidents${q}`)).body;
  assert.equal(list.length, 1);
  assert.equal(list[0].state, 'resolved');
  assert.equal(list[0].duration_sec, 120);
  assert.deepEqual((await L.api('GET', `/uptime/incidents/open${q}`)).body, []);
  assert.equal((await L.api('GET', `/uptime/status${q}`)).body[0].status, 'up');
  const deliveries = (await L.api('GET', `/uptime/webhook/deliveries${q}`)).body as { event: string; state: string }[];
  assert.deepEqual(deliveries.map((d) => [d.event, d.state]).sort(), [
    ['outage.opened', 'delivered'],
    ['outage.resolved', 'delivered'],
  ]);
});

test('one node that cannot reach the origin is not an outage; every node failing is', async () => {
  const name = 'partial.example.org';
  const www = `www.${name}`;
  assert.equal((await L.api('POST', '/domains/', { name })).status, 200);
  const rec = await L.api('POST', `/domains/${name}/records/`, {
    name: 'www',
    type: 'A',
    destination: '192.0.2.20',
    proxied: true,
    monitor: true,
  });
  assert.equal(rec.status, 200);
  // Defaults: 50%, 20 requests, open after 2 minutes. No webhook: nothing is delivered.
  const now = Date.now();
  const m = (ago: number) => now - (now % 60_000) - ago * 60_000;
  // The counts of a minute from every node are in before it is judged (nodes ship every 2 s; a minute is judged 10 s
  // after it ends); here the failing node's arrive last, after the first judgement of the domain.
  await ship('edge-b', [
    [m(6), www, 40, 0],
    [m(5), www, 40, 1],
  ]);
  await ship('edge-c', [
    [m(6), www, 40, 0],
    [m(5), www, 40, 0],
  ]);
  await ship('edge-a', [
    [m(6), www, 20, 20],
    [m(5), www, 20, 20],
  ]);
  // Past the detector's wait between two judgements of a domain (1 s here), it has judged them all: 20% and 21%.
  await new Promise((r) => setTimeout(r, 3000));
  assert.deepEqual((await L.api('GET', `/uptime/incidents/open?domain=${name}`)).body, []);
  for (const node of ['edge-a', 'edge-b', 'edge-c'])
    await ship(node, [
      [m(4), www, 30, 29],
      [m(3), www, 30, 30],
    ]);
  const open = await eventually('the incident when every node fails', async () => {
    const list = (await L.api('GET', `/uptime/incidents/open?domain=${name}`)).body as { started_at: string }[];
    return list.length === 1 ? list[0] : undefined;
  });
  assert.equal(Date.parse(open.started_at), m(4));
});

test('a path monitor: requests in its scope failing open an incident of that monitor, the rest of the host is fine', async () => {
  const name = 'paths.example.org';
  const www = `www.${name}`;
  assert.equal((await L.api('POST', '/domains/', { name })).status, 200);
  const mon = await L.api('POST', `/uptime/monitors?domain=${name}`, { name: 'API', path_includes: ['/api/*'] });
  assert.equal(mon.status, 200, JSON.stringify(mon.body));
  const now = Date.now();
  const m = (ago: number) => now - (now % 60_000) - ago * 60_000;
  const req = (t: number, path: string, status: number) => ({
    t,
    host: www,
    path,
    method: 'GET',
    status,
    bytes: 10,
    cache: '',
    rules: [],
    ms: 5,
    upstreamMs: 4,
    peer: '192.0.2.9',
  });
  const records = [m(5), m(4)].flatMap((minute) =>
    Array.from({ length: 30 }, (_, i) => [
      req(minute + i * 1000, `/api/items/${i}`, 503),
      req(minute + i * 1000, '/shop', 200),
    ]).flat(),
  );
  const shipped = await ship('edge-a', [], records);
  assert.equal(shipped.monitor_minutes, 2, 'one count per minute of the monitor; /shop is outside its scope');
  const incident = await eventually('the monitor incident', async () => {
    const list = (await L.api('GET', `/uptime/incidents/open?domain=${name}`)).body as {
      monitor_id: number | null;
      scope: string;
      hostname: string;
      peak_error_pct: number;
    }[];
    return list.length === 1 ? list[0] : undefined;
  });
  assert.deepEqual(
    [incident.monitor_id, incident.scope, incident.hostname, incident.peak_error_pct],
    [mon.body.id, 'API', www, 100],
  );
});

test('through a running edge: the origin fails, outage.opened arrives once; it recovers, outage.resolved once', async (t) => {
  const name = 'edge-outage.example.org';
  const www = `www.${name}`;
  const eq = `?domain=${name}`;
  const origin = await flippingOrigin('uptime-origin');
  t.after(() => origin.close());
  await watchedDomain(L, name, origin.port);
  const saved = await L.api('PUT', `/uptime/settings${eq}`, {
    webhook_url: `http://127.0.0.1:${port}/outages`,
    notify_webhook: true,
    min_requests_per_minute: 5,
    open_after_minutes: 1,
    resolve_after_minutes: 1,
  });
  assert.equal(saved.status, 200);
  const edge = await startEdgeNodeProcess({
    syncUrl: `ws://127.0.0.1:${syncPort}`,
    nodeToken: ensureNodeToken(L.dataDir),
    apiUrl: L.apiUrl,
  });
  t.after(() => edge.stop());
  await eventually('the edge to proxy the record', async () =>
    (await send(edge.httpPort, www, '/')).status === 200 ? true : undefined,
  );

  const mine = () => received.filter((r) => JSON.parse(r.body).domain === name);
  // Traffic through the edge, ten requests a second, for at most six minutes.
  let stop = false;
  const traffic = (async () => {
    for (let i = 0; i < 3600 && !stop; i++) {
      await send(edge.httpPort, www, `/p${i % 7}`, { timeoutMs: 5000 }).catch(() => undefined);
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  try {
    origin.failing = true;
    const firstFailure = Date.now();
    const opened = await eventually(
      'outage.opened through the edge',
      async () => (mine().length >= 1 ? mine()[0] : undefined),
      200_000,
    );
    const toOpened = Date.now() - firstFailure;
    const ob = JSON.parse(opened.body);
    assert.deepEqual([ob.event, ob.hostname, ob.monitor_id, ob.scope], ['outage.opened', www, null, '']);
    assert.ok(ob.peak_error_pct >= 50);
    origin.failing = false;
    const recovered = Date.now();
    const resolved = await eventually(
      'outage.resolved through the edge',
      async () => (mine().length >= 2 ? mine()[1] : undefined),
      200_000,
    );
    const rb = JSON.parse(resolved.body);
    assert.equal(rb.event, 'outage.resolved');
    assert.equal(rb.incident_id, ob.incident_id);
    assert.ok(Number.isInteger(rb.duration_sec) && rb.duration_sec >= 60, `duration_sec ${rb.duration_sec}`);
    console.log(
      `# uptime: first origin failure -> outage.opened ${Math.round(toOpened / 1000)} s; ` +
        `recovery -> outage.resolved ${Math.round((Date.now() - recovered) / 1000)} s (open/resolve after 1 minute)`,
    );
  } finally {
    stop = true;
    await traffic;
  }
  await new Promise((r) => setTimeout(r, 3000));
  assert.equal(mine().length, 2, 'each event once');
});
