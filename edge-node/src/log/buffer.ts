// Request log records collected in memory on the hot path (one small array push per request) and drained in batches.
import type { ServingPath, UaCategory, UnservedReason } from '@platform/shared/types';
import type { RequestContext } from '../context.js';
import { userAgentCategory } from './ua-category.js';
import { OriginMinuteCounts } from './origin-minutes.js';

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
 */
export class RequestLogBuffer {
  private ring: RequestLogRecord[] = [];
  /** Index of the oldest record in `ring` (non-zero only once the ring is full). */
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
  ) {}

  get size(): number {
    return this.count;
  }

  add(ctx: RequestContext): void {
    this.total++;
    const t = Date.now();
    this.origins.add(ctx, t);
    const record: RequestLogRecord = {
      t,
      host: ctx.host,
      path: ctx.path,
      method: ctx.method,
      status: ctx.status,
      bytes: ctx.bytes,
      cache: ctx.cacheStatus,
      rules: ctx.hits.length === 0 ? [] : ctx.hits.map((h) => [h.id, h.type, h.dry]),
      ms: Math.round((performance.now() - ctx.startedAt) * 100) / 100,
      upstreamMs: Math.round(ctx.upstreamMs * 100) / 100,
      peer: ctx.peer.text,
      tls: ctx.scheme === 'https' ? 'TLS' : 'none',
      proto: 'HTTP/1.1',
      ua: userAgentCategory(ctx.header('user-agent')),
      served: servingPath(ctx),
    };
    const unserved = ctx.unserved !== '' ? ctx.unserved : ctx.status === 499 ? 'client_aborted' : '';
    if (unserved !== '') record.unserved = unserved;
    if (ctx.originBytes > 0) record.originBytes = ctx.originBytes;
    if (ctx.markdown) record.md = true;
    if (ctx.rateLimitRule !== 0) {
      record.rlRule = ctx.rateLimitRule;
      record.rlKey = ctx.rateLimitKey;
    }
    if (ctx.waf !== null) record.waf = ctx.waf.map((e) => [e.ruleId, e.wafRule, e.phase, e.target, e.data, e.action]);
    if (ctx.fingerprint !== '') record.fp = ctx.fingerprint;
    if (ctx.botScore !== 0) {
      record.bot = ctx.botScore;
      record.botClass = ctx.botClass;
    }
    this.push(record);
  }

  private push(record: RequestLogRecord): void {
    if (this.count < this.max) {
      this.ring[(this.head + this.count) % this.max] = record;
      this.count++;
      return;
    }
    // Full: the newest overwrites the oldest.
    this.ring[this.head] = record;
    this.head = (this.head + 1) % this.max;
    this.dropped++;
  }

  /** Takes every record collected so far, oldest first. */
  drain(): RequestLogRecord[] {
    const out =
      this.head === 0
        ? this.ring.slice(0, this.count)
        : this.ring.slice(this.head).concat(this.ring.slice(0, this.head));
    this.ring = [];
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
