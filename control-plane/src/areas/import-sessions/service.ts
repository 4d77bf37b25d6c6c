// Import sessions: a zone file or a scan of the domain's current DNS, planned against the zone and kept (store.ts)
// until the user commits or discards it. The commit plans the session's records again against the zone as it is
// then and writes all of them or none, in ONE config-log entry (changeDomain). A scan runs as the Temporal workflow
// `scanImportSession` (workflows/src/workflows/import-scan.ts), started through the workflow outbox in the
// transaction that creates the session; it reports through the /internal API (internal.ts).
import type { FastifyInstance } from 'fastify';
import type * as wf from '../../../../workflows/src/workflows/index.js';
import type { Tx } from '../../db/index.js';
import { changeDomain, type ConfigChange } from '../../config-log/index.js';
import { ApiError, isApiError } from '../../errors.js';
import { originPolicy } from '../../origins/address-check.js';
import type { WorkflowStart } from '../../workflow-outbox/outbox.js';
import { assertNotFrozen } from '../domain-lifecycle/transitions.js';
import {
  createPlanned,
  parseImportFile,
  planRecords,
  withParsedLines,
  type DomainRow,
  type ImportPlan,
} from '../records/service.js';
import { normalizeOwnerName } from '../records/names.js';
import { LIMITS, type RecordCreate } from '../records/types.js';
import {
  closeSession,
  deleteSession,
  getSession,
  getSessionById,
  getSessionToCommit,
  insertSession,
  LIVE,
  liveSession,
  sessionRecords,
  setProgress,
  setSupersededBy,
  storeScan,
  type ClosedTimes,
  type CommitResult,
  type CommitResultItem,
  type ScanProgress,
  type SessionInput,
  type SessionRow,
  type SessionStatus,
} from './store.js';

/** The most records a scan may bring (an AXFR beyond it is refused by the worker, a report beyond it here). */
export const SCAN_MAX_RECORDS = LIMITS.importMaxRecords;

export const scanWorkflowId = (domain: string, id: number) => `import-scan:${domain}:${id}`;

function scanStart(domain: string, sessionId: number): WorkflowStart {
  return {
    kind: 'start',
    workflowType: 'scanImportSession',
    workflowId: scanWorkflowId(domain, sessionId),
    args: [{ domain, sessionId } satisfies Parameters<typeof wf.scanImportSession>[0]],
  };
}

const notFound = (id: number) => new ApiError('CP_ERR_NOT_FOUND', `import session ${id} not found`);

function notLive(s: SessionRow, what: string): ApiError {
  return new ApiError(
    'CP_ERR_CONFLICT',
    `import session ${s.id} is ${s.status}: only ${what === 'committed' ? 'an open' : 'a scanning or open'} session can be ${what}`,
  );
}

async function assertNoLiveSession(tx: Tx, domainId: number): Promise<void> {
  const live = await liveSession(tx, domainId);
  if (live)
    throw new ApiError(
      'CP_ERR_CONFLICT',
      `import session ${live.id} of this domain is still ${live.status}: commit or discard it, or rescan it`,
      { session_id: live.id },
    );
}

function assertScansAvailable(app: FastifyInstance): void {
  if (!app.temporal.enabled)
    throw new ApiError('CP_ERR_UNAVAILABLE', 'workflow service unavailable (TEMPORAL_ADDRESS is not set): no scan');
}

/** The plan of `items` against the zone now; `inputs` keeps the items the plan did not refuse (for the commit). */
async function plan(
  app: FastifyInstance,
  tx: Tx,
  domain: DomainRow,
  items: SessionInput[],
): Promise<{ plan: ImportPlan; inputs: SessionInput[] }> {
  const planned = await planRecords(tx, domain, items, originPolicy(app.config), { literalTxt: true });
  const refused = new Set(planned.errors.map((e) => e.line));
  return { plan: planned, inputs: items.filter((i) => !refused.has(i.line)) };
}

/** A session from a zone file: parsed and planned now, open at once. 400 for a file above the record bound. */
export async function startZoneSession(
  app: FastifyInstance,
  domain: DomainRow,
  userId: number,
  text: string,
): Promise<SessionRow> {
  // As POST records/import: 10,000 records, or as many as the domain's plan allows when that is more.
  const { parsed, max } = await parseImportFile(app.db, domain, text);
  if (parsed.tooLarge)
    throw new ApiError('CP_ERR_INVALID_INPUT', `a zone file may hold at most ${max} records; no session was started`);
  return changeDomain(app, domain.id, async (tx, locked) => {
    assertNotFrozen(locked);
    await assertNoLiveSession(tx, locked.id);
    const { plan: planned, inputs } = await plan(app, tx, locked, parsed.records);
    withParsedLines(planned, parsed);
    const row = await insertSession(tx, {
      domainId: locked.id,
      source: 'zone',
      status: 'open',
      autoCommit: false,
      createdBy: userId,
      inputs,
      plan: planned,
    });
    return { value: row };
  });
}

/** A session that scans the domain's current DNS (the workflow starts once this commits); `autoCommit`: POST records/scan. */
export async function startScanSession(
  app: FastifyInstance,
  domain: DomainRow,
  userId: number,
  autoCommit: boolean,
): Promise<SessionRow> {
  assertScansAvailable(app);
  return changeDomain(app, domain.id, async (tx, locked) => {
    assertNotFrozen(locked);
    await assertNoLiveSession(tx, locked.id);
    const row = await insertSession(tx, {
      domainId: locked.id,
      source: 'scan',
      status: 'scanning',
      autoCommit,
      createdBy: userId,
      progress: { phase: 'queued' },
    });
    return { value: row, workflows: [scanStart(locked.name, row.id)] };
  });
}

/** A new scan session replaces a live one (its scan, if running, stops at its next report). */
export async function rescanSession(
  app: FastifyInstance,
  domain: DomainRow,
  userId: number,
  id: number,
): Promise<SessionRow> {
  assertScansAvailable(app);
  return changeDomain(app, domain.id, async (tx, locked) => {
    assertNotFrozen(locked);
    const s = await getSession(tx, locked.id, id, true);
    if (!s) throw notFound(id);
    if (!LIVE.has(s.status)) throw notLive(s, 'rescanned');
    await closeSession(tx, s.id, 'superseded');
    const next = await insertSession(tx, {
      domainId: locked.id,
      source: 'scan',
      status: 'scanning',
      autoCommit: s.auto_commit,
      createdBy: userId,
      progress: { phase: 'queued' },
    });
    await setSupersededBy(tx, s.id, next.id);
    return { value: next, workflows: [scanStart(locked.name, next.id)] };
  });
}

/** Discards a live session: it is deleted (GET answers 404 afterwards); the answer is its last state, `discarded`. */
export async function discardSession(app: FastifyInstance, domain: DomainRow, id: number): Promise<SessionRow> {
  return app.db.transaction(async (tx) => {
    const s = await getSession(tx, domain.id, id, true);
    if (!s) throw notFound(id);
    if (!LIVE.has(s.status)) throw notLive(s, 'discarded');
    await deleteSession(tx, s.id);
    const now = new Date();
    return { ...s, status: 'discarded', updated_at: now, closed_at: now };
  });
}

/** The record name as the records API shows it ('@', 'www'); a name that does not normalise as it came. */
function shownName(zone: string, raw: string): string {
  try {
    return normalizeOwnerName(zone, raw);
  } catch {
    return raw;
  }
}

/** The result of one input; `more` may name it (a created record's stored name), else its name is normalised here. */
function resultItem(
  zone: string,
  i: SessionInput,
  status: CommitResultItem['status'],
  more: Partial<CommitResultItem> = {},
): CommitResultItem {
  return {
    line: i.line,
    name: more.name ?? shownName(zone, i.input.name),
    type: i.input.type,
    destination: i.input.destination,
    status,
    ...more,
  };
}

/**
 * Writes the open session `s` (locked by the caller, in changeDomain's transaction): plans its records against the
 * zone as it is now, and creates all of them or throws (400 with the per-record result, 403 past max_records);
 * more than LIMITS.importListedRecords with one COPY, as POST records/import (records/service.ts createPlanned).
 */
async function commitLocked(
  app: FastifyInstance,
  tx: Tx,
  domain: DomainRow,
  s: SessionRow,
): Promise<{ result: CommitResult; closed: ClosedTimes; change: ConfigChange }> {
  const { plan: planned } = await plan(app, tx, domain, s.inputs);
  if (planned.errors.length) {
    const errors = new Map(planned.errors.map((e) => [e.line, e.error]));
    const results = s.inputs.map((i) =>
      errors.has(i.line)
        ? resultItem(domain.name, i, 'failed', { error: errors.get(i.line)! })
        : resultItem(domain.name, i, 'not_imported'),
    );
    const n = planned.errors.length;
    throw new ApiError(
      'CP_ERR_RECORD_CONFLICT',
      `${n} record${n > 1 ? 's' : ''} of import session ${s.id} cannot be created in the zone as it is now; nothing was imported`,
      { results },
    );
  }
  if (planned.limitError) throw new ApiError('CP_ERR_PLAN_LIMIT', planned.limitError, { feature: 'max_records' });
  const { ids, change } = await createPlanned(tx, domain.id, planned.records);
  const created = new Map<number, number>();
  for (let k = 0; k < ids.length; k++) created.set(planned.records[k]!.line, k);
  const skipped = new Map(planned.skipped.map((k) => [k.line, k.reason]));
  const results = s.inputs.map((i) => {
    const k = created.get(i.line);
    if (k === undefined)
      return resultItem(domain.name, i, 'skipped', {
        reason: skipped.get(i.line) ?? 'an identical record already exists',
      });
    // The record as stored: its name and destination normalised (the plan's are what the write stored).
    const r = planned.records[k]!;
    return resultItem(domain.name, i, 'created', { name: r.name, destination: r.destination, id: ids[k]! });
  });
  const result = { created: ids.length, skipped: results.length - ids.length, failed: 0, results };
  const closed = await closeSession(tx, s.id, 'committed', { result });
  if (!closed) throw new Error(`import session ${s.id}: not open under its lock`); // FOR UPDATE holds it open
  return { result, closed, change };
}

/**
 * Commits the open session `id`: all its records or none, in ONE config-log entry. Answers the session as committed
 * (the row read under the lock with its new status, result and times: a session of a million records is not read
 * back). The lock reads the inputs, not the stored plan; a session of more than LIMITS.importListedRecords records
 * is answered without its planned records (`records_omitted`, as POST records/import answers a large import), which
 * GET still lists; at most that many are read back for the answer.
 */
export async function commitSession(app: FastifyInstance, domainId: number, id: number): Promise<SessionRow> {
  return changeDomain(app, domainId, async (tx, locked) => {
    assertNotFrozen(locked);
    const s = await getSessionToCommit(tx, locked.id, id);
    if (!s) throw notFound(id);
    if (s.status !== 'open') throw notLive(s, 'committed');
    const { result, closed, change } = await commitLocked(app, tx, locked, s);
    const listed = s.inputs.length <= LIMITS.importListedRecords;
    const records = listed ? await sessionRecords(tx, s.id) : [];
    return {
      value: { ...s, status: 'committed', records, ...(listed ? {} : { records_omitted: true }), result, ...closed },
      change,
    };
  });
}

// ---- the scan workflow's reports (/internal, internal.ts) ----

/** Progress of a scan; answers the session's status (anything but `scanning` tells the workflow to stop). */
export async function reportProgress(app: FastifyInstance, id: number, progress: ScanProgress): Promise<SessionStatus> {
  const status = await setProgress(app.db, id, progress);
  if (!status) throw notFound(id);
  return status;
}

export interface ScannedRecord {
  name: string;
  type: string;
  destination: string;
  ttl?: number;
  mx_priority?: number;
}

/** The scan is through: its finds are planned and the session opens (and, for POST records/scan, is committed). */
export async function reportScan(
  app: FastifyInstance,
  id: number,
  scan: { records: ScannedRecord[]; progress: ScanProgress },
): Promise<SessionStatus> {
  const first = await getSessionById(app.db, id);
  if (!first) throw notFound(id);
  if (first.status !== 'scanning') return first.status;
  const items: SessionInput[] = scan.records.map((r, k) => ({
    line: k + 1,
    input: {
      name: r.name,
      type: r.type,
      destination: r.destination,
      ...(r.ttl === undefined ? {} : { ttl: r.ttl }),
      ...(r.mx_priority === undefined ? {} : { mx_priority: r.mx_priority }),
    } as RecordCreate,
  }));
  const opened = await changeDomain(app, first.domain_id, async (tx, locked) => {
    const s = await getSession(tx, locked.id, id, true);
    if (!s || s.status !== 'scanning') return { value: s?.status ?? ('discarded' as SessionStatus) };
    const { plan: planned, inputs } = await plan(app, tx, locked, items);
    await storeScan(tx, id, inputs, planned, { ...scan.progress, phase: 'done', found: items.length });
    return { value: 'open' as SessionStatus };
  });
  if (opened !== 'open' || !first.auto_commit) return opened;
  try {
    return (await commitSession(app, first.domain_id, id)).status;
  } catch (err) {
    if (!isApiError(err) || err.statusCode >= 500) throw err;
    await closeSession(app.db, id, 'failed', {
      error: `the scan found records but importing them failed: ${err.message}`,
    });
    return 'failed';
  }
}

/** The scan could not be done (the workflow gave up): the session fails with the reason. */
export async function reportScanFailed(app: FastifyInstance, id: number, error: string): Promise<SessionStatus> {
  const s = await getSessionById(app.db, id);
  if (!s) throw notFound(id);
  if (s.status !== 'scanning') return s.status;
  await closeSession(app.db, id, 'failed', { error: error.slice(0, 1000) });
  return 'failed';
}
