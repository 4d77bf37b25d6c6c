// The delivery activity against a stub control plane and a receiver on loopback: a name is resolved, checked and
// connected to by address (localhost refused without ALLOWED_PRIVATE_NETWORKS, delivered with it), the control
// plane's own address stays refused inside the allowlist, a settled delivery is not sent again.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import { parseNetworks } from '@platform/shared/address-policy';
import { createWebhookActivities, webhookBody } from './webhook-activities.js';
import { webhookSignature } from './sign.js';

async function listen(handler: Parameters<typeof createServer>[1]) {
  const server = createServer(handler);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, port: (server.address() as { port: number }).port };
}

test('sendUptimeWebhook: names are checked on the address connected to; the platform itself is never a target', async (t) => {
  const got: { headers: IncomingHttpHeaders; body: string }[] = [];
  const rx = await listen((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      got.push({ headers: req.headers, body });
      res.writeHead(204).end();
    });
  });
  t.after(() => rx.server.close());
  let delivery = { url: '', state: 'pending' };
  const payload = { event: 'test', incident_id: 0, domain: 'example.org', hostname: 'example.org', monitor_id: null };
  const cp = await listen((req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ id: 1, ...delivery, payload, signing_secret: 'whsec_test' }));
  });
  t.after(() => cp.server.close());
  const deps = { controlPlaneUrl: `http://127.0.0.1:${cp.port}`, nodeToken: 'tok' };
  const closed = createWebhookActivities({ ...deps, allowedPrivateNetworks: [] });
  const allowed = createWebhookActivities({
    ...deps,
    allowedPrivateNetworks: parseNetworks('127.0.0.0/8').ranges,
  });

  delivery = { url: `http://localhost:${rx.port}/in`, state: 'pending' };
  const refused = await closed.sendUptimeWebhook(1, 1);
  assert.equal(refused?.outcome, 'refused');
  assert.match(String(refused?.error), /^refused: localhost resolves to (127\.0\.0\.1|::1), a loopback address$/);
  assert.equal(got.length, 0);

  const ok = await allowed.sendUptimeWebhook(1, 1);
  assert.deepEqual([ok?.outcome, ok?.status_code, ok?.error], ['success', 204, null]);
  // The schedule the workflow sleeps: the spec's 5 s and 30 s unless the worker is given others.
  assert.deepEqual(ok?.retryDelaysMs, [5_000, 30_000]);
  const shortened = createWebhookActivities({ ...deps, allowedPrivateNetworks: [], retryDelaysMs: [100, 200] });
  assert.deepEqual((await shortened.sendUptimeWebhook(1, 1))?.retryDelaysMs, [100, 200]);
  assert.equal(got.length, 1);
  assert.equal(got[0].headers.host, `localhost:${rx.port}`, 'the Host header keeps the name');
  const ts = Number(got[0].headers['x-service-timestamp']);
  assert.equal(got[0].body, webhookBody(payload, ts));
  assert.equal(got[0].headers['x-service-signature'], webhookSignature('whsec_test', ts, got[0].body));

  delivery = { url: `http://127.0.0.1:${cp.port}/internal/request-logs`, state: 'pending' };
  const self = await allowed.sendUptimeWebhook(1, 1);
  assert.equal(self?.outcome, 'refused');
  assert.equal(self?.error, `refused: 127.0.0.1 is an address of the platform itself (port ${cp.port})`);

  delivery = { url: `http://127.0.0.1:${rx.port}/in`, state: 'delivered' };
  assert.equal(await allowed.sendUptimeWebhook(1, 2), null, 'a settled delivery is not sent again');
  assert.equal(got.length, 1);
});

test('webhookBody: the spec fields only, missing ones null, sent_at last and from the timestamp', () => {
  const body = JSON.parse(webhookBody({ duration_sec: 5, event: 'outage.resolved', extra: 1 }, 1_764_075_600));
  // The order of the fields is checked on the wire (test/e2e/uptime-webhooks.test.ts).
  assert.equal(Object.keys(body).at(-1), 'sent_at');
  assert.equal('extra' in body, false);
  assert.equal(body.incident_id, null);
  assert.equal(body.duration_sec, 5);
  assert.equal(body.sent_at, '2025-11-25T13:00:00.000Z');
});

test("webhookBody of a saved query's alert: its own fields, none of an outage's", () => {
  const payload = {
    event: 'analytics.alert',
    saved_query_id: 7,
    name: '5xx',
    domain: 'example.org',
    column: 'errors',
    op: '>',
    threshold: 100,
    value: 131,
    evaluated_at: '2025-11-25T12:59:58.000Z',
    incident_id: 3,
  };
  const body = JSON.parse(webhookBody(payload, 1_764_075_600));
  const { incident_id: _, ...fields } = payload;
  assert.deepEqual(body, { ...fields, sent_at: '2025-11-25T13:00:00.000Z' });
  assert.deepEqual(Object.keys(body), [...Object.keys(fields), 'sent_at']);
});
