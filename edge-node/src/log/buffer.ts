// Request log records collected in memory on the hot path (one small array push per request) and drained in batches.
import type { RequestContext } from '../context.js';

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
}

export class RequestLogBuffer {
  private records: RequestLogRecord[] = [];
  dropped = 0;
  total = 0;

  constructor(private readonly max = 100_000) {}

  add(ctx: RequestContext): void {
    this.total++;
    if (this.records.length >= this.max) {
      this.dropped++;
      return;
    }
    this.records.push({
      t: Date.now(),
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
    });
  }

  /** Takes every record collected so far. */
  drain(): RequestLogRecord[] {
    const out = this.records;
    this.records = [];
    return out;
  }

  /** Puts records back at the front after a failed shipment (bounded by max). */
  requeue(records: RequestLogRecord[]): void {
    this.records = records.concat(this.records).slice(0, this.max);
  }
}
