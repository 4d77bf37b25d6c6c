// POST /internal/request-logs: msgpack batches of request log records from edge nodes, authenticated with the node
// token, stored in request_logs and the analytics store and counted by the uptime and attack detectors. Hidden from
// the OpenAPI document.
//
// Exactly once: a batch carries the node's id and a batch id (`<incarnation>-<sequence>`, edge-node/src/log/shipper.ts).
// The Postgres effects (request_logs, uptime minute counts, attack minutes) commit in one transaction with the row
// (node, batch) of request_log_batches; the analytics store records the same pair in its own transaction with its
// rows. Each store skips a batch it holds already, so a batch sent again after any crash — between the two stores,
// or after both but before the answer — is acknowledged (2xx) and counted nowhere twice. The answer comes after both.
import type { FastifyInstance } from 'fastify';
import { lt } from 'drizzle-orm';
import { BOT_CLASSES } from '@platform/shared/match';
import { requestLogBatches, requestLogs, type WafEventRow } from '../db/schema.js';
import { ApiError } from '../errors.js';
import { NODE_ID, REPORT_ID, nodeReportScope, throttled } from './node-reports.js';
import {
  ingestMinuteCounts,
  ingestMonitorRecords,
  ingestProbeCounts,
  scheduleEvaluations,
} from '../areas/uptime/detector.js';
import { ingestAttackRecords, startAttackDetector } from '../areas/security/detector.js';
import { appendRequestLogs, shippedFields, type ShippedLater } from '../areas/analytics/ingest.js';
import { APPLIED_BATCHES_KEEP_MS, type AppliedBatch } from '../areas/analytics/store.js';

/** One request-log record as an edge node ships it (edge-node/src/log/buffer.ts), with the later fields. */
export interface ShippedRecord extends ShippedLater {
  t: number;
  host: string;
  path: string;
  method: string;
  status: number;
  bytes: number;
  cache: string;
  rules: [number, string, boolean][];
  ms: number;
  upstreamMs: number;
  peer: string;
  /** WAF findings (edge-node/src/log/buffer.ts), absent when none. */
  waf?: unknown;
  /** JA4H-style fingerprint, bot score and class (edge-node/src/rules), absent when no such rule looked. */
  fp?: unknown;
  bot?: unknown;
  botClass?: unknown;
}

/** A shipped fingerprint as the edge computes it (lower-case letters, digits, `_`; 51 characters), else ''. */
function fingerprint(v: unknown): string {
  return typeof v === 'string' && v.length <= 64 && /^[a-z0-9_]*$/.test(v) ? v : '';
}
/** A bot score 1-99 and a known class, else 0 and ''. */
const botScore = (v: unknown): number =>
  Number.isInteger(v) && (v as number) >= 1 && (v as number) <= 99 ? (v as number) : 0;
const botClass = (v: unknown): string =>
  typeof v === 'string' && (BOT_CLASSES as readonly string[]).includes(v) ? v : '';

/** Events kept per record, and characters of each text part (the edge truncates data to 64 already). */
const MAX_WAF_EVENTS = 16;
const MAX_WAF_TEXT = 256;

/** The shipped WAF events, bounded and typed: whatever a node sends, a row holds at most 16 small tuples. */
function wafEvents(v: unknown): WafEventRow[] {
  if (!Array.isArray(v)) return [];
  const out: WafEventRow[] = [];
  for (const e of v.slice(0, MAX_WAF_EVENTS)) {
    if (!Array.isArray(e)) continue;
    const text = (x: unknown) => (typeof x === 'string' ? x.slice(0, MAX_WAF_TEXT) : '');
    out.push([Number(e[0]) || 0, text(e[1]), Number(e[2]) || 0, text(e[3]), text(e[4]), text(e[5])]);
  }
  return out;
}

const MAX_BATCH_BYTES = 32 * 1024 * 1024;
const INSERT_CHUNK = 500;

/** The shipment's batch, undefined when it has none (sent by hand: applied without the check); malformed: 400. */
function batchOf(body: { node?: unknown; batch?: unknown }): AppliedBatch | undefined {
  if (body.batch === undefined) return undefined;
  if (typeof body.batch !== 'string' || !REPORT_ID.test(body.batch))
    throw new ApiError('CP_ERR_INVALID_INPUT', 'batch: <16 hex digits>-<sequence of at most 15 digits> expected');
  if (typeof body.node !== 'string' || !NODE_ID.test(body.node))
    throw new ApiError(
      'CP_ERR_INVALID_INPUT',
      'node: 1-128 letters, digits, ".", "_", ":" or "-" required with a batch',
    );
  return { node: body.node, id: body.batch };
}

/** Batch ids older than the nodes' retry horizon are deleted, at most once an hour per process. */
const pruneBatches = throttled(3600_000, (app) =>
  app.db
    .delete(requestLogBatches)
    .where(lt(requestLogBatches.appliedAt, new Date(Date.now() - APPLIED_BATCHES_KEEP_MS))),
);

export default async function requestLogRoutes(app: FastifyInstance) {
  startAttackDetector(app);
  await app.register(async (scope) => {
    nodeReportScope(app, scope, MAX_BATCH_BYTES);
    scope.post('/internal/request-logs', { schema: { hide: true }, bodyLimit: MAX_BATCH_BYTES }, async (request) => {
      const body = request.body as {
        node?: unknown;
        batch?: unknown;
        records?: unknown;
        minutes?: unknown;
        probes?: unknown;
      };
      if (!body || typeof body !== 'object' || !Array.isArray(body.records))
        throw new ApiError('CP_ERR_INVALID_INPUT', 'records: array required');
      const batch = batchOf(body);
      const node = typeof body.node === 'string' ? body.node.slice(0, 128) : 'unknown';
      const rows = (body.records as ShippedRecord[])
        .filter((r) => r && typeof r.host === 'string')
        .map((r) => ({
          at: new Date(Number(r.t) || Date.now()),
          node,
          host: String(r.host).slice(0, 253),
          path: String(r.path ?? '').slice(0, 2048),
          method: String(r.method ?? '').slice(0, 16),
          status: Number(r.status) || 0,
          bytes: Number(r.bytes) || 0,
          cacheStatus: String(r.cache ?? ''),
          ruleHits: Array.isArray(r.rules) ? r.rules : [],
          wafEvents: wafEvents(r.waf),
          fingerprint: fingerprint(r.fp),
          botScore: botScore(r.bot),
          botClass: botClass(r.botClass),
          durationMs: Number(r.ms) || 0,
          upstreamMs: Number(r.upstreamMs) || 0,
          clientIp: String(r.peer ?? ''),
          // Analytics only: request_logs has no columns for them (inserting ignores the key).
          fields: shippedFields(r),
        }));
      const counted = { minutes: 0, monitorMinutes: 0, probes: 0, attackMinutes: 0 };
      const evaluate = new Set<number>();
      let duplicate = false;
      await app.db.transaction(async (tx) => {
        if (batch) {
          const claimed = await tx
            .insert(requestLogBatches)
            .values({ node: batch.node, batch: batch.id })
            .onConflictDoNothing()
            .returning({ node: requestLogBatches.node });
          // Applied before (its answer was lost): nothing of it is counted again.
          if (claimed.length === 0) return void (duplicate = true);
        }
        for (let i = 0; i < rows.length; i += INSERT_CHUNK)
          await tx.insert(requestLogs).values(rows.slice(i, i + INSERT_CHUNK));
        const scope = { db: tx, evaluate };
        // Uptime: the per-minute origin counts of the same shipment (edge-node/src/log/origin-minutes.ts).
        // and the monitors' path scopes, matched on the shipped records.
        counted.minutes = await ingestMinuteCounts(app, body.minutes, scope);
        counted.monitorMinutes = await ingestMonitorRecords(app, body.records, scope);
        // and the probes the edge sent where traffic was too thin (edge-node/src/uptime/probes.ts).
        counted.probes = await ingestProbeCounts(app, body.probes, scope);
        // Attack detection: per-domain minute counts and busiest clients of the same records (areas/security/detector.ts).
        counted.attackMinutes = await ingestAttackRecords(app, body.records, tx);
      });
      // Analytics: the same rows, with their domain and owner, into the analytics store (areas/analytics). Also for a
      // duplicate: the first delivery may have committed above and not reached this line (the store skips a batch it
      // holds). With a batch id a failure here answers 500 and the node sends the batch again.
      const analytics = await appendRequestLogs(app, rows, batch);
      await scheduleEvaluations(app, evaluate);
      if (batch) await pruneBatches(app);
      return {
        stored: duplicate ? 0 : rows.length,
        duplicate,
        analytics,
        minutes: counted.minutes,
        monitor_minutes: counted.monitorMinutes,
        probe_minutes: counted.probes,
        attack_minutes: counted.attackMinutes,
      };
    });
  });
}
