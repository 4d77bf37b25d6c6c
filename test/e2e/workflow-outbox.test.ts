// Starting workflows never blocks a write: the API records the workflows a write needs in the workflow outbox, in
// the write's transaction, and never talks to Temporal while answering. TEMPORAL_ADDRESS points at a listener that
// accepts connections and never answers (a Temporal that hangs): no request may even connect to it. The dispatcher
// (started by main.ts, not by build()) is tested in workflow-outbox-dispatch.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Socket } from 'node:net';
import { asc, eq } from 'drizzle-orm';
import { startTestControlPlane } from '../helpers/control-plane.js';
import { domains, workflowOutbox } from '../../control-plane/src/db/schema.js';

test('writes record their workflows in the outbox and answer without connecting to Temporal', async (t) => {
  const held: Socket[] = [];
  const hang = createServer((socket) => held.push(socket));
  await new Promise<void>((r) => hang.listen(0, '127.0.0.1', r));
  t.after(() => {
    for (const s of held) s.destroy();
    hang.close();
  });
  const { port } = hang.address() as { port: number };
  const cp = await startTestControlPlane(t, { TEMPORAL_ADDRESS: `127.0.0.1:${port}` });
  const owner = await cp.user();
  const db = cp.database.db;
  const entries = async (domain: string) =>
    (
      await db
        .select({
          workflowId: workflowOutbox.workflowId,
          kind: workflowOutbox.kind,
          type: workflowOutbox.workflowType,
          policy: workflowOutbox.conflictPolicy,
          signal: workflowOutbox.signal,
        })
        .from(workflowOutbox)
        .orderBy(asc(workflowOutbox.id))
    ).filter((e) => e.workflowId.endsWith(`:${domain}`));

  const managed = 'outbox.example.org';
  assert.equal((await cp.call(owner.key, 'POST', '/domains/', { name: managed })).statusCode, 200);
  assert.deepEqual(await entries(managed), [
    {
      workflowId: `domain-delegation:${managed}`,
      kind: 'start',
      type: 'watchDelegation',
      policy: 'use-existing',
      signal: null,
    },
    {
      workflowId: `zone-scan:${managed}`,
      kind: 'start',
      type: 'scanAndImportZone',
      policy: 'use-existing',
      signal: null,
    },
  ]);

  const external = 'outbox-ext.example.org';
  assert.equal(
    (await cp.call(owner.key, 'POST', '/domains/', { name: external, dns_mode: 'external' })).statusCode,
    200,
  );
  // A dns_mode switch starts proof of control over: a new verification watch replaces any old one.
  assert.equal((await cp.call(owner.key, 'PUT', `/domains/${external}`, { dns_mode: 'managed' })).statusCode, 200);
  assert.equal((await cp.call(owner.key, 'PUT', `/domains/${external}`, { dns_mode: 'external' })).statusCode, 200);
  assert.deepEqual(
    (await entries(external)).map((e) => [e.workflowId, e.policy]),
    [
      [`domain-verification:${external}`, 'terminate-existing'],
      [`domain-delegation:${external}`, 'use-existing'],
      [`zone-scan:${external}`, 'use-existing'],
      [`domain-verification:${external}`, 'terminate-existing'],
    ],
  );

  // Developer mode on, then off: the expiry workflow is armed, then stopped, in that order.
  assert.equal((await cp.call(owner.key, 'POST', `/domains/${managed}/developer-mode`)).statusCode, 200);
  assert.equal((await cp.call(owner.key, 'DELETE', `/domains/${managed}/developer-mode`)).statusCode, 200);
  assert.deepEqual(
    (await entries(managed)).slice(2).map((e) => [e.workflowId, e.kind, e.signal]),
    [
      [`developer-mode:${managed}`, 'signal-with-start', 'extendDeveloperMode'],
      [`developer-mode:${managed}`, 'signal', 'stopDeveloperMode'],
    ],
  );

  // Enable of a disabled managed domain restarts its delegation watch (replacing a run that may be finishing).
  await db.update(domains).set({ state: 'disabled' }).where(eq(domains.name, managed));
  assert.equal((await cp.call(owner.key, 'POST', `/domains/${managed}/enable`)).statusCode, 200);
  assert.deepEqual((await entries(managed)).at(-1), {
    workflowId: `domain-delegation:${managed}`,
    kind: 'start',
    type: 'watchDelegation',
    policy: 'terminate-existing',
    signal: null,
  });

  // None of these requests waited for Temporal: none connected to it.
  assert.equal(held.length, 0);
});
