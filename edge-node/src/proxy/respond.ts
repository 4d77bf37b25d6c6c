// Writing answers with uWS: status line table, header writing with the response header rules, whole-body answers.
import { STATUS_CODES } from 'node:http';
import type { HttpResponse } from 'uWebSockets.js';
import type { RequestContext } from '../context.js';
import { applyHeaderOps, type HeaderOp } from '../rules/header.js';

const STATUS_LINES: string[] = [];
for (let s = 100; s < 600; s++) STATUS_LINES[s] = `${s} ${STATUS_CODES[s] ?? 'Status'}`;
STATUS_LINES[526] = '526 Invalid SSL Certificate'; // Cloudflare's status for an origin certificate that does not verify

export function statusLine(status: number): string {
  return STATUS_LINES[status] ?? `${status} Status`;
}

/** Response header operations collected from the matching header rules, in priority order. */
export type ResponseOps = HeaderOp[];

/**
 * The status line's text and the header lines as one string for uWS's writeStatus, which writes `HTTP/1.1 `, it and
 * CRLF: the same bytes as writeStatus and a writeHeader per header, in one call into uWS and one UTF-8 conversion
 * instead of two per header. Names and values are the checked ones writeHeader was given (no CR or LF in them).
 */
function headBlock(status: number, headers: [string, string][]): string {
  let block = statusLine(status);
  for (let i = 0; i < headers.length; i++) block += `\r\n${headers[i][0]}: ${headers[i][1]}`;
  return block;
}

/** Writes status and headers (call inside res.cork). Response header rules apply last; x-cache-status is added when set. */
export function writeHead(
  res: HttpResponse,
  ctx: RequestContext,
  status: number,
  headers: [string, string][],
  ops: ResponseOps | null,
): void {
  ctx.status = status;
  if (ctx.cacheStatus !== '') headers.push(['x-cache-status', ctx.cacheStatus]);
  if (ops !== null && ops.length > 0) applyHeaderOps(headers, ops);
  res.writeStatus(headBlock(status, headers));
}

/**
 * A stored answer's status line and headers as uWS is to write them (headBlock), encoded once per stored header list:
 * a hit writes them with one call and no conversion.
 */
const storedHeads = new WeakMap<[string, string][], { status: number; head: Buffer }>();
function storedHead(status: number, headers: [string, string][]): Buffer {
  let made = storedHeads.get(headers);
  if (made === undefined || made.status !== status)
    storedHeads.set(headers, (made = { status, head: Buffer.from(headBlock(status, headers)) }));
  return made.head;
}

/**
 * Answers with a whole body (edge-made answers and cache hits). Does nothing when the client is gone. Closes the
 * connection after the answer when uWS is paused on a request body left unread (ctx.bodyPaused): the rest would never
 * be read, and the client's next request on that connection would hang. Otherwise uWS reads the rest of the body,
 * which the body stream drops (server.ts), and the connection serves the next request.
 */
export function respond(
  res: HttpResponse,
  ctx: RequestContext,
  status: number,
  headers: [string, string][],
  body: string | Buffer,
  ops: ResponseOps | null,
): void {
  if (ctx.aborted) return;
  ctx.aborted = true; // the response is finished: later aborts and writes are no-ops
  ctx.bytes = typeof body === 'string' ? Buffer.byteLength(body) : body.length;
  answer.set(res, ctx, status, headers, body, ops, -1);
  res.cork(corkAnswer);
}

/**
 * Answers a cache hit: the stored status, headers and body, and its Age. The stored header list is written as it is
 * (no copy) unless response header rules must edit it; Age and X-Cache-Status go last, as respond would write them.
 */
export function respondStored(
  res: HttpResponse,
  ctx: RequestContext,
  status: number,
  stored: [string, string][],
  body: Buffer,
  ageSec: number,
  ops: ResponseOps | null,
): void {
  if (ops !== null && ops.length > 0) {
    respond(res, ctx, status, [...stored, ['age', String(ageSec)]], body, ops);
    return;
  }
  if (ctx.aborted) return;
  ctx.aborted = true;
  ctx.bytes = body.length;
  answer.set(res, ctx, status, stored, body, null, ageSec);
  res.cork(corkAnswer);
}

/**
 * The answer res.cork is writing: cork runs its callback synchronously, so one module-level callback serves every
 * answer (no closure per request).
 */
class PendingAnswer {
  res: HttpResponse | null = null;
  ctx: RequestContext | null = null;
  status = 0;
  headers: [string, string][] = [];
  body: string | Buffer = '';
  ops: ResponseOps | null = null;
  /** A stored answer's Age (written after its unedited headers), -1 otherwise. */
  ageSec = -1;

  set(
    res: HttpResponse,
    ctx: RequestContext,
    status: number,
    headers: [string, string][],
    body: string | Buffer,
    ops: ResponseOps | null,
    ageSec: number,
  ): void {
    this.res = res;
    this.ctx = ctx;
    this.status = status;
    this.headers = headers;
    this.body = body;
    this.ops = ops;
    this.ageSec = ageSec;
  }

  write(): void {
    const res = this.res!;
    const ctx = this.ctx!;
    if (this.ageSec >= 0) {
      ctx.status = this.status;
      res.writeStatus(storedHead(this.status, this.headers));
      res.writeHeader('age', String(this.ageSec));
      if (ctx.cacheStatus !== '') res.writeHeader('x-cache-status', ctx.cacheStatus);
    } else writeHead(res, ctx, this.status, this.headers, this.ops);
    if (ctx.method === 'HEAD') res.endWithoutBody(ctx.bytes, ctx.bodyPaused);
    else res.end(this.body, ctx.bodyPaused);
    this.res = null;
    this.ctx = null;
    this.body = '';
  }
}

const answer = new PendingAnswer();
function corkAnswer(): void {
  answer.write();
}

export function textAnswer(message: string): [string, string][] {
  void message;
  return [['content-type', 'text/plain; charset=utf-8']];
}
