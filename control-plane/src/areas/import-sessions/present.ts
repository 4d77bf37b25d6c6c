// Database row → API body of an import session.
import { previewRecord } from '../records/routes.js';
import type { SessionRow } from './store.js';

const iso = (v: string | Date) => new Date(v).toISOString();

export function presentSession(row: SessionRow, domain: string) {
  return {
    id: row.id,
    domain,
    source: row.source,
    status: row.status,
    auto_commit: row.auto_commit,
    progress: row.source === 'scan' ? (row.progress as { phase: 'queued' }) : { phase: 'done' as const },
    records: row.records.map(previewRecord),
    ...(row.records_omitted ? { records_omitted: true } : {}),
    skipped: row.skipped,
    errors: row.errors,
    limit_error: row.limit_error,
    result: row.result,
    error: row.error,
    superseded_by: row.superseded_by,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
    closed_at: row.closed_at === null ? null : iso(row.closed_at),
  };
}
