// Saved analytics queries: per account a name and one SELECT over `logs`, checked at save by the sandbox of POST
// /analytics/query (the same refusals, nothing run), run on demand with its limits, and optionally an alert: a
// threshold on a numeric column of the first row, evaluated every interval by the workflow `analytics-alert:<id>`
// (workflows/src/workflows/saved-query-alert.ts), which asks the control plane to evaluate (evaluateSavedQuery). A
// crossing notifies the account's feed and/or a domain's uptime webhook once; the state is kept on the row.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { and, eq, sql } from 'drizzle-orm';
import type { Tx } from '../../db/index.js';
import { domainMembers, domains, users } from '../../db/schema.js';
import { ApiError, isApiError, MESSAGES } from '../../errors.js';
import { loadDomain } from '../../auth/domain-access.js';
import { hasPermission } from '../../auth/permissions.js';
import { enqueueWorkflows, type WorkflowStart } from '../../workflow-outbox/outbox.js';
import { notify } from '../notifications/store.js';
import { checkInFlightDeliveries, recordDelivery, type AlertEventPayload } from '../uptime/service.js';
import { ensureSettings } from '../uptime/store.js';
import { runQueryAs } from './service.js';
import {
  countSavedQueries,
  findSavedQuery,
  savedQueries,
  savedQueriesOf,
  savedQueryById,
  type AlertOp,
  type SavedQueryRow,
  type SavedQueryView,
} from './saved-queries-store.js';
import { MAX_SAVED_QUERIES } from './saved-query-schemas.js';
import type { QueryColumn, QueryResult } from './store.js';

export const SAVED_QUERY_NOT_FOUND = 'saved query not found';

/** The alert as a request carries it. */
export interface AlertInput {
  column: string;
  op: AlertOp;
  value: number;
  interval_seconds: number;
  notify_feed?: boolean;
  webhook_domain?: string | null;
}

export interface SavedQueryInput {
  name?: string;
  query?: string;
  alert?: AlertInput | null;
}

// ---- The workflow of an alert ----

export const ALERT_WORKFLOW = 'savedQueryAlert';
export const ALERT_CHANGED_SIGNAL = 'savedQueryChanged';
export const alertWorkflowId = (id: number) => `analytics-alert:${id}`;

/** Starts the alert's workflow, or wakes the running one to look again now (a changed or removed alert). */
export function alertStart(id: number): WorkflowStart {
  return {
    kind: 'signal-with-start',
    workflowType: ALERT_WORKFLOW,
    workflowId: alertWorkflowId(id),
    args: [{ savedQueryId: id }],
    signal: ALERT_CHANGED_SIGNAL,
    signalArgs: [],
  };
}

/** Wakes a running alert workflow (none running: nothing); it then finds the alert gone and ends. */
function alertWake(id: number): WorkflowStart {
  return { ...alertStart(id), kind: 'signal' };
}

// ---- Presentation ----

export function presentSavedQuery(r: SavedQueryView) {
  const hasAlert = r.intervalSeconds !== null;
  return {
    id: r.id,
    name: r.name,
    query: r.query,
    alert: hasAlert ? storedAlert(r) : null,
    evaluation: hasAlert
      ? {
          state: r.alertState,
          last_evaluated_at: r.lastEvaluatedAt?.toISOString() ?? null,
          last_value: r.lastValue,
          last_error: r.lastError,
          last_fired_at: r.lastFiredAt?.toISOString() ?? null,
          fired_count: r.firedCount,
          next_evaluation_at: r.nextEvaluationAt?.toISOString() ?? null,
        }
      : null,
    created_at: r.createdAt.toISOString(),
    updated_at: r.updatedAt.toISOString(),
  };
}

// ---- Validation ----

/** DuckDB's numeric types: an alert compares a number. */
const NUMERIC_TYPE = /^(U?(TINY|SMALL|BIG|HUGE)?INT(EGER)?|FLOAT|DOUBLE|REAL|DECIMAL(\(\d+,\s*\d+\))?)$/;

const invalid = (message: string): never => {
  throw new ApiError('CP_ERR_INVALID_INPUT', message);
};

/** The stored columns of an alert (all null: none), checked against the query's columns. */
async function alertColumns(request: FastifyRequest, alert: AlertInput | null, columns: QueryColumn[]) {
  if (alert === null)
    return {
      alertColumn: null,
      alertOp: null,
      alertValue: null,
      intervalSeconds: null,
      notifyFeed: false,
      notifyWebhook: false,
      webhookDomainId: null,
    };
  const column = columns.find((c) => c.name === alert.column);
  if (!column)
    invalid(
      `alert.column: the query answers no column ${JSON.stringify(alert.column)} (its columns: ${columns
        .map((c) => c.name)
        .join(', ')})`,
    );
  if (!NUMERIC_TYPE.test(column!.type))
    invalid(`alert.column: ${JSON.stringify(alert.column)} is ${column!.type}, not a number`);
  const min = request.server.config.analytics.alertMinIntervalSeconds;
  if (alert.interval_seconds < min) invalid(`alert.interval_seconds: at least ${min}`);
  if (!Number.isFinite(alert.value)) invalid('alert.value: a finite number is required');
  const notifyFeed = alert.notify_feed ?? true;
  let webhookDomainId: number | null = null;
  if (alert.webhook_domain !== undefined && alert.webhook_domain !== null) {
    // The domain's webhook and its signing secret are the domain's settings: domain.settings, as PUT /uptime/settings.
    const { domain } = await loadDomain(request, alert.webhook_domain, 'domain.settings');
    const settings = await ensureSettings(request.server.db, domain.id);
    if (settings.webhookUrl === '')
      throw new ApiError(
        'CP_ERR_WRONG_STATE',
        `alert.webhook_domain: no webhook_url is saved for ${domain.name} (PUT /uptime/settings)`,
      );
    webhookDomainId = domain.id;
  }
  if (!notifyFeed && webhookDomainId === null)
    invalid('alert: a target is required (notify_feed true, or a webhook_domain)');
  return {
    alertColumn: alert.column,
    alertOp: alert.op,
    alertValue: alert.value,
    intervalSeconds: alert.interval_seconds,
    notifyFeed,
    notifyWebhook: webhookDomainId !== null,
    webhookDomainId,
  };
}

function checkedName(name: string): string {
  const trimmed = name.trim();
  if (trimmed === '') invalid('name: must not be blank');
  return trimmed;
}

/** A fresh alert's evaluation state: due at once. */
const FRESH_EVALUATION = {
  alertState: 'unknown' as const,
  lastEvaluatedAt: null,
  lastValue: null,
  lastError: null,
  lastFiredAt: null,
  firedCount: 0,
};

// ---- CRUD and the run ----

export async function listSavedQueries(app: FastifyInstance, userId: number) {
  const rows = await savedQueriesOf(app.db, userId);
  return { saved_queries: rows.map(presentSavedQuery), max_saved_queries: MAX_SAVED_QUERIES };
}

export async function getSavedQuery(app: FastifyInstance, userId: number, id: number) {
  const row = await findSavedQuery(app.db, userId, id);
  if (!row) throw new ApiError('CP_ERR_NOT_FOUND', SAVED_QUERY_NOT_FOUND);
  return presentSavedQuery(row);
}

/** Locks the user's row: one create at a time per account (the cap). */
async function lockUser(tx: Tx, userId: number): Promise<void> {
  await tx.select({ id: users.id }).from(users).where(eq(users.id, userId)).for('update');
}

export async function createSavedQuery(
  request: FastifyRequest,
  body: Required<Pick<SavedQueryInput, 'name' | 'query'>> & SavedQueryInput,
) {
  const app = request.server;
  const userId = request.principal.userId;
  const name = checkedName(body.name);
  // The cap first (cheap); checked again under the lock.
  if ((await countSavedQueries(app.db, userId)) >= MAX_SAVED_QUERIES) capReached();
  const columns = await runQueryAs(app, userId, body.query, true);
  const alert = await alertColumns(request, body.alert ?? null, columns);
  const id = await app.db.transaction(async (tx) => {
    await lockUser(tx, userId);
    if ((await countSavedQueries(tx, userId)) >= MAX_SAVED_QUERIES) capReached();
    const [row] = await tx
      .insert(savedQueries)
      .values({
        userId,
        name,
        query: body.query,
        ...alert,
        nextEvaluationAt: alert.intervalSeconds === null ? null : new Date(),
      })
      .returning({ id: savedQueries.id });
    if (alert.intervalSeconds !== null) await enqueueWorkflows(tx, [alertStart(row.id)]);
    return row.id;
  });
  app.workflowOutbox.nudge();
  return getSavedQuery(app, userId, id);
}

function capReached(): never {
  throw new ApiError(
    'CP_ERR_INVALID_INPUT',
    `the account already has ${MAX_SAVED_QUERIES} saved queries, the most an account may have; delete one first`,
    { max_saved_queries: MAX_SAVED_QUERIES },
  );
}

export async function updateSavedQuery(request: FastifyRequest, id: number, body: SavedQueryInput) {
  const app = request.server;
  const userId = request.principal.userId;
  const stored = await findSavedQuery(app.db, userId, id);
  if (!stored) throw new ApiError('CP_ERR_NOT_FOUND', SAVED_QUERY_NOT_FOUND);
  const name = body.name === undefined ? stored.name : checkedName(body.name);
  const query = body.query ?? stored.query;
  const alertInput =
    body.alert !== undefined ? body.alert : stored.intervalSeconds === null ? null : storedAlert(stored);
  // A new query or alert is checked as a whole (a new query may no longer answer the alert's column); a rename alone
  // keeps both as stored.
  const alert =
    body.alert === undefined && body.query === undefined
      ? null
      : await alertColumns(request, alertInput, await runQueryAs(app, userId, query, true));
  const changed = alert !== null;
  await app.db.transaction(async (tx) => {
    const [row] = await tx
      .update(savedQueries)
      .set({
        name,
        query,
        ...(changed
          ? { ...alert, ...FRESH_EVALUATION, nextEvaluationAt: alert.intervalSeconds === null ? null : new Date() }
          : {}),
        updatedAt: new Date(),
      })
      .where(and(eq(savedQueries.id, id), eq(savedQueries.userId, userId)))
      .returning({ id: savedQueries.id, intervalSeconds: savedQueries.intervalSeconds });
    if (!row) throw new ApiError('CP_ERR_NOT_FOUND', SAVED_QUERY_NOT_FOUND);
    if (changed) await enqueueWorkflows(tx, [row.intervalSeconds !== null ? alertStart(row.id) : alertWake(row.id)]);
  });
  app.workflowOutbox.nudge();
  return getSavedQuery(app, userId, id);
}

/** The stored alert as a request would carry it (and as the API shows it). */
function storedAlert(r: SavedQueryView): Required<AlertInput> {
  return {
    column: r.alertColumn!,
    op: r.alertOp!,
    value: r.alertValue!,
    interval_seconds: r.intervalSeconds!,
    notify_feed: r.notifyFeed,
    webhook_domain: r.notifyWebhook ? r.webhookDomain : null,
  };
}

export async function deleteSavedQuery(app: FastifyInstance, userId: number, id: number): Promise<void> {
  await app.db.transaction(async (tx) => {
    const deleted = await tx
      .delete(savedQueries)
      .where(and(eq(savedQueries.id, id), eq(savedQueries.userId, userId)))
      .returning({ intervalSeconds: savedQueries.intervalSeconds });
    if (deleted.length === 0) throw new ApiError('CP_ERR_NOT_FOUND', SAVED_QUERY_NOT_FOUND);
    if (deleted[0].intervalSeconds !== null) await enqueueWorkflows(tx, [alertWake(id)]);
  });
  app.workflowOutbox.nudge();
}

/** Runs the saved query now as POST /analytics/query would (its limits, its answer). */
export async function runSavedQuery(app: FastifyInstance, userId: number, id: number): Promise<QueryResult> {
  const row = await findSavedQuery(app.db, userId, id);
  if (!row) throw new ApiError('CP_ERR_NOT_FOUND', SAVED_QUERY_NOT_FOUND);
  return runQueryAs(app, userId, row.query);
}

// ---- Evaluation (the alert's workflow) ----

/** An evaluation asked a little before its time (clocks of two machines) runs anyway. */
const EARLY_MS = 1000;

/** Whether `value op threshold` holds. */
export function holds(value: number, op: AlertOp, threshold: number): boolean {
  switch (op) {
    case '>':
      return value > threshold;
    case '>=':
      return value >= threshold;
    case '<':
      return value < threshold;
    case '<=':
      return value <= threshold;
    case '=':
      return value === threshold;
    case '!=':
      return value !== threshold;
  }
}

/** The alert's column in the first row: a number, null (no row, or SQL NULL), or the reason it is not a number. */
export function firstValue(result: QueryResult, column: string): number | null | { error: string } {
  const i = result.columns.findIndex((c) => c.name === column);
  if (i < 0) return { error: `the query answered no column ${JSON.stringify(column)}` };
  if (result.rows.length === 0) return null;
  const v = result.rows[0][i];
  if (v === null || v === undefined) return null;
  const n = typeof v === 'number' ? v : typeof v === 'string' ? Number(v) : NaN;
  return Number.isFinite(n) ? n : { error: `column ${JSON.stringify(column)} of the first row is not a number` };
}

function message(err: unknown): string {
  return (err instanceof Error ? err.message : String(err)).slice(0, 1000);
}

/**
 * One evaluation of a saved query's alert, when due: runs the query as its owner, records the value, and on a
 * crossing (the comparison holds now and did not at the previous evaluation) notifies its targets once, in the same
 * transaction as the state. A failing query records its error and changes no state. Answers when to ask again (null:
 * no alert, the workflow ends), or null when the saved query is gone.
 */
export async function evaluateSavedQuery(
  app: FastifyInstance,
  id: number,
  now = Date.now(),
): Promise<{ next_at_ms: number | null } | null> {
  const claim = await app.db.transaction(async (tx) => {
    const row = await savedQueryById(tx, id, true);
    if (!row) return null;
    if (row.intervalSeconds === null) return { row, due: false, next: null };
    const dueAt = row.nextEvaluationAt?.getTime() ?? 0;
    if (dueAt > now + EARLY_MS) return { row, due: false, next: dueAt };
    // Claimed: a repeated call (an activity retried) finds it not due.
    const next = now + row.intervalSeconds * 1000;
    await tx
      .update(savedQueries)
      .set({ nextEvaluationAt: new Date(next) })
      .where(eq(savedQueries.id, id));
    return { row, due: true, next };
  });
  if (!claim) return null;
  if (!claim.due) return { next_at_ms: claim.next };
  const row = claim.row;
  let value: number | null = null;
  let error: string | null = null;
  try {
    // A deactivated account's keys are refused (403 `account is inactive`); its alerts stop running too.
    const [owner] = await app.db.select({ active: users.active }).from(users).where(eq(users.id, row.userId));
    if (!owner?.active) throw new ApiError('CP_ERR_ACCOUNT_INACTIVE', MESSAGES.inactive);
    const got = firstValue(await runQueryAs(app, row.userId, row.query), row.alertColumn!);
    if (got !== null && typeof got === 'object') error = got.error;
    else value = got;
  } catch (err) {
    if (isApiError(err) && (err.code === 'CP_ERR_RATE_LIMITED' || err.code === 'CP_ERR_UNAVAILABLE')) {
      // Busy (the process's query slots taken) or the store not open: not this query's failure. The claim is given
      // back and the workflow's activity retries the call in a moment (a 503 is retried with backoff).
      await app.db
        .update(savedQueries)
        .set({ nextEvaluationAt: row.nextEvaluationAt })
        .where(and(eq(savedQueries.id, id), eq(savedQueries.nextEvaluationAt, new Date(claim.next!))));
      throw new ApiError('CP_ERR_UNAVAILABLE', `evaluation postponed: ${err.message}`);
    }
    error = message(err);
  }
  const nudge = await app.db.transaction(async (tx) => {
    const cur = await savedQueryById(tx, id, true);
    // Deleted, or changed while the query ran (its result is of the old query or alert): nothing recorded.
    if (!cur || cur.intervalSeconds === null || cur.updatedAt.getTime() !== row.updatedAt.getTime()) return false;
    const evaluatedAt = new Date(now);
    if (error !== null) {
      await tx
        .update(savedQueries)
        .set({ lastEvaluatedAt: evaluatedAt, lastError: error })
        .where(eq(savedQueries.id, id));
      return false;
    }
    const over = value !== null && holds(value, cur.alertOp!, cur.alertValue!);
    const fires = over && cur.alertState !== 'firing';
    const notifyError = fires ? await notifyTargets(tx, cur, value!, evaluatedAt, claim.next!) : null;
    await tx
      .update(savedQueries)
      .set({
        alertState: over ? 'firing' : 'ok',
        lastEvaluatedAt: evaluatedAt,
        lastValue: value,
        lastError: notifyError,
        ...(fires ? { lastFiredAt: evaluatedAt, firedCount: sql`${savedQueries.firedCount} + 1` } : {}),
      })
      .where(eq(savedQueries.id, id));
    return fires;
  });
  if (nudge) app.workflowOutbox.nudge();
  return { next_at_ms: claim.next };
}

/**
 * Notifies a crossing: the owner's feed and/or the webhook domain's uptime webhook (a delivery recorded with its
 * workflow start, signed and sent like the uptime events). Answers why a target could not be notified, or null.
 */
async function notifyTargets(
  tx: Tx,
  q: SavedQueryRow,
  value: number,
  at: Date,
  evaluationKey: number,
): Promise<string | null> {
  const problems: string[] = [];
  const facts = {
    saved_query_id: q.id,
    name: q.name,
    column: q.alertColumn!,
    op: q.alertOp!,
    threshold: q.alertValue!,
    value,
    evaluated_at: at.toISOString(),
  };
  if (q.notifyFeed)
    await notify(tx, {
      userId: q.userId,
      category: 'analytics',
      kind: 'analytics.alert',
      title: `Alert: ${q.name}`,
      body: `${q.alertColumn} is ${value} (${q.alertOp} ${q.alertValue})`,
      data: facts,
      dedupeKey: `analytics-alert:${q.id}:${evaluationKey}`,
    });
  if (q.notifyWebhook) {
    const problem = await deliverToWebhook(tx, q, facts);
    if (problem) problems.push(problem);
  }
  return problems.length > 0 ? problems.join('; ') : null;
}

async function deliverToWebhook(
  tx: Tx,
  q: SavedQueryRow,
  facts: Omit<AlertEventPayload, 'event' | 'domain'>,
): Promise<string | null> {
  if (q.webhookDomainId === null) return 'webhook: the webhook domain was deleted';
  const [d] = await tx
    .select({ id: domains.id, name: domains.name, ownerId: domains.ownerId, role: domainMembers.role })
    .from(domains)
    .leftJoin(domainMembers, and(eq(domainMembers.domainId, domains.id), eq(domainMembers.userId, q.userId)))
    .where(eq(domains.id, q.webhookDomainId));
  const role = d?.ownerId === q.userId ? 'owner' : (d?.role ?? null);
  if (!d || role === null || !hasPermission(role, 'domain.settings'))
    return `webhook: you no longer have domain.settings on the webhook domain`;
  const settings = await ensureSettings(tx, d.id);
  if (settings.webhookUrl === '') return `webhook: no webhook_url is saved for ${d.name} (PUT /uptime/settings)`;
  try {
    await checkInFlightDeliveries(tx, d.id);
  } catch (err) {
    return `webhook: ${message(err)}`;
  }
  await recordDelivery(tx, d.id, settings.webhookUrl, { event: 'analytics.alert', domain: d.name, ...facts });
  return null;
}
