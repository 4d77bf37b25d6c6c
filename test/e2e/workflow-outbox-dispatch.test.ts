// The workflow outbox end to end: domains are added while nothing listens on TEMPORAL_ADDRESS (no Temporal, no
// worker) and the API answers; the control plane is restarted while their workflows wait; then Temporal and the
// worker start on that address and every workflow runs: the zone scan imports the old DNS, the delegation watch
// activates the managed domain, the verification watch verifies the external one, developer mode expires.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { eventually, startLifecycle, type Lifecycle } from '../helpers/workflows-harness.js';

const OURS = ['ns1.platform.test', 'ns2.platform.test'];
const OLD = ['a.iana-servers.net', 'b.iana-servers.net'];

let L: Lifecycle;

before(async () => {
  L = await startLifecycle(
    'wf-outbox',
    {
      DELEGATION_WATCH_FIRST_SECONDS: '1',
      DELEGATION_WATCH_MAX_SECONDS: '2',
      VERIFICATION_WATCH_FIRST_SECONDS: '1',
      VERIFICATION_WATCH_MAX_SECONDS: '2',
      DEVELOPER_MODE_SECONDS: '2',
      // Failed starts are retried soon, so the test does not wait out a long backoff once Temporal is up.
      WORKFLOW_START_RETRY_MAX_SECONDS: '2',
    },
    { temporalDown: true },
  );
});
after(async () => {
  await L?.close();
});

test('writes made while Temporal is down answer at once; their workflows run once it is up, across a restart', async () => {
  const managed = 'outbox-managed.example.org';
  const external = 'outbox-external.example.org';
  for (const s of [L.dns, L.dns2]) {
    s.delegate(managed, OLD);
    s.set(managed, 'A', ['192.0.2.10']);
    s.set(`www.${managed}`, 'A', ['192.0.2.11']);
  }

  // Nothing listens on TEMPORAL_ADDRESS: these complete only because no request waits for Temporal.
  const created = await L.api('POST', '/domains/', { name: managed });
  assert.equal(created.status, 200);
  assert.equal(created.body.state, 'pending');
  const ext = await L.api('POST', '/domains/', { name: external, dns_mode: 'external' });
  assert.equal(ext.status, 200);
  const dev = await L.api('POST', `/domains/${managed}/developer-mode`);
  assert.equal(dev.body.enabled, true);

  // The dispatcher has tried and failed; a restart of the control plane keeps what it has not started yet.
  await eventually('a failed start attempt in the log', async () =>
    L.controlPlaneOutput().includes('Temporal is unreachable') ? true : undefined,
  );
  await L.restartControlPlane();
  assert.equal((await L.api('GET', `/domains/${managed}/records/`)).body.length, 0, 'no scan ran yet');

  await L.startTemporal();
  for (const s of [L.dns, L.dns2]) {
    s.delegate(managed, OURS);
    s.set(ext.body.verification.name, 'TXT', [ext.body.verification.value]);
  }
  await eventually('the zone scan to import the old records', async () => {
    const r = await L.api('GET', `/domains/${managed}/records/`);
    return r.body.length >= 2 ? true : undefined;
  });
  await eventually('the delegation watch to activate the managed domain', async () =>
    (await L.api('GET', `/domains/${managed}`)).body.state === 'active' ? true : undefined,
  );
  await eventually('the verification watch to verify the external domain', async () =>
    (await L.api('GET', `/domains/${external}`)).body.state === 'active' ? true : undefined,
  );
  await eventually('developer mode to expire', async () =>
    (await L.api('GET', `/domains/${managed}`)).body.developer_mode === false ? true : undefined,
  );
  // The scan ran once, under its deterministic id (visibility may lag behind the run).
  const scans = await eventually('the zone scan in the workflow list', async () => {
    let count = 0;
    for await (const run of L.temporal.client.workflow.list({ query: `WorkflowId = 'zone-scan:${managed}'` })) {
      if (run.workflowId) count++;
    }
    return count > 0 ? count : undefined;
  });
  assert.equal(scans, 1);
});
