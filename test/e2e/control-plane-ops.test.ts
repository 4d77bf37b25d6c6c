// GET /, /healthz, /readyz and /metrics on the API (issue 9, item 7): no key, JSON or Prometheus text, documented in
// the OpenAPI document, counted against the client address's budget, and metrics that move with the requests.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { freePort } from '../helpers/free-port.js';
import { startTestControlPlane } from '../helpers/control-plane.js';

/** The value of one series (`name{labels}`) in Prometheus text, or undefined. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

test('GET / answers without a key, with links to the reference, the document and the health endpoints', async (t) => {
  const cp = await startTestControlPlane(t);
  const res = await cp.call(null, 'GET', '/');
  assert.equal(res.statusCode, 200);
  const body = res.json<Record<string, string>>();
  assert.equal(body.docs, '/docs');
  assert.equal(body.openapi, '/openapi.json');
  assert.equal(body.healthz, '/healthz');
  assert.equal(body.readyz, '/readyz');
  assert.match(body.authentication, /Authorization: Bearer/);
  // /health, the name people try first, answers like /healthz.
  assert.deepEqual((await cp.call(null, 'GET', '/health')).json(), { status: 'alive' });
  // A wrong key does not turn a public route into 401.
  assert.equal((await cp.call('svc_wrong', 'GET', '/healthz')).statusCode, 200);
});

test('GET /healthz and /readyz: alive, and ready naming each check; 503 naming Temporal when it does not answer', async (t) => {
  const cp = await startTestControlPlane(t);
  const alive = await cp.call(null, 'GET', '/healthz');
  assert.equal(alive.statusCode, 200);
  assert.match(String(alive.headers['content-type']), /^application\/json/);
  assert.deepEqual(alive.json(), { status: 'alive' });

  const ready = await cp.call(null, 'GET', '/readyz');
  assert.equal(ready.statusCode, 200);
  const report = ready.json<{
    status: string;
    failing: string[];
    checks: Record<string, { ready: boolean; detail: string }>;
  }>();
  assert.equal(report.status, 'ready');
  assert.deepEqual(report.failing, []);
  assert.equal(report.checks.database?.ready, true);
  assert.match(report.checks.temporal?.detail ?? '', /not configured/);

  // Temporal configured on a port where nothing listens.
  const closedPort = await freePort();
  const app = await cp.withEnv({ TEMPORAL_ADDRESS: `127.0.0.1:${closedPort}` });
  const down = await app.inject({ method: 'GET', url: '/readyz' });
  assert.equal(down.statusCode, 503);
  assert.match(String(down.headers['content-type']), /^application\/json/);
  const why = down.json<typeof report>();
  assert.equal(why.status, 'not ready');
  assert.deepEqual(why.failing, ['temporal']);
  assert.equal(why.checks.database?.ready, true);
  assert.match(why.checks.temporal?.detail ?? '', new RegExp(`127\\.0\\.0\\.1:${closedPort}|no answer within`));
});

test('GET /metrics: Prometheus text whose request counter, latency and config-log head move', async (t) => {
  const cp = await startTestControlPlane(t);
  const u = await cp.user();
  const scrape = async () => {
    const res = await cp.call(null, 'GET', '/metrics');
    assert.equal(res.statusCode, 200);
    assert.match(String(res.headers['content-type']), /^text\/plain; version=0\.0\.4/);
    return res.body;
  };
  const series = 'control_plane_http_requests_total{method="POST",route="/domains/",status_code="200"}';
  const before = await scrape();
  assert.equal(sample(before, series), undefined);
  const head0 = sample(before, 'control_plane_config_log_head_version');
  assert.equal(typeof head0, 'number');
  assert.equal(sample(before, 'control_plane_sync_connected_nodes'), 0);
  assert.equal(typeof sample(before, 'control_plane_workflow_outbox_backlog'), 'number');
  assert.match(before, /^process_cpu_user_seconds_total /m);

  await cp.domain(u.key, 'metrics.example.org');
  const after = await scrape();
  assert.equal(sample(after, series), 1);
  assert.equal(
    sample(
      after,
      'control_plane_http_request_duration_seconds_count{method="POST",route="/domains/",status_code="200"}',
    ),
    1,
  );
  assert.ok(sample(after, 'control_plane_config_log_head_version')! > head0!, 'the head moved');
  // Paths no route matched share one label (their number is unbounded).
  await cp.call(u.key, 'GET', '/no/such/route');
  assert.equal(
    sample(await scrape(), 'control_plane_http_requests_total{method="GET",route="unmatched",status_code="404"}'),
    1,
  );
});

test('the public endpoints count against the client address, and are in the OpenAPI document without a key', async (t) => {
  const cp = await startTestControlPlane(t);
  const app = await cp.withEnv({ RATE_LIMIT_ANONYMOUS_PER_MINUTE: '3' });
  const statuses: number[] = [];
  for (const url of ['/healthz', '/readyz', '/metrics', '/']) statuses.push((await app.inject({ url })).statusCode);
  assert.deepEqual(statuses, [200, 200, 200, 429]);

  const doc = (await cp.call(null, 'GET', '/openapi.json')).json<{
    paths: Record<
      string,
      { get: { security?: unknown[]; responses: Record<string, { content?: Record<string, unknown> }> } }
    >;
  }>();
  for (const path of ['/', '/healthz', '/readyz', '/metrics']) {
    assert.deepEqual(doc.paths[path]?.get.security, [], `${path} takes no key`);
    assert.ok(doc.paths[path]!.get.responses['429'], `${path} documents 429`);
  }
  assert.ok(doc.paths['/readyz']!.get.responses['503'], '/readyz documents 503');
  assert.ok(doc.paths['/metrics']!.get.responses['200']!.content!['text/plain']);
});
