// The workflow outbox: a write records the workflow starts it needs in its own transaction and answers at once;
// the dispatcher (dispatcher.ts) starts them. Nothing here talks to Temporal.
import { and, eq, inArray, isNull, lt, notExists, or, sql } from 'drizzle-orm';
import { alias } from 'drizzle-orm/pg-core';
import type { Db, Tx } from '../db/index.js';
import { workflowOutbox } from '../db/schema.js';

/** One thing to ask of Temporal. Ids are deterministic (`<purpose>:<domain>`), so doing it twice is harmless. */
export interface WorkflowStart {
  workflowId: string;
  /** start: start the workflow; signal-with-start: signal it, starting it first if needed; signal: signal a running one (none running: nothing to do). */
  kind: 'start' | 'signal-with-start' | 'signal';
  workflowType: string;
  args: unknown[];
  /** A run that is already open: attach to it (default) or replace it. */
  conflictPolicy?: 'use-existing' | 'terminate-existing';
  signal?: string;
  signalArgs?: unknown[];
}

export type OutboxEntry = typeof workflowOutbox.$inferSelect;

/** Records `starts` in the caller's transaction; call `WorkflowOutbox.nudge()` after it commits. */
export async function enqueueWorkflows(tx: Tx | Db, starts: readonly WorkflowStart[]): Promise<void> {
  if (starts.length === 0) return;
  await tx.insert(workflowOutbox).values(
    starts.map((s) => ({
      workflowId: s.workflowId,
      kind: s.kind,
      workflowType: s.workflowType,
      args: s.args,
      conflictPolicy: s.conflictPolicy ?? 'use-existing',
      signal: s.signal ?? null,
      signalArgs: s.signalArgs ?? null,
    })),
  );
}

/** Records each start unless an entry for its workflow id is already waiting (the watches ensured at start-up). */
export async function enqueueMissingWorkflows(db: Db, starts: readonly WorkflowStart[]): Promise<number> {
  if (starts.length === 0) return 0;
  const waiting = await db
    .select({ workflowId: workflowOutbox.workflowId })
    .from(workflowOutbox)
    .where(
      inArray(
        workflowOutbox.workflowId,
        starts.map((s) => s.workflowId),
      ),
    );
  const have = new Set(waiting.map((w) => w.workflowId));
  const missing = starts.filter((s) => !have.has(s.workflowId));
  await enqueueWorkflows(db, missing);
  return missing.length;
}

/**
 * Claims up to `limit` due entries for `leaseMs` (another dispatcher skips them until then; a crashed one's claim
 * lapses). Only the oldest entry of each workflow id is due, so one id's starts and signals keep their order.
 */
export async function claimDueEntries(db: Db, limit: number, leaseMs: number): Promise<OutboxEntry[]> {
  const older = alias(workflowOutbox, 'older');
  const due = db
    .select({ id: workflowOutbox.id })
    .from(workflowOutbox)
    .where(
      and(
        sql`${workflowOutbox.notBefore} <= now()`,
        or(isNull(workflowOutbox.claimedUntil), lt(workflowOutbox.claimedUntil, sql`now()`)),
        notExists(
          db
            .select({ one: sql`1` })
            .from(older)
            .where(and(eq(older.workflowId, workflowOutbox.workflowId), lt(older.id, workflowOutbox.id))),
        ),
      ),
    )
    .orderBy(workflowOutbox.id)
    .limit(limit)
    .for('update', { skipLocked: true });
  return db
    .update(workflowOutbox)
    .set({ claimedUntil: sql`now() + make_interval(secs => ${leaseMs / 1000})` })
    .where(inArray(workflowOutbox.id, due))
    .returning();
}

/** The entry reached Temporal: it is done. */
export async function completeEntry(db: Db, id: number): Promise<void> {
  await db.delete(workflowOutbox).where(eq(workflowOutbox.id, id));
}

/** The entry did not reach Temporal: try again after `delayMs`. */
export async function retryEntryLater(db: Db, entry: OutboxEntry, delayMs: number, error: string): Promise<void> {
  await db
    .update(workflowOutbox)
    .set({
      attempts: entry.attempts + 1,
      notBefore: sql`now() + make_interval(secs => ${delayMs / 1000})`,
      claimedUntil: null,
      lastError: error.slice(0, 1000),
    })
    .where(eq(workflowOutbox.id, entry.id));
}

/** Tells the dispatcher of this process that entries were committed, so it starts them without waiting for its poll. */
export class WorkflowOutbox {
  private readonly listeners = new Set<() => void>();

  nudge(): void {
    for (const l of this.listeners) l();
  }

  /** Registers a nudge listener (the dispatcher); returns the function that removes it. */
  onNudge(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
