// The cache reads (GET /domains/{domain}/cache/...), answered from the nodes' inventories (inventory.ts): totals,
// totals per node, the entries page by page, and where one entry's object is.
import { and, asc, eq, sql, type SQL } from 'drizzle-orm';
import type { Db } from '../../db/index.js';
import { cacheInventoryEntries as e, cacheInventoryNodes as n, cacheInventoryTotals as t } from '../../db/schema.js';
import { ApiError } from '../../errors.js';
import { NODE_ID } from '../../internal/node-reports.js';
import { NODE_HORIZON_MS } from './inventory.js';

/** Nodes heard from within the horizon. */
const live = sql`${n.reportedAt} > now() - make_interval(secs => ${NODE_HORIZON_MS / 1000})`;

export interface NodeTotals {
  node: string;
  entries: number;
  bytes: number;
  /** Entries not listed in the browse (beyond the node's bounds). */
  unlisted: number;
  reported_at: string;
}

export async function nodeTotals(db: Db, domainId: number): Promise<NodeTotals[]> {
  const rows = await db
    .select({ node: t.node, entries: t.entries, bytes: t.bytes, dropped: t.dropped, reportedAt: n.reportedAt })
    .from(t)
    .innerJoin(n, eq(n.node, t.node))
    .where(and(eq(t.domainId, domainId), live))
    .orderBy(asc(t.node));
  return rows.map((r) => ({
    node: r.node,
    entries: r.entries,
    bytes: Number(r.bytes),
    unlisted: r.dropped,
    reported_at: r.reportedAt.toISOString(),
  }));
}

export interface CacheTotals {
  entries: number;
  bytes: number;
  nodes: number;
  unlisted: number;
  reported_at: string | null;
}

export function sumTotals(nodes: readonly NodeTotals[]): CacheTotals {
  let reported: string | null = null;
  const sum = { entries: 0, bytes: 0, nodes: nodes.length, unlisted: 0 };
  for (const x of nodes) {
    sum.entries += x.entries;
    sum.bytes += x.bytes;
    sum.unlisted += x.unlisted;
    if (reported === null || x.reported_at > reported) reported = x.reported_at;
  }
  return { ...sum, reported_at: reported };
}

/** An entry's id in the API: the node and the key, base64url. */
export function entryId(node: string, key: string): string {
  return Buffer.from(`${node}\n${key}`).toString('base64url');
}

/** The node and key an entry id names; 400 when it is not one. */
export function parseEntryId(id: string, what = 'entry'): { node: string; key: string } {
  const raw = /^[A-Za-z0-9_-]+$/.test(id) ? Buffer.from(id, 'base64url').toString() : '';
  const nl = raw.indexOf('\n');
  const node = raw.slice(0, nl);
  const key = raw.slice(nl + 1);
  if (nl <= 0 || !NODE_ID.test(node) || !/^https?:\/\//.test(key) || entryId(node, key) !== id)
    throw new ApiError('CP_ERR_INVALID_INPUT', `${what}: not an entry id this API returned`);
  return { node, key };
}

export interface BrowseFilters {
  host?: string;
  path_prefix?: string;
  content_type?: string;
  node?: string;
}

export interface CacheEntryView {
  id: string;
  node: string;
  url: string;
  host: string;
  path: string;
  /** The request headers the stored variant answers (`name=value` lines), '' when the answer does not vary. */
  variant: string;
  status: number;
  size: number;
  content_type: string;
  stored_at: string;
  fresh_until: string;
  expires_at: string;
  fresh: boolean;
  hits: number;
}

/** The URL of a key (scheme, host, path, query) and its variant part. */
function splitKey(key: string): { url: string; variant: string } {
  const nl = key.indexOf('\n');
  const base = nl < 0 ? key : key.slice(0, nl);
  return { url: base.endsWith('?') ? base.slice(0, -1) : base, variant: nl < 0 ? '' : key.slice(nl + 1) };
}

/** One page of the domain's listed entries in key order (then node), after the cursor's entry. */
export async function browseEntries(
  db: Db,
  domainId: number,
  f: BrowseFilters,
  limit: number,
  cursor: { node: string; key: string } | null,
): Promise<{ entries: CacheEntryView[]; next: { node: string; key: string } | null }> {
  const where: SQL[] = [eq(e.domainId, domainId), live];
  if (f.host !== undefined) where.push(eq(e.host, f.host.toLowerCase()));
  if (f.path_prefix !== undefined) where.push(sql`starts_with(${e.path}, ${f.path_prefix})`);
  if (f.content_type !== undefined)
    where.push(sql`starts_with(lower(${e.contentType}), ${f.content_type.toLowerCase()})`);
  if (f.node !== undefined) where.push(eq(e.node, f.node));
  if (cursor)
    where.push(
      sql`(${e.key} COLLATE "C", ${e.node} COLLATE "C") > (${cursor.key} COLLATE "C", ${cursor.node} COLLATE "C")`,
    );
  const rows = await db
    .select({
      node: e.node,
      key: e.key,
      host: e.host,
      path: e.path,
      status: e.status,
      size: e.size,
      contentType: e.contentType,
      storedAt: e.storedAt,
      freshUntil: e.freshUntil,
      expiresAt: e.expiresAt,
      hits: e.hits,
    })
    .from(e)
    .innerJoin(n, eq(n.node, e.node))
    .where(and(...where))
    .orderBy(sql`${e.key} COLLATE "C"`, sql`${e.node} COLLATE "C"`)
    .limit(limit + 1);
  const now = Date.now();
  const page = rows.slice(0, limit).map((r) => ({
    id: entryId(r.node, r.key),
    node: r.node,
    ...splitKey(r.key),
    host: r.host,
    path: r.path,
    status: r.status,
    size: Number(r.size),
    content_type: r.contentType,
    stored_at: r.storedAt.toISOString(),
    fresh_until: r.freshUntil.toISOString(),
    expires_at: r.expiresAt.toISOString(),
    fresh: r.freshUntil.getTime() > now,
    hits: r.hits,
  }));
  const last = rows.length > limit ? rows[limit - 1] : undefined;
  return { entries: page, next: last ? { node: last.node, key: last.key } : null };
}

/** The listed entry `key` of the domain on `node` (a live node), with its node's cache listener; undefined if none. */
export async function findEntry(
  db: Db,
  domainId: number,
  node: string,
  key: string,
): Promise<{ size: number; address: string } | undefined> {
  const [row] = await db
    .select({ size: e.size, address: n.address })
    .from(e)
    .innerJoin(n, eq(n.node, e.node))
    .where(and(eq(e.domainId, domainId), eq(e.node, node), eq(e.key, key), live));
  return row ? { size: Number(row.size), address: row.address } : undefined;
}
