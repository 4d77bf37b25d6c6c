// The one write path for anything nodes serve: lock the domain row, read it under the lock, change, append ONE
// config-log entry (and the workflows the change needs, in the outbox), commit, nudge the hub. Every area calls
// changeDomain (or addDomain for a new domain); none opens its own transaction around a change of what nodes serve.
import { eq } from 'drizzle-orm';
import type { Db, Tx } from '../db/index.js';
import { domains } from '../db/schema.js';
import { ApiError, MESSAGES } from '../errors.js';
import { enqueueWorkflows, type WorkflowStart } from '../workflow-outbox/outbox.js';
import type { ConfigChange, ConfigLog } from './config-log.js';
import { isEmptyChange } from './config-log.js';

export type DomainRow = typeof domains.$inferSelect;

/** What a write needs: the database, the process's config log and workflow outbox (a FastifyInstance has all three). */
export interface WriteTarget {
  db: Db;
  configLog: ConfigLog;
  /** Nudged after a commit that recorded workflows; absent (admin CLI), the dispatcher finds them on its next poll. */
  workflowOutbox?: { nudge(): void };
}

/** What a change did: the value the caller gets back, what changed of what nodes serve, the workflows it needs. */
export interface DomainWrite<T> {
  value: T;
  /** Records, rules or domain fields that changed; empty or omitted: nothing is appended (a no-op write). */
  change?: ConfigChange;
  /** The change deleted the domain row: a tombstone is appended (nodes drop the domain). */
  deleted?: boolean;
  /** Workflow starts recorded in the outbox in the same transaction, dispatched after commit. */
  workflows?: readonly WorkflowStart[];
}

/**
 * Which domain: by id (after loadDomain), by name (the /internal API the workflows call), or by a `lock` statement
 * of the caller's own that locks the row and checks more on it in the same round trip (auth/domain-access.ts
 * `writeAs`: the caller's role and key, so an API write reads nothing before its transaction).
 */
export type DomainKey = number | { name: string } | DomainLock;

/** Locks the domain's row (SELECT … FOR UPDATE) in `tx` and returns it read under the lock; throws to refuse. */
export interface DomainLock {
  lock(tx: Tx): Promise<DomainRow>;
}

/**
 * Runs `change` in one transaction on the domain's row, locked (SELECT … FOR UPDATE) and read under the lock, so every
 * check and merge sees a state no concurrent write can change before commit. Appends one config-log entry for what
 * `change` reports (ConfigLog.appendChange: record/rule-level delta, or whole, or a tombstone), records its workflows
 * in the outbox, commits, then nudges the sync hub and the dispatcher. A domain that no longer exists answers 404
 * `domain not found`; a throw from `change` stores and appends nothing.
 */
export async function changeDomain<T>(
  target: WriteTarget,
  key: DomainKey,
  change: (tx: Tx, domain: DomainRow) => Promise<DomainWrite<T>>,
): Promise<T> {
  return write(target, async (tx) => {
    const domain = await lockDomain(tx, key);
    return { domain, write: await change(tx, domain) };
  });
}

async function lockDomain(tx: Tx, key: DomainKey): Promise<DomainRow> {
  if (typeof key === 'object' && 'lock' in key) return key.lock(tx);
  const where = typeof key === 'number' ? eq(domains.id, key) : eq(domains.name, key.name);
  const [domain] = await tx.select().from(domains).where(where).for('update');
  if (!domain) throw new ApiError('CP_ERR_NOT_FOUND', MESSAGES.domainNotFound);
  return domain;
}

/**
 * Creates a domain: `insert` adds the row (and what hangs off it) in the transaction and returns it with its
 * workflows; the new domain is appended whole.
 */
export async function addDomain(
  target: WriteTarget,
  insert: (tx: Tx) => Promise<{ domain: DomainRow; workflows?: readonly WorkflowStart[] }>,
): Promise<DomainRow> {
  return write(target, async (tx) => {
    const { domain, workflows } = await insert(tx);
    return { domain, write: { value: domain, change: { whole: true }, workflows } };
  });
}

async function write<T>(
  target: WriteTarget,
  run: (tx: Tx) => Promise<{ domain: DomainRow; write: DomainWrite<T> }>,
): Promise<T> {
  let appended: number | null = null;
  let dispatch = false;
  const value = await target.db.transaction(async (tx) => {
    const { domain, write } = await run(tx);
    if (write.workflows?.length) {
      await enqueueWorkflows(tx, write.workflows);
      dispatch = true;
    }
    // Last statement of the transaction: the append holds the config log's lock until commit, and carries the
    // COMMIT itself when it runs (one round trip on Postgres); nothing may follow it here.
    appended = await append(target.configLog, tx, domain, write);
    return write.value;
  });
  if (appended !== null) target.configLog.nudge(appended);
  if (dispatch) target.workflowOutbox?.nudge();
  return value;
}

const LAST = { commit: true } as const;

/** The version appended, or null when the write changed nothing nodes serve. */
async function append(log: ConfigLog, tx: Tx, domain: DomainRow, write: DomainWrite<unknown>): Promise<number | null> {
  if (write.deleted) return log.appendDeletion(tx, { id: domain.id, name: domain.name }, LAST);
  if (!write.change || isEmptyChange(write.change)) return null;
  return log.appendChange(tx, domain.id, write.change, LAST);
}
