// Durability: the worker is stopped while a delegation check waits on its backoff timer and while developer mode
// waits for its expiry; nothing happens while it is down, and once it is started again both workflows complete.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { eventually, startLifecycle, type Lifecycle } from '../helpers/workflows-harness.js';

let L: Lifecycle;

before(async () => {
  L = await startLifecycle('wf-restart', {
    DELEGATION_WATCH_FIRST_SECONDS: '3',
    DELEGATION_WATCH_MAX_SECONDS: '3',
    DEVELOPER_MODE_SECONDS: '8',
  });
});
after(async () => {
  await L?.close();
});

/** Waits until the workflow's history holds a started timer (it is sleeping, not running an activity). */
async function waitingOnTimer(workflowId: string) {
  return eventually(`${workflowId} to wait on a timer`, async () => {
    const history = await L.temporal.client.workflow.getHandle(workflowId).fetchHistory();
    return history.events?.some((e) => e.timerStartedEventAttributes) ? true : undefined;
  });
}

test('a stopped worker resumes a delegation check and a developer-mode expiry where they waited', async () => {
  const d = 'durable.example.org';
  const devDomain = 'devdurable.example.org';
  for (const s of [L.dns, L.dns2]) {
    s.delegate(d, ['a.iana-servers.net', 'b.iana-servers.net']);
    s.delegate(devDomain, ['a.iana-servers.net', 'b.iana-servers.net']);
  }
  assert.equal((await L.api('POST', '/domains/', { name: d })).body.state, 'pending');
  assert.equal((await L.api('POST', '/domains/', { name: devDomain })).status, 200);
  const on = await L.api('POST', `/domains/${devDomain}/developer-mode`);
  assert.equal(on.body.enabled, true);
  await waitingOnTimer(`domain-delegation:${d}`);
  await waitingOnTimer(`developer-mode:${devDomain}`);

  await L.stopWorker();
  for (const s of [L.dns, L.dns2]) s.delegate(d, ['ns1.platform.test', 'ns2.platform.test']);
  // Past both timers while no worker runs: nothing changes.
  const expiry = Date.parse(on.body.expires_at);
  await new Promise((r) => setTimeout(r, Math.max(4000, expiry - Date.now() + 500)));
  assert.equal((await L.api('GET', `/domains/${d}`)).body.state, 'pending');
  assert.notEqual((await L.internal('GET', `/internal/domains/${devDomain}`)).body.developer_mode_until, null);

  await L.startWorker();
  assert.equal(await L.temporal.client.workflow.getHandle(`domain-delegation:${d}`).result(), 'active');
  assert.equal(await L.temporal.client.workflow.getHandle(`developer-mode:${devDomain}`).result(), 'off');
  assert.equal((await L.api('GET', `/domains/${d}`)).body.state, 'active');
  assert.equal((await L.internal('GET', `/internal/domains/${devDomain}`)).body.developer_mode_until, null);
  const detail = (await L.api('GET', `/domains/${devDomain}`)).body;
  assert.deepEqual([detail.developer_mode, detail.developer_mode_expires_at], [false, null]);
});
