// Request log records collected in memory on the hot path (slots written in preallocated columns, no object per
// request) and drained in batches.
import { performance } from 'node:perf_hooks';
import { grown } from '@platform/shared';
import type { ServingPath, UaCategory, UnservedReason } from '@platform/shared/types';
import type { RequestContext, RuleHit, WafEvent } from '../context.js';
import { userAgentCategory } from './ua-category.js';
import { OriginMinuteCounts } from './origin-minutes.js';
import { wallClockAt } from '../clock.js';

/** One request as shipped to the control plane (msgpack, short keys keep batches small). */
export interface RequestLogRecord {
  /** Unix ms when the request arrived. */
  t: number;
  host: string;
  path: string;
  method: string;
  status: number;
  bytes: number;
  /** Cache status ('' when no cache rule matched a non-GET). */
  cache: string;
  /** Rule hits: [id, type, dry] */
  rules: [number, string, boolean][];
  /** Total and origin time in ms (origin -1 when no origin was asked). */
  ms: number;
  upstreamMs: number;
  peer: string;
  /** WAF findings, only when there were some: [edge rule id, managed rule id, phase, target, data, action]. */
  waf?: [number, string, number, string, string, string][];
  /** JA4H-style fingerprint, only when a fingerprint rule looked at the request. */
  fp?: string;
  /** Bot score 1–99 (1: automated) and class, only when a bot_route rule looked at the request. */
  bot?: number;
  botClass?: string;
  /** Set by RequestLogBuffer.add (optional for records built elsewhere). TLS of the client connection: `none` plain HTTP; `TLS` when the server does not say which version (uWS). */
  tls?: string;
  /** HTTP version of the client's request (`HTTP/1.1`: uWS speaks HTTP/1.x only). */
  proto?: string;
  /** What the User-Agent says of the client. */
  ua?: UaCategory;
  /** Where the answer came from. */
  served?: ServingPath;
  /** Why the origin did not answer, only when it did not. */
  unserved?: UnservedReason;
  /** Body bytes received from the origin, only when some were. */
  originBytes?: number;
  /** Only when the answer was Markdown for agents. */
  md?: true;
  /** The enforced rate_limit rule that refused or challenged the request and the key it counted, only then. */
  rlRule?: number;
  rlKey?: string;
}

/** Where the answer of a finished request came from. */
export function servingPath(ctx: RequestContext): ServingPath {
  if (ctx.cacheStatus === 'HIT' || ctx.cacheStatus === 'STALE') return 'cache';
  return ctx.upstreamMs >= 0 && ctx.unserved === '' ? 'origin' : 'edge';
}

/** A packed batch (shipper.ts) kept until the control plane acknowledges it. */
export interface PendingBatch {
  /** `<incarnation>-<sequence>`: the control plane counts a batch id once. */
  id: string;
  body: Buffer;
  records: number;
  /** Unix ms when it was cut. */
  at: number;
}

/** How much the node keeps of batches not acknowledged yet: beyond either bound the oldest batch is dropped. */
export interface OutboxBounds {
  maxBatches: number;
  maxBytes: number;
}

export const OUTBOX_DEFAULTS: OutboxBounds = { maxBatches: 64, maxBytes: 64 * 1024 * 1024 };

/**
 * At most `max` records, in arrival order (a ring): while the control plane is unreachable the oldest are dropped and
 * counted, so what is shipped once it is back is the most recent window and memory stays flat. Drained records are
 * packed into batches (shipper.ts) and kept in the outbox, itself bounded in batches and bytes, until acknowledged.
 *
 * The ring is a set of columns, one slot per record (RecordColumns): a request writes its fields into the slots of
 * its row and allocates nothing; the record objects are built when the ring is drained (once per shipment, off the
 * request path). Records held as objects for a whole flush interval outlived the young generation and were promoted,
 * which made the request log the largest single cost of a cache hit (bench/RESULTS.md, issue 12).
 */
export class RequestLogBuffer {
  private readonly cols: RecordColumns;
  /** Index of the oldest record in the ring (non-zero only once the ring is full). */
  private head = 0;
  private count = 0;
  /** Records dropped (oldest first) because the buffer or the outbox was full, or their batch too old to resend. */
  dropped = 0;
  total = 0;
  /** Per-minute origin requests and errors per hostname (uptime detection), shipped with the records. */
  readonly origins = new OriginMinuteCounts();

  /** Packed batches waiting for an acknowledgement, oldest first, and their bytes. */
  readonly outbox: PendingBatch[] = [];
  outboxBytes = 0;

  constructor(
    readonly max = 100_000,
    readonly bounds: OutboxBounds = OUTBOX_DEFAULTS,
  ) {
    this.cols = new RecordColumns(max);
  }

  get size(): number {
    return this.count;
  }

  add(ctx: RequestContext): void {
    this.total++;
    // The request's arrival (its clock reading, no clock read here): its duration below is the one read at the end.
    const t = wallClockAt(ctx.startedAt);
    this.origins.add(ctx, t);
    let row: number;
    if (this.count < this.max) {
      row = (this.head + this.count) % this.max;
      this.count++;
    } else {
      // Full: the newest overwrites the oldest.
      row = this.head;
      this.head = (this.head + 1) % this.max;
      this.dropped++;
    }
    this.cols.write(row, ctx, t);
  }

  /** Takes every record collected so far, oldest first. */
  drain(): RequestLogRecord[] {
    const out: RequestLogRecord[] = new Array(this.count);
    for (let i = 0; i < this.count; i++) out[i] = this.cols.record((this.head + i) % this.max);
    // The drained rows' strings and rule lists go with their columns (nothing kept alive by the slots).
    this.cols.reset();
    this.head = 0;
    this.count = 0;
    return out;
  }

  /** Queues a packed batch; beyond the outbox's bounds the oldest batches are dropped and their records counted. */
  enqueue(batch: PendingBatch): void {
    this.outbox.push(batch);
    this.outboxBytes += batch.body.length;
    while (
      this.outbox.length > 0 &&
      (this.outbox.length > this.bounds.maxBatches || this.outboxBytes > this.bounds.maxBytes)
    )
      this.removeOldest(true);
  }

  /** Removes the oldest batch: acknowledged, or `lost` (its records counted as dropped). */
  removeOldest(lost: boolean): void {
    const b = this.outbox.shift();
    if (!b) return;
    this.outboxBytes -= b.body.length;
    if (lost) this.dropped += b.records;
  }
}

const TLS = ['none', 'TLS'] as const;

/**
 * The fields most requests leave at their defaults (Markdown, an enforced rate_limit, WAF findings, a fingerprint, a
 * bot score): one object per request that has any, so a request without any writes one slot (null) for all of them.
 */
interface RareFields {
  md: boolean;
  rlRule: number;
  rlKey: string;
  waf: WafEvent[] | null;
  fp: string;
  bot: number;
  botClass: string;
}

/** Rows the number columns are first made with; they double up to the ring's size as rows are written. */
const FIRST_ROWS = 1024;

/**
 * The fields of the ring's records by column, row i of each column one record. Slots are written in place (a column
 * grows until the ring is full, then rows are reused). Numbers go in typed arrays (a store is a plain write: no
 * elements kind to check, no write barrier), kept across drains as they hold no references; strings and the
 * context's own lists (rule hits, the rare fields) by reference in arrays made anew at each drain (reset).
 */
class RecordColumns {
  private rows = 0;
  private t: Float64Array = new Float64Array(0);
  private status: Int32Array = new Int32Array(0);
  private bytes: Float64Array = new Float64Array(0);
  private ms: Float64Array = new Float64Array(0);
  private upstreamMs: Float64Array = new Float64Array(0);
  private tls: Uint8Array = new Uint8Array(0);
  private originBytes: Float64Array = new Float64Array(0);
  private host: string[] = [];
  private path: string[] = [];
  private method: string[] = [];
  private cache: string[] = [];
  /** A request's one hit as it is (shared: context.ts ruleHit), its list when more, null when none. */
  private hits: (RuleHit | RuleHit[] | null)[] = [];
  private peer: string[] = [];
  private ua: UaCategory[] = [];
  private served: ServingPath[] = [];
  private unserved: (UnservedReason | '')[] = [];
  private rare: (RareFields | null)[] = [];

  constructor(private readonly max: number) {}

  /** Drops the references of the drained rows (the strings and lists go with them); the number columns stay. */
  reset(): void {
    this.host = [];
    this.path = [];
    this.method = [];
    this.cache = [];
    this.hits = [];
    this.peer = [];
    this.ua = [];
    this.served = [];
    this.unserved = [];
    this.rare = [];
  }

  /** The number columns with room for row `row` (< max): doubled, the rows written so far copied. */
  private grow(row: number): void {
    let rows = this.rows === 0 ? FIRST_ROWS : this.rows * 2;
    while (rows <= row) rows *= 2;
    rows = Math.max(Math.min(rows, this.max), row + 1);
    this.t = grown(this.t, rows);
    this.bytes = grown(this.bytes, rows);
    this.ms = grown(this.ms, rows);
    this.upstreamMs = grown(this.upstreamMs, rows);
    this.originBytes = grown(this.originBytes, rows);
    this.status = grown(this.status, rows);
    this.tls = grown(this.tls, rows);
    this.rows = rows;
  }

  write(row: number, ctx: RequestContext, t: number): void {
    if (row >= this.rows) this.grow(row);
    this.t[row] = t;
    this.host[row] = ctx.host;
    this.path[row] = ctx.path;
    this.method[row] = ctx.method;
    this.status[row] = ctx.status;
    this.bytes[row] = ctx.bytes;
    this.cache[row] = ctx.cacheStatus;
    const hits = ctx.hits;
    this.hits[row] = hits.length === 0 ? null : hits.length === 1 ? hits[0] : hits;
    this.ms[row] = Math.round((performance.now() - ctx.startedAt) * 100) / 100;
    this.upstreamMs[row] = Math.round(ctx.upstreamMs * 100) / 100;
    this.peer[row] = ctx.peer.text;
    this.tls[row] = ctx.scheme === 'https' ? 1 : 0;
    this.ua[row] = userAgentCategory(ctx.header('user-agent'));
    this.served[row] = servingPath(ctx);
    this.unserved[row] = ctx.unserved !== '' ? ctx.unserved : ctx.status === 499 ? 'client_aborted' : '';
    this.originBytes[row] = ctx.originBytes;
    this.rare[row] =
      ctx.markdown || ctx.rateLimitRule !== 0 || ctx.waf !== null || ctx.fingerprint !== '' || ctx.botScore !== 0
        ? {
            md: ctx.markdown,
            rlRule: ctx.rateLimitRule,
            rlKey: ctx.rateLimitKey,
            waf: ctx.waf,
            fp: ctx.fingerprint,
            bot: ctx.botScore,
            botClass: ctx.botClass,
          }
        : null;
  }

  /** Row `i` as the record shipped: optional fields only when set. */
  record(i: number): RequestLogRecord {
    const hits = this.hits[i];
    const record: RequestLogRecord = {
      t: this.t[i],
      host: this.host[i],
      path: this.path[i],
      method: this.method[i],
      status: this.status[i],
      bytes: this.bytes[i],
      cache: this.cache[i],
      rules:
        hits === null
          ? []
          : Array.isArray(hits)
            ? hits.map((h) => [h.id, h.type, h.dry])
            : [[hits.id, hits.type, hits.dry]],
      ms: this.ms[i],
      upstreamMs: this.upstreamMs[i],
      peer: this.peer[i],
      tls: TLS[this.tls[i]],
      proto: 'HTTP/1.1',
      ua: this.ua[i],
      served: this.served[i],
    };
    const unserved = this.unserved[i];
    if (unserved !== '') record.unserved = unserved;
    if (this.originBytes[i] > 0) record.originBytes = this.originBytes[i];
    const rare = this.rare[i];
    if (rare === null) return record;
    if (rare.md) record.md = true;
    if (rare.rlRule !== 0) {
      record.rlRule = rare.rlRule;
      record.rlKey = rare.rlKey;
    }
    const waf = rare.waf;
    if (waf !== null) record.waf = waf.map((e) => [e.ruleId, e.wafRule, e.phase, e.target, e.data, e.action]);
    if (rare.fp !== '') record.fp = rare.fp;
    if (rare.bot !== 0) {
      record.bot = rare.bot;
      record.botClass = rare.botClass;
    }
    return record;
  }
}
