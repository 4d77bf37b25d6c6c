// The workflow outbox's store against a real database: claims, order per workflow id, retries, lapsed claims, and
// the start-up ensure that does not queue a second entry for a waiting workflow.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { eq } from 'drizzle-orm';
import { createFastTestDatabase } from '../../../test/helpers/fast-database.js';
import { eventually } from '../../../test/helpers/workflows-harness.js';
import { openDatabase } from '../db/index.js';
import { workflowOutbox } from '../db/schema.js';
import { retryDelayMs } from './dispatcher.js';
import {
  claimDueEntries,
  completeEntry,
  enqueueMissingWorkflows,
  enqueueWorkflows,
  retryEntryLater,
  type WorkflowStart,
} from './outbox.js';

async function setup(t: TestContext) {
  const tdb = await createFastTestDatabase('outbox');
  const database = await openDatabase(tdb);
  t.after(async () => {
    await database.close();
    await tdb.drop();
  });
  return database.db;
}

const start = (workflowId: string, n = 0): WorkflowStart => ({
  kind: 'start',
  workflowType: 'watchDelegation',
  workflowId,
  args: [{ n }],
});

test('only the oldest entry of a workflow id is due; it stays claimed until completed or retried', async (t) => {
  const db = await setup(t);
  await enqueueWorkflows(db, [start('a:x', 1), start('b:x', 1), start('a:x', 2)]);
  const first = await claimDueEntries(db, 10, 60_000);
  assert.deepEqual(
    first.map((e) => [e.workflowId, e.args]),
    [
      ['a:x', [{ n: 1 }]],
      ['b:x', [{ n: 1 }]],
    ],
  );
  assert.deepEqual(await claimDueEntries(db, 10, 60_000), [], 'claimed entries are not handed out twice');

  // A failed attempt waits its delay, then the same entry comes back (the second a:x still waits behind it).
  const a1 = first[0]!;
  await retryEntryLater(db, a1, 0, 'connection refused');
  const again = await claimDueEntries(db, 10, 60_000);
  assert.deepEqual(
    again.map((e) => [e.id, e.attempts, e.lastError]),
    [[a1.id, 1, 'connection refused']],
  );
  await completeEntry(db, a1.id);
  assert.deepEqual(
    (await claimDueEntries(db, 10, 60_000)).map((e) => [e.workflowId, e.args]),
    [['a:x', [{ n: 2 }]]],
  );

  // An entry whose retry is not due yet is not handed out.
  const [b1] = first.slice(1);
  await retryEntryLater(db, b1!, 60_000, 'deadline exceeded');
  assert.deepEqual(await claimDueEntries(db, 10, 60_000), []);
});

test('a claim that lapses (its dispatcher died) is handed out again', async (t) => {
  const db = await setup(t);
  await enqueueWorkflows(db, [start('c:x')]);
  const [claimed] = await claimDueEntries(db, 10, 50);
  assert.ok(claimed);
  const reclaimed = await eventually('the claim to lapse', async () => {
    const [e] = await claimDueEntries(db, 10, 60_000);
    return e;
  });
  assert.equal(reclaimed.id, claimed.id);
});

test('the start-up ensure queues a watch only when none waits for that workflow id', async (t) => {
  const db = await setup(t);
  await enqueueWorkflows(db, [start('domain-delegation:a.example.org')]);
  const added = await enqueueMissingWorkflows(db, [
    start('domain-delegation:a.example.org', 9),
    start('domain-delegation:b.example.org', 9),
  ]);
  assert.equal(added, 1);
  const rows = await db
    .select()
    .from(workflowOutbox)
    .where(eq(workflowOutbox.workflowId, 'domain-delegation:a.example.org'));
  assert.equal(rows.length, 1);
});

test('retry delays double from the first up to the maximum, with jitter', () => {
  const backoff = { initialMs: 1000, maxMs: 60_000 };
  for (const [attempts, base] of [
    [0, 1000],
    [1, 2000],
    [5, 32_000],
    [6, 60_000],
    [100, 60_000],
  ] as const) {
    const d = retryDelayMs(attempts, backoff);
    assert.ok(d >= base * 0.8 && d <= base * 1.2, `${attempts}: ${d}`);
  }
});
