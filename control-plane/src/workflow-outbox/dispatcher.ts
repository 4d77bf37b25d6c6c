// The workflow dispatcher: starts what writes recorded in the outbox, at once when this process's writes nudge it
// and on a poll for the rest (other processes' entries, retries, claims of a process that died). While Temporal is
// unreachable every attempt fails fast and the entry waits with exponential backoff; nothing is lost across restarts
// because an entry is deleted only after Temporal accepted it. Every control-plane process runs one.
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { Logger } from 'pino';
import type { Db } from '../db/index.js';
import { lazyTemporalClient } from '../plugins/temporal-client.js';
import type { TemporalConfig } from '../plugins/temporal-config.js';
import { claimDueEntries, completeEntry, retryEntryLater, type OutboxEntry, type WorkflowOutbox } from './outbox.js';

/** Entries claimed per round. */
const BATCH = 32;
/** A claim outlives any round: a connect attempt (3 s) plus one call per entry, each within CALL_DEADLINE_MS. */
const LEASE_MS = 5 * 60_000;
const CALL_DEADLINE_MS = 5_000;

export interface DispatcherOptions {
  db: Db;
  outbox: WorkflowOutbox;
  temporal: TemporalConfig;
  log: Logger;
}

export interface WorkflowDispatcher {
  /** Resolves when no round is running and nothing is queued for one (tests, shutdown). */
  idle(): Promise<void>;
  close(): Promise<void>;
}

/** Delay before attempt `attempts + 1`: doubling from initialMs up to maxMs, with ±20 % jitter. */
export function retryDelayMs(attempts: number, backoff: { initialMs: number; maxMs: number }): number {
  const base = Math.min(backoff.maxMs, backoff.initialMs * 2 ** Math.min(attempts, 30));
  return Math.round(base * (0.8 + Math.random() * 0.4));
}

async function dispatch(client: Client, taskQueue: string, e: OutboxEntry): Promise<void> {
  const options = {
    taskQueue,
    workflowId: e.workflowId,
    args: e.args,
    workflowIdConflictPolicy: e.conflictPolicy === 'terminate-existing' ? 'TERMINATE_EXISTING' : 'USE_EXISTING',
    workflowIdReusePolicy: 'ALLOW_DUPLICATE',
  } as const;
  await client.withDeadline(Date.now() + CALL_DEADLINE_MS, async () => {
    if (e.kind === 'start') {
      await client.workflow.start(e.workflowType, options);
    } else if (e.kind === 'signal-with-start') {
      await client.workflow.signalWithStart(e.workflowType, {
        ...options,
        signal: e.signal!,
        signalArgs: e.signalArgs ?? [],
      });
    } else {
      try {
        await client.workflow.getHandle(e.workflowId).signal(e.signal!, ...(e.signalArgs ?? []));
      } catch (err) {
        // Not running (finished or never started): there is nothing to signal.
        if (!(err instanceof WorkflowNotFoundError)) throw err;
      }
    }
  });
}

export function startWorkflowDispatcher(opts: DispatcherOptions): WorkflowDispatcher {
  const { db, log } = opts;
  const temporal = lazyTemporalClient(opts.temporal);
  let closed = false;
  let running: Promise<void> | null = null;
  let again = false;

  /** One pass: claim due entries, start them, repeat while full batches come back. */
  const round = async () => {
    for (;;) {
      const entries = await claimDueEntries(db, BATCH, LEASE_MS);
      if (entries.length === 0) return;
      const backoff = opts.temporal.startRetryBackoff;
      let client: Client;
      try {
        client = await temporal.get();
      } catch (err) {
        // One line for the round, not one per entry: they all wait for the same thing.
        log.warn({ err, entries: entries.length }, 'could not start workflows: Temporal is unreachable; retrying');
        const message = err instanceof Error ? err.message : String(err);
        for (const e of entries) await retryEntryLater(db, e, retryDelayMs(e.attempts, backoff), message);
        return;
      }
      await Promise.all(
        entries.map(async (e) => {
          try {
            await dispatch(client, opts.temporal.taskQueue, e);
            await completeEntry(db, e.id);
          } catch (err) {
            const delay = retryDelayMs(e.attempts, backoff);
            log.warn(
              { err, workflowId: e.workflowId, attempts: e.attempts + 1, retryInMs: delay },
              'could not start a workflow; retrying',
            );
            await retryEntryLater(db, e, delay, err instanceof Error ? err.message : String(err));
          }
        }),
      );
      if (entries.length < BATCH) return;
    }
  };

  const run = () => {
    if (closed) return;
    if (running) {
      again = true;
      return;
    }
    running = (async () => {
      do {
        again = false;
        await round().catch((err: unknown) => log.error({ err }, 'workflow dispatch round failed'));
      } while (again && !closed);
    })().finally(() => {
      running = null;
    });
  };

  const stopListening = opts.outbox.onNudge(run);
  const poll = setInterval(run, opts.temporal.dispatchPollMs);
  poll.unref();
  run();

  return {
    async idle() {
      while (running) await running;
    },
    async close() {
      closed = true;
      clearInterval(poll);
      stopListening();
      while (running) await running;
      await temporal.close();
    },
  };
}
