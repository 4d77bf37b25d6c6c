// The remaining domain operations of the spec's Domains list (issue 16 item 5): the last result of each manual
// check (read from where the checks store it), the analytics tag (a stored site tag) and custom pages (the
// domain's own HTML for the pages the edge makes, written through changeDomain so the nodes get them).
import { randomBytes } from 'node:crypto';
import { sql } from 'drizzle-orm';
import type { FastifyInstance } from 'fastify';
import { CUSTOM_PAGE_KINDS, CUSTOM_PAGE_MAX_BYTES, customPageProblem, isCustomPageKind } from '@platform/shared/config';
import { changeDomain, type DomainLock } from '../../config-log/index.js';
import type { Db, Tx } from '../../db/index.js';
import { rowsOf } from '../../db/migrate.js';
import { ApiError } from '../../errors.js';
import { ACME_DNS_TEST_INTERVAL_MS } from '../ssl/acme-dns-routes.js';
import type { AnalyticsTagT, CustomPagesT, CustomPagesUpdateT, ManualChecksT } from './schemas.js';

const iso = (d: Date | string | null | undefined): string | null => (d == null ? null : new Date(d).toISOString());

/** A slot's next allowed time: null when it may run now. */
function nextAllowed(lastAt: Date | null, intervalMs: number, now: number): string | null {
  if (!lastAt || lastAt.getTime() === 0) return null;
  const next = lastAt.getTime() + intervalMs;
  return next > now ? new Date(next).toISOString() : null;
}

/**
 * The last result of each manual check, read in one statement from where each check keeps it: `domain_checks`
 * (check-ns; verify and the delegation check share `delegation`) and the acme-dns account's last test.
 */
export async function manualChecks(app: FastifyInstance, domainId: number, now = Date.now()): Promise<ManualChecksT> {
  const res = await app.db.execute(sql`
    SELECT kind, last_at, result FROM domain_checks WHERE domain_id = ${domainId}
    UNION ALL
    SELECT 'acme-dns-test', last_test_at,
      CASE WHEN last_test_at IS NULL THEN NULL
           ELSE jsonb_build_object('ok', last_test_ok, 'error', last_test_error) END
      FROM acme_dns_accounts WHERE domain_id = ${domainId}`);
  const rows = rowsOf<{ kind: string; last_at: Date | string | null; result: Record<string, unknown> | null }>(res);
  const slot = (kind: string, intervalMs: number) => {
    const row = rows.find((r) => r.kind === kind);
    const lastAt = row?.last_at == null ? null : new Date(row.last_at);
    return {
      // Epoch: a result a background check wrote without taking the manual slot (transitions.ts recordCheckResult).
      last_run_at: lastAt && lastAt.getTime() > 0 ? lastAt.toISOString() : null,
      next_allowed_at: nextAllowed(lastAt, intervalMs, now),
      result: row?.result ?? null,
    };
  };
  const t = app.config.temporal;
  return {
    check_ns: slot('check-ns', t.checkNsIntervalMs),
    delegation: slot('delegation', t.delegationCheckIntervalMs),
    acme_dns_test: slot('acme-dns-test', ACME_DNS_TEST_INTERVAL_MS),
  };
}

interface TagRow {
  tag: string;
  created_at: Date | string;
  updated_at: Date | string;
}

function presentTag(row: TagRow | undefined): AnalyticsTagT {
  return row
    ? { enabled: true, tag: row.tag, created_at: iso(row.created_at), updated_at: iso(row.updated_at) }
    : { enabled: false, tag: null, created_at: null, updated_at: null };
}

export async function readAnalyticsTag(db: Db, domainId: number): Promise<AnalyticsTagT> {
  const res = await db.execute(
    sql`SELECT tag, created_at, updated_at FROM domain_analytics_tags WHERE domain_id = ${domainId}`,
  );
  return presentTag(rowsOf<TagRow>(res)[0]);
}

/**
 * Creates the domain's tag, or keeps it (a new one with `regenerate`). Nothing nodes serve changes: the row is
 * written under the domain's lock (changeDomain with no change appends nothing) so a concurrent delete of the
 * domain cannot leave a tag behind.
 */
export async function putAnalyticsTag(
  app: FastifyInstance,
  lock: DomainLock,
  regenerate: boolean,
): Promise<AnalyticsTagT> {
  return changeDomain(app, lock, async (tx, domain) => {
    const tag = randomBytes(16).toString('hex');
    const res = await tx.execute(sql`
      INSERT INTO domain_analytics_tags (domain_id, tag) VALUES (${domain.id}, ${tag})
      ON CONFLICT (domain_id) DO UPDATE SET tag = ${tag}, updated_at = now()
        WHERE ${regenerate}::boolean
      RETURNING tag, created_at, updated_at`);
    let row = rowsOf<TagRow>(res)[0];
    if (!row) {
      const kept = await tx.execute(
        sql`SELECT tag, created_at, updated_at FROM domain_analytics_tags WHERE domain_id = ${domain.id}`,
      );
      row = rowsOf<TagRow>(kept)[0];
    }
    return { value: presentTag(row) };
  });
}

export async function deleteAnalyticsTag(app: FastifyInstance, lock: DomainLock): Promise<AnalyticsTagT> {
  return changeDomain(app, lock, async (tx, domain) => {
    await tx.execute(sql`DELETE FROM domain_analytics_tags WHERE domain_id = ${domain.id}`);
    return { value: presentTag(undefined) };
  });
}

interface PageRow {
  kind: string;
  html: string;
  updated_at: Date | string;
}

function presentPages(rows: PageRow[]): CustomPagesT {
  return {
    pages: Object.entries(CUSTOM_PAGE_KINDS).map(([kind, spec]) => {
      const row = rows.find((r) => r.kind === kind);
      return {
        kind: kind as keyof typeof CUSTOM_PAGE_KINDS,
        description: spec.description,
        placeholder: spec.placeholder,
        placeholder_required: spec.required,
        html: row?.html ?? null,
        updated_at: iso(row?.updated_at),
      };
    }),
    max_bytes: CUSTOM_PAGE_MAX_BYTES,
  };
}

async function pageRows(db: Db | Tx, domainId: number): Promise<PageRow[]> {
  const res = await db.execute(
    sql`SELECT kind, html, updated_at FROM domain_custom_pages WHERE domain_id = ${domainId} ORDER BY kind`,
  );
  return rowsOf<PageRow>(res);
}

export async function readCustomPages(db: Db, domainId: number): Promise<CustomPagesT> {
  return presentPages(await pageRows(db, domainId));
}

/**
 * Sets (HTML) or resets (null) the named pages in one transaction: every page is checked first (400 naming the
 * kind; nothing stored), then written, and the change reaches the nodes as one config-log entry. A page set to
 * what it already holds, or a reset of a page not set, appends nothing.
 */
export async function putCustomPages(
  app: FastifyInstance,
  lock: DomainLock,
  update: CustomPagesUpdateT,
): Promise<CustomPagesT> {
  const entries = Object.entries(update).filter(([, v]) => v !== undefined) as Array<[string, string | null]>;
  for (const [kind, html] of entries) {
    if (!isCustomPageKind(kind)) throw new ApiError('CP_ERR_INVALID_INPUT', `unknown field ${kind}`);
    if (html === null) continue;
    const problem = customPageProblem(kind, html);
    if (problem) throw new ApiError('CP_ERR_INVALID_INPUT', `${kind} ${problem}`);
  }
  if (entries.length === 0) throw new ApiError('CP_ERR_INVALID_INPUT', 'name at least one page to set or reset');
  return changeDomain(app, lock, async (tx, domain) => {
    const before = await pageRows(tx, domain.id);
    let changed = false;
    for (const [kind, html] of entries) {
      const current = before.find((r) => r.kind === kind)?.html ?? null;
      if (current === html) continue;
      changed = true;
      if (html === null)
        await tx.execute(sql`DELETE FROM domain_custom_pages WHERE domain_id = ${domain.id} AND kind = ${kind}`);
      else
        await tx.execute(sql`
          INSERT INTO domain_custom_pages (domain_id, kind, html) VALUES (${domain.id}, ${kind}, ${html})
          ON CONFLICT (domain_id, kind) DO UPDATE SET html = EXCLUDED.html, updated_at = now()`);
    }
    const value = presentPages(changed ? await pageRows(tx, domain.id) : before);
    return { value, change: changed ? { domain: true } : undefined };
  });
}
