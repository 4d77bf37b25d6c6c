// A saved analytics query's alert end to end: the control plane, a Temporal dev server and the workflows worker as
// processes, an alert evaluated every 2 seconds (ANALYTICS_ALERT_MIN_INTERVAL_SECONDS=2) by its workflow, and a
// webhook receiver on loopback (uptime-harness.ts: the worker may reach 127.0.0.0/8, as an operator allows an internal
// receiver). Request logs shipped as an edge node ships them cross the threshold: the feed and the receiver get the
// alert exactly once, signed; the control plane is restarted between evaluations and they go on, with no second
// notice while the value stays over the threshold.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { pack } from 'msgpackr';
import { ensureNodeToken } from '@platform/shared/node-token';
import { eventually, type Lifecycle } from '../helpers/workflows-harness.js';
import { lifecycleAdmin, type LifecycleAdmin } from '../helpers/lifecycle-admin.js';
import { assertSigned, startUptimeLifecycle, type Received, type UptimeLifecycle } from './uptime-harness.js';

const domain = 'alerts.example.org';
let U: UptimeLifecycle;
let L: Lifecycle;
let port = 0;
let received: Received[] = [];
let admin: LifecycleAdmin;

interface Evaluation {
  state: string;
  last_evaluated_at: string | null;
  last_value: number | null;
  last_error: string | null;
  fired_count: number;
}

before(async () => {
  U = await startUptimeLifecycle('analytics-alerts', { ANALYTICS_ALERT_MIN_INTERVAL_SECONDS: '2' });
  ({ L, receiverPort: port, received } = U);
  admin = lifecycleAdmin(L);
});
after(async () => {
  await admin?.close();
  await U?.close();
});

/** Ships request-log records as an edge node does (msgpack, the node token). */
async function ship(statuses: number[]): Promise<void> {
  const now = Date.now();
  const records = statuses.map((status, i) => ({
    t: now - i,
    host: `www.${domain}`,
    path: '/',
    method: 'GET',
    status,
    bytes: 10,
    cache: '',
    rules: [],
    ms: 1,
    upstreamMs: 1,
    peer: '192.0.2.9',
  }));
  const res = await fetch(`${L.apiUrl}/internal/request-logs`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-msgpack', authorization: `Bearer ${ensureNodeToken(L.dataDir)}` },
    body: pack({ node: 'edge-a', records }),
  });
  assert.equal(res.status, 200, await res.text());
}

test('an alert fires exactly once into the feed and the webhook when the logs cross it, across a restart', async () => {
  assert.equal((await L.api('POST', '/domains/', { name: domain })).status, 200);
  // analytics, logs and monitoring (the uptime webhook) are on the enterprise plan.
  await admin.run('plan', 'set', domain, 'enterprise');
  const saved = await L.api('PUT', `/uptime/settings?domain=${domain}`, {
    webhook_url: `http://127.0.0.1:${port}/alerts`,
  });
  assert.equal(saved.status, 200, JSON.stringify(saved.body));
  const secret = (await L.api('GET', `/uptime/webhook?domain=${domain}`)).body.signing_secret as string;
  await ship([200, 500]);

  const created = await L.api('POST', '/analytics/saved-queries', {
    name: 'server errors',
    query: 'SELECT count(*) FILTER (WHERE status >= 500) AS errors FROM logs',
    alert: { column: 'errors', op: '>', value: 3, interval_seconds: 2, webhook_domain: domain },
  });
  assert.equal(created.status, 200, JSON.stringify(created.body));
  const path = `/analytics/saved-queries/${created.body.id as number}`;
  const evaluation = async () => (await L.api('GET', path)).body.evaluation as Evaluation;
  /** The evaluation once one made after `since` (ms) is recorded. */
  const evaluatedAfter = (what: string, since: number) =>
    eventually(
      what,
      async () => {
        const e = await evaluation();
        return e.last_evaluated_at !== null && Date.parse(e.last_evaluated_at) > since ? e : undefined;
      },
      120_000,
    );
  const feed = async () =>
    (await L.api('GET', '/notifications?category=analytics')).body.notifications as {
      kind: string;
      data: Record<string, unknown>;
    }[];

  // The first evaluation: 1 error, under the threshold.
  const first = await evaluatedAfter('the first evaluation', 0);
  assert.deepEqual([first.state, first.last_value, first.fired_count, first.last_error], ['ok', 1, 0, null]);

  await ship([500, 500, 503]);
  const firing = await eventually(
    'the alert to fire',
    async () => {
      const e = await evaluation();
      return e.state === 'firing' ? e : undefined;
    },
    120_000,
  );
  assert.deepEqual([firing.last_value, firing.fired_count, firing.last_error], [4, 1, null]);
  const hook = await eventually('the alert at the receiver', async () => received[0], 120_000);
  assert.equal(hook.headers['x-service-event'], 'analytics.alert');
  assert.equal(hook.headers['user-agent'], 'Service-Uptime-Webhook/1');
  assertSigned(hook, secret);
  const body = JSON.parse(hook.body) as Record<string, unknown>;
  assert.deepEqual(Object.keys(body), [
    'event',
    'saved_query_id',
    'name',
    'domain',
    'column',
    'op',
    'threshold',
    'value',
    'evaluated_at',
    'sent_at',
  ]);
  assert.deepEqual(
    [body.event, body.saved_query_id, body.name, body.domain, body.column, body.op, body.threshold, body.value],
    ['analytics.alert', created.body.id, 'server errors', domain, 'errors', '>', 3, 4],
  );
  let notices = await feed();
  assert.deepEqual(
    notices.map((n) => [n.kind, n.data.value]),
    [['analytics.alert', 4]],
  );

  // More errors and a control-plane restart between evaluations: evaluations go on (the workflow's timer and the
  // state on the row survive it), the value rises, nothing is sent again while it stays over.
  await ship([500]);
  await L.restartControlPlane();
  const restartedAt = Date.now();
  await evaluatedAfter('an evaluation after the restart', restartedAt);
  const later = await eventually(
    'two evaluations after the restart',
    async () => {
      const e = await evaluation();
      return Date.parse(e.last_evaluated_at!) > restartedAt + 2000 ? e : undefined;
    },
    120_000,
  );
  assert.deepEqual([later.state, later.last_value, later.fired_count, later.last_error], ['firing', 5, 1, null]);
  notices = await feed();
  assert.equal(notices.length, 1, 'one notice');
  assert.equal(received.length, 1, 'one webhook delivery');
  const deliveries = (await L.api('GET', `/uptime/webhook/deliveries?domain=${domain}`)).body as {
    event: string;
    state: string;
  }[];
  assert.deepEqual(
    deliveries.map((d) => [d.event, d.state]),
    [['analytics.alert', 'delivered']],
  );

  // Deleting the saved query ends its workflow.
  assert.equal((await L.api('DELETE', path)).status, 200);
  const handle = L.temporal.client.workflow.getHandle(`analytics-alert:${created.body.id as number}`);
  assert.equal(await handle.result(), 'deleted');
});
