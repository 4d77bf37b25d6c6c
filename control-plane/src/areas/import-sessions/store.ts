// Import sessions in the database (migrations/0036_import_sessions.sql; the plan and the result json, not jsonb, since
// 0042: a million planned records pass jsonb's 256 MB bound). At most one session of a domain is live (scanning or
// open): the partial unique index holds it even between two processes.
import { sql } from 'drizzle-orm';
import type { Db, Tx } from '../../db/index.js';
import { rowsOf } from '../../db/migrate.js';
import type { ImportPlan } from '../records/service.js';
import type { RecordCreate } from '../records/types.js';
import type { ScanProgress } from '../../../../workflows/src/types.js';

export type { ScanProgress };

export const SESSION_STATUSES = ['scanning', 'open', 'committed', 'discarded', 'superseded', 'failed'] as const;
export type SessionStatus = (typeof SESSION_STATUSES)[number];
export const LIVE: ReadonlySet<SessionStatus> = new Set(['scanning', 'open']);
export type SessionSource = 'zone' | 'scan';

/** One create body of the session, with the line of the file it came from (a scan numbers its finds from 1). */
export interface SessionInput {
  line: number;
  input: RecordCreate;
}

export interface CommitResultItem {
  line: number;
  name: string;
  type: string;
  destination: string;
  status: 'created' | 'skipped' | 'failed' | 'not_imported';
  id?: number;
  reason?: string;
  error?: string;
}

export interface CommitResult {
  created: number;
  skipped: number;
  failed: number;
  results: CommitResultItem[];
}

export interface SessionRow {
  id: number;
  domain_id: number;
  source: SessionSource;
  status: SessionStatus;
  auto_commit: boolean;
  inputs: SessionInput[];
  records: ImportPlan['records'];
  /** The commit's answer of a session of more than LIMITS.importListedRecords records: `records` is not listed. */
  records_omitted?: true;
  skipped: ImportPlan['skipped'];
  errors: ImportPlan['errors'];
  limit_error: string | null;
  progress: ScanProgress | Record<string, never>;
  result: CommitResult | null;
  error: string | null;
  superseded_by: number | null;
  created_at: string | Date;
  updated_at: string | Date;
  closed_at: string | Date | null;
}

/** The times closeSession set (it answers undefined for a session that was not live). */
export interface ClosedTimes {
  updated_at: string | Date;
  closed_at: string | Date;
}

/** The columns but the json ones (inputs, records, skipped, errors, progress, result). */
const SCALAR_COLUMNS = sql.raw(
  `id, domain_id, source, status, auto_commit, limit_error, error, superseded_by, created_at, updated_at, closed_at`,
);

const COLUMNS = sql.raw(
  `id, domain_id, source, status, auto_commit, inputs, records, skipped, errors, limit_error, progress, result, error,
   superseded_by, created_at, updated_at, closed_at`,
);

/** json and jsonb arrive parsed from Postgres and PGlite alike; a text form (older drivers) is parsed here. */
function parsed(row: Record<string, unknown>): SessionRow {
  for (const k of ['inputs', 'records', 'skipped', 'errors', 'progress', 'result'])
    if (typeof row[k] === 'string') row[k] = JSON.parse(row[k]);
  return row as unknown as SessionRow;
}

/** The statement's one row, parsed, or undefined. */
function first(res: unknown): SessionRow | undefined {
  const [row] = rowsOf<Record<string, unknown>>(res);
  return row ? parsed(row) : undefined;
}

const json = (v: unknown) => JSON.stringify(v);

export async function insertSession(
  tx: Tx,
  s: {
    domainId: number;
    source: SessionSource;
    status: SessionStatus;
    autoCommit: boolean;
    createdBy: number | null;
    inputs?: SessionInput[];
    plan?: ImportPlan;
    progress?: ScanProgress;
  },
): Promise<SessionRow> {
  const res = await tx.execute(sql`
    INSERT INTO import_sessions (domain_id, source, status, auto_commit, created_by, inputs, records, skipped, errors,
      limit_error, progress)
    VALUES (${s.domainId}, ${s.source}, ${s.status}, ${s.autoCommit}, ${s.createdBy}, ${json(s.inputs ?? [])}::json,
      ${json(s.plan?.records ?? [])}::json, ${json(s.plan?.skipped ?? [])}::json,
      ${json(s.plan?.errors ?? [])}::json, ${s.plan?.limitError ?? null}, ${json(s.progress ?? {})}::jsonb)
    RETURNING ${SCALAR_COLUMNS}`);
  // The json columns are what was just written: not read back (a million-record plan is 0.3 GB of JSON to parse).
  const row = rowsOf<Record<string, unknown>>(res)[0]!;
  return parsed({
    ...row,
    inputs: s.inputs ?? [],
    records: s.plan?.records ?? [],
    skipped: s.plan?.skipped ?? [],
    errors: s.plan?.errors ?? [],
    progress: s.progress ?? {},
    result: null,
  });
}

/** One session of the domain; `forUpdate` locks it for the caller's transaction. */
export async function getSession(
  tx: Tx | Db,
  domainId: number,
  id: number,
  forUpdate = false,
): Promise<SessionRow | undefined> {
  const res = await tx.execute(sql`
    SELECT ${COLUMNS} FROM import_sessions WHERE id = ${id} AND domain_id = ${domainId}
    ${forUpdate ? sql`FOR UPDATE` : sql``}`);
  return first(res);
}

/** The columns a commit reads under its lock: not the planned records, nor a result (an open session has none). */
const COMMIT_COLUMNS = sql.raw(
  `id, domain_id, source, status, auto_commit, inputs, skipped, errors, limit_error, progress, error, superseded_by,
   created_at, updated_at, closed_at`,
);

/**
 * One session of the domain locked for its commit, without its planned records (`records` empty, `result` null): the
 * commit plans the inputs again, and at a million records the stored plan is 0.2 GB of JSON it does not need
 * (sessionRecords reads it when the answer lists it).
 */
export async function getSessionToCommit(tx: Tx, domainId: number, id: number): Promise<SessionRow | undefined> {
  const res = await tx.execute(sql`
    SELECT ${COMMIT_COLUMNS} FROM import_sessions WHERE id = ${id} AND domain_id = ${domainId} FOR UPDATE`);
  const row = first(res);
  return row && { ...row, records: [], result: null };
}

/** A session's planned records as stored. */
export async function sessionRecords(tx: Tx, id: number): Promise<ImportPlan['records']> {
  const res = await tx.execute(sql`SELECT records FROM import_sessions WHERE id = ${id}`);
  return first(res)?.records ?? [];
}

/** A session by id alone (the /internal API of the worker, which names the session it scans for). */
export async function getSessionById(tx: Tx | Db, id: number): Promise<SessionRow | undefined> {
  const res = await tx.execute(sql`SELECT ${COLUMNS} FROM import_sessions WHERE id = ${id}`);
  return first(res);
}

/** The domain's live (scanning or open) session. */
export async function liveSession(tx: Tx | Db, domainId: number): Promise<SessionRow | undefined> {
  const res = await tx.execute(sql`
    SELECT ${COLUMNS} FROM import_sessions WHERE domain_id = ${domainId} AND status IN ('scanning', 'open')`);
  return first(res);
}

/** The domain's newest scan session (live or not). */
export async function latestScan(db: Db, domainId: number): Promise<SessionRow | undefined> {
  const res = await db.execute(sql`
    SELECT ${COLUMNS} FROM import_sessions WHERE domain_id = ${domainId} AND source = 'scan'
    ORDER BY id DESC LIMIT 1`);
  return first(res);
}

export async function setProgress(db: Db | Tx, id: number, progress: ScanProgress): Promise<SessionStatus | undefined> {
  const res = await db.execute(sql`
    UPDATE import_sessions SET progress = CASE WHEN status = 'scanning' THEN ${json(progress)}::jsonb ELSE progress END,
      updated_at = CASE WHEN status = 'scanning' THEN now() ELSE updated_at END
    WHERE id = ${id} RETURNING status`);
  return rowsOf<{ status: SessionStatus }>(res)[0]?.status;
}

/** A scanning session's finds, planned: it becomes open. */
export async function storeScan(
  tx: Tx,
  id: number,
  inputs: SessionInput[],
  plan: ImportPlan,
  progress: ScanProgress,
): Promise<void> {
  await tx.execute(sql`
    UPDATE import_sessions SET status = 'open', inputs = ${json(inputs)}::json, records = ${json(plan.records)}::json,
      skipped = ${json(plan.skipped)}::json, errors = ${json(plan.errors)}::json, limit_error = ${plan.limitError},
      progress = ${json(progress)}::jsonb, updated_at = now()
    WHERE id = ${id}`);
}

/**
 * Closes a live session: committed (with its result), discarded, superseded or failed (with its error). A superseded
 * session names its successor afterwards (setSupersededBy): the successor can only be inserted once this one is closed.
 */
export async function closeSession(
  tx: Tx | Db,
  id: number,
  status: Exclude<SessionStatus, 'scanning' | 'open'>,
  extra: { result?: CommitResult; error?: string } = {},
): Promise<ClosedTimes | undefined> {
  const res = await tx.execute(sql`
    UPDATE import_sessions SET status = ${status}, result = ${extra.result ? json(extra.result) : null}::json,
      error = ${extra.error ?? null}, updated_at = now(), closed_at = now()
    WHERE id = ${id} AND status IN ('scanning', 'open')
    RETURNING updated_at, closed_at`);
  return rowsOf<ClosedTimes>(res)[0];
}

export async function setSupersededBy(tx: Tx, id: number, by: number): Promise<void> {
  await tx.execute(sql`UPDATE import_sessions SET superseded_by = ${by} WHERE id = ${id}`);
}

export async function deleteSession(tx: Tx, id: number): Promise<void> {
  await tx.execute(sql`DELETE FROM import_sessions WHERE id = ${id}`);
}
