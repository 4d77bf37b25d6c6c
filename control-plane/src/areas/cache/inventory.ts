// Cache inventories (issue 15 items 1 and 5): POST /internal/cache-inventory takes the snapshots edge processes report
// of their caches (edge-node/src/cache/inventory.ts, msgpack, node token) and replaces what is stored of that node;
// the reads of GET /domains/{domain}/cache/... (routes.ts) answer from what is stored.
//
// A snapshot replaces the node's rows in one transaction. It carries the time it was taken: one older than the
// node's stored snapshot (a resend that lost a race with a newer one) is acknowledged and ignored, so snapshots are
// idempotent and never go back in time. Everything is bounded again here whatever a node sends: domains, entries
// listed, key and text lengths; entries beyond the bounds are counted in the domain's `dropped`. Nodes silent for
// longer than NODE_HORIZON_MS are left out of every read, and their rows deleted after NODE_PRUNE_MS.
import type { FastifyInstance } from 'fastify';
import { eq, inArray, lt, sql } from 'drizzle-orm';
import type { Tx } from '../../db/index.js';
import { cacheInventoryEntries, cacheInventoryNodes, cacheInventoryTotals, domains } from '../../db/schema.js';
import { ApiError } from '../../errors.js';
import { NODE_ID, REPORT_ID, nodeReportScope, throttled } from '../../internal/node-reports.js';

/** A node not heard from for this long is left out of the reads (it reports at least every minute). */
export const NODE_HORIZON_MS = 5 * 60_000;
/** ... and its rows are deleted after this long. */
const NODE_PRUNE_MS = 60 * 60_000;
const MAX_REPORT_BYTES = 32 * 1024 * 1024;
/** Domains per snapshot, entries listed per snapshot, and per domain. */
export const MAX_DOMAINS = 100_000;
export const MAX_ENTRIES = 50_000;
export const MAX_ENTRIES_PER_DOMAIN = 5000;
export const MAX_KEY = 4096;
const MAX_TEXT = 256;
const INSERT_CHUNK = 500;

/** scheme://host path ?query [\nvariant…]: the edge's cache key (edge-node/src/cache/key.ts). */
const KEY = /^https?:\/\/([^/?\n]{1,253})([^?\n]*)/;

interface Row {
  key: string;
  host: string;
  path: string;
  status: number;
  size: number;
  contentType: string;
  storedAt: Date;
  freshUntil: Date;
  expiresAt: Date;
  hits: number;
}

interface Snapshot {
  node: string;
  report: string;
  at: Date;
  address: string;
  domains: Map<string, { entries: number; bytes: number; dropped: number; rows: Row[] }>;
}

const count = (v: unknown): number => (Number.isSafeInteger(v) && (v as number) >= 0 ? (v as number) : 0);
const time = (v: unknown): Date | undefined =>
  typeof v === 'number' && Number.isFinite(v) && Math.abs(v) < 8.64e15 ? new Date(v) : undefined;
const text = (v: unknown): string => (typeof v === 'string' ? v.slice(0, MAX_TEXT) : '');

/** The snapshot typed and bounded; 400 for what is not a snapshot at all. */
export function parseSnapshot(body: unknown): Snapshot {
  const b = body as Record<string, unknown> | null;
  if (!b || typeof b !== 'object') throw new ApiError('CP_ERR_INVALID_INPUT', 'body: a msgpack map expected');
  if (typeof b.node !== 'string' || !NODE_ID.test(b.node))
    throw new ApiError('CP_ERR_INVALID_INPUT', 'node: 1-128 letters, digits, ".", "_", ":" or "-" expected');
  if (typeof b.report !== 'string' || !REPORT_ID.test(b.report))
    throw new ApiError('CP_ERR_INVALID_INPUT', 'report: <16 hex digits>-<sequence> expected');
  const at = time(b.at);
  if (!at) throw new ApiError('CP_ERR_INVALID_INPUT', 'at: milliseconds since the epoch expected');
  const address = typeof b.address === 'string' ? b.address : '';
  if (address !== '' && (address.length > 256 || !/^https?:\/\/[^/?#\s]+$/.test(address)))
    throw new ApiError('CP_ERR_INVALID_INPUT', 'address: an http(s) origin or "" expected');
  if (!Array.isArray(b.domains)) throw new ApiError('CP_ERR_INVALID_INPUT', 'domains: array expected');
  const out: Snapshot = { node: b.node, report: b.report, at, address, domains: new Map() };
  let listedTotal = 0;
  for (const d of b.domains.slice(0, MAX_DOMAINS)) {
    if (!Array.isArray(d) || typeof d[0] !== 'string' || d[0].length > 253) continue;
    const name = d[0].toLowerCase();
    if (out.domains.has(name)) continue;
    const listed: unknown[] = Array.isArray(d[4]) ? d[4] : [];
    const rows: Row[] = [];
    let dropped = count(d[3]);
    for (const e of listed) {
      if (rows.length >= MAX_ENTRIES_PER_DOMAIN || listedTotal >= MAX_ENTRIES) {
        dropped++;
        continue;
      }
      const row = Array.isArray(e) ? entryRow(e) : undefined;
      if (!row) {
        dropped++;
        continue;
      }
      rows.push(row);
      listedTotal++;
    }
    out.domains.set(name, { entries: count(d[1]), bytes: count(d[2]), dropped, rows });
  }
  return out;
}

/** One listed entry [key, status, size, content type, stored, fresh until, expires, hits], or undefined. */
function entryRow(e: unknown[]): Row | undefined {
  const key = e[0];
  if (typeof key !== 'string' || key.length > MAX_KEY) return undefined;
  const m = KEY.exec(key);
  const storedAt = time(e[4]);
  const freshUntil = time(e[5]);
  const expiresAt = time(e[6]);
  if (!m || !storedAt || !freshUntil || !expiresAt) return undefined;
  const status = count(e[1]);
  return {
    key,
    host: m[1].toLowerCase(),
    path: m[2] || '/',
    status: status <= 999 ? status : 0,
    size: count(e[2]),
    contentType: text(e[3]),
    storedAt,
    freshUntil,
    expiresAt,
    hits: Math.min(count(e[7]), 2 ** 31 - 1),
  };
}

/**
 * Stores a snapshot in place of what the node reported before. Domains are matched by name: a name no domain has
 * (deleted meanwhile) is skipped. Returns false when a newer snapshot of the node is stored already.
 */
export async function storeSnapshot(
  tx: Tx,
  s: Snapshot,
): Promise<{ applied: boolean; domains: number; entries: number }> {
  const claimed = await tx
    .insert(cacheInventoryNodes)
    .values({ node: s.node, address: s.address, report: s.report, takenAt: s.at })
    .onConflictDoUpdate({
      target: cacheInventoryNodes.node,
      set: { address: s.address, report: s.report, takenAt: s.at, reportedAt: sql`now()` },
      setWhere: sql`${cacheInventoryNodes.takenAt} <= ${s.at.toISOString()}::timestamptz`,
    })
    .returning({ node: cacheInventoryNodes.node });
  if (claimed.length === 0) return { applied: false, domains: 0, entries: 0 };
  await tx.delete(cacheInventoryEntries).where(eq(cacheInventoryEntries.node, s.node));
  await tx.delete(cacheInventoryTotals).where(eq(cacheInventoryTotals.node, s.node));
  const names = [...s.domains.keys()];
  const ids = new Map<string, number>();
  for (let i = 0; i < names.length; i += 1000) {
    const found = await tx
      .select({ id: domains.id, name: domains.name })
      .from(domains)
      .where(inArray(domains.name, names.slice(i, i + 1000)));
    for (const r of found) ids.set(r.name, r.id);
  }
  const totals = [];
  const entries = [];
  for (const [name, d] of s.domains) {
    const domainId = ids.get(name);
    if (domainId === undefined) continue;
    // Keys of another domain's hosts cannot be in this domain's cache: such rows are not stored.
    const own = d.rows.filter((r) => r.host === name || r.host.endsWith(`.${name}`));
    totals.push({
      domainId,
      node: s.node,
      entries: d.entries,
      bytes: d.bytes,
      dropped: d.dropped + d.rows.length - own.length,
    });
    for (const r of own) entries.push({ domainId, node: s.node, ...r });
  }
  for (let i = 0; i < totals.length; i += INSERT_CHUNK)
    await tx.insert(cacheInventoryTotals).values(totals.slice(i, i + INSERT_CHUNK));
  for (let i = 0; i < entries.length; i += INSERT_CHUNK)
    await tx
      .insert(cacheInventoryEntries)
      .values(entries.slice(i, i + INSERT_CHUNK))
      .onConflictDoNothing();
  return { applied: true, domains: totals.length, entries: entries.length };
}

/** Nodes silent for longer than NODE_PRUNE_MS are deleted (their rows with them), at most once a minute per process. */
const pruneNodes = throttled(60_000, (app) =>
  app.db.delete(cacheInventoryNodes).where(lt(cacheInventoryNodes.reportedAt, new Date(Date.now() - NODE_PRUNE_MS))),
);

export default async function cacheInventoryRoutes(app: FastifyInstance) {
  await app.register(async (scope) => {
    nodeReportScope(app, scope, MAX_REPORT_BYTES);
    scope.post(
      '/internal/cache-inventory',
      { schema: { hide: true }, bodyLimit: MAX_REPORT_BYTES },
      async (request) => {
        const snapshot = parseSnapshot(request.body);
        const result = await app.db.transaction((tx) => storeSnapshot(tx, snapshot));
        await pruneNodes(app);
        return result;
      },
    );
  });
}
