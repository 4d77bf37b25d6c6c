// Writing answers with uWS: status line table, header writing with the response header rules, whole-body answers.
import { STATUS_CODES } from 'node:http';
import type { HttpResponse } from 'uWebSockets.js';
import type { RequestContext } from '../context.js';
import type { ForwardHead } from './origin-client/request.js';
import { applyHeaderOps, type HeaderOp } from '../rules/header.js';

const STATUS_LINES: string[] = [];
for (let s = 100; s < 600; s++) STATUS_LINES[s] = `${s} ${STATUS_CODES[s] ?? 'Status'}`;
STATUS_LINES[526] = '526 Invalid SSL Certificate'; // Cloudflare's status for an origin certificate that does not verify

export function statusLine(status: number): string {
  return STATUS_LINES[status] ?? `${status} Status`;
}

/** The status lines as bytes (ASCII: the same bytes uWS writes for the text), made on first use. */
const STATUS_BYTES: Buffer[] = [];
function statusBytes(status: number): Buffer {
  return (STATUS_BYTES[status] ??= Buffer.from(statusLine(status), 'latin1'));
}

/** The x-cache-status line of each cache status, as writeHeadLines adds it (UTF-8, as uWS writes the text). */
const CACHE_STATUS_BYTES = new Map<string, Buffer>();
function cacheStatusBytes(status: string): Buffer {
  let b = CACHE_STATUS_BYTES.get(status);
  if (b === undefined) CACHE_STATUS_BYTES.set(status, (b = Buffer.from(`\r\nx-cache-status: ${status}`)));
  return b;
}

/** An `add` operation's line as writeHeadLines adds it, by operation (a rule's own objects), UTF-8. */
const ADD_BYTES = new WeakMap<HeaderOp, Buffer>();
function addBytes(op: HeaderOp): Buffer {
  let b = ADD_BYTES.get(op);
  if (b === undefined) ADD_BYTES.set(op, (b = Buffer.from(`\r\n${op.name}: ${op.value}`)));
  return b;
}

function addsOnly(ops: ResponseOps | null): boolean {
  if (ops === null) return true;
  for (let k = 0; k < ops.length; k++) if (ops[k].op !== 'add') return false;
  return true;
}

/** writeHeadLines' list of added lines (reused: emptied after each call). */
const AFTER: Buffer[] = [];

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
 * Writes the status and header lines made by the native origin client (ForwardHead.lines: each line CRLF, name in
 * lower case, `: `, value), inside res.cork: the bytes writeHead writes for the same header list. Response header
 * rules apply to the text as applyHeaderOps does to a list (the ops must be linesFit). With nothing to edit or add,
 * the lines go as the client's bytes (ForwardHead.block) when they are ASCII.
 */
export function writeHeadLines(
  res: HttpResponse,
  ctx: RequestContext,
  status: number,
  head: ForwardHead,
  ops: ResponseOps | null,
): void {
  ctx.status = status;
  if (head.block !== undefined && addsOnly(ops)) {
    // Lines only added (the cache status, `add` rules): the status line, the client's lines as they are and the added
    // lines as bytes, the UTF-8 of the text below (uWS writes a string as UTF-8; the lines come as bytes only when
    // ASCII): no text made or converted.
    const after = AFTER;
    after.length = 0;
    if (ctx.cacheStatus !== '') after.push(cacheStatusBytes(ctx.cacheStatus));
    if (ops !== null) for (let k = 0; k < ops.length; k++) after.push(addBytes(ops[k]));
    const bytes = head.block(statusBytes(status), after);
    after.length = 0;
    if (bytes !== null) {
      res.writeStatus(bytes);
      return;
    }
  }
  let block = statusLine(status) + head.lines;
  if (ctx.cacheStatus !== '') block += `\r\nx-cache-status: ${ctx.cacheStatus}`;
  if (ops !== null) {
    for (let k = 0; k < ops.length; k++) {
      const o = ops[k];
      if (o.op !== 'add') {
        // Every line of that name goes (values hold no CR or LF, so CRLF name `:` only starts a line).
        const line = `\r\n${o.name}:`;
        for (let i = block.indexOf(line); i >= 0; i = block.indexOf(line, i)) {
          const end = block.indexOf('\r\n', i + 2);
          block = end < 0 ? block.slice(0, i) : block.slice(0, i) + block.slice(end);
        }
        if (o.op === 'remove') continue;
      }
      block += `\r\n${o.name}: ${o.value}`;
    }
  }
  res.writeStatus(block);
}

const CR_LF = /[\r\n]/;
/** Response header operations writeHeadLines applies as writeHead would: no CR or LF in a name or value. */
export function linesFit(ops: ResponseOps | null): boolean {
  if (ops === null) return true;
  for (let k = 0; k < ops.length; k++) if (CR_LF.test(ops[k].name) || CR_LF.test(ops[k].value)) return false;
  return true;
}

/**
 * A stored answer's status line, headers, Age and X-Cache-Status as uWS is to write them (headBlock), encoded once per
 * stored header list and again when its Age (whole seconds) or cache status changes: a hit writes them with one call
 * and no conversion.
 */
interface StoredHead {
  status: number;
  ageSec: number;
  cacheStatus: string;
  /** The status line and headers (its first headLength bytes), then the Age and X-Cache-Status lines. */
  bytes: Buffer;
  headLength: number;
}
const storedHeads = new WeakMap<[string, string][], StoredHead>();
function storedHead(status: number, headers: [string, string][], ageSec: number, cacheStatus: string): Buffer {
  let made = storedHeads.get(headers);
  if (made === undefined || made.status !== status) {
    const bytes = Buffer.from(headBlock(status, headers));
    made = { status, ageSec: -1, cacheStatus: '', bytes, headLength: bytes.length };
    storedHeads.set(headers, made);
  }
  if (made.ageSec !== ageSec || made.cacheStatus !== cacheStatus) {
    const tail = cacheStatus === '' ? `\r\nage: ${ageSec}` : `\r\nage: ${ageSec}\r\nx-cache-status: ${cacheStatus}`;
    made.bytes = Buffer.concat([made.bytes.subarray(0, made.headLength), Buffer.from(tail)]);
    made.ageSec = ageSec;
    made.cacheStatus = cacheStatus;
  }
  return made.bytes;
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
  writeAnswer(res);
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
  writeAnswer(res);
}

/**
 * Ends an answer that has no body (a HEAD's, a 204's, a 304's) after its head, with its Content-Length when `length`
 * is known (-1: not) and the status allows one. uWS's endWithoutBody(n) writes `Content-Length: n` and then counts the
 * answer as unfinished until n body bytes are written, which never happens: the connection's next request (a
 * keep-alive client's GET after a HEAD) was never answered, uWS closing the connection instead; given undefined it
 * wrote `Content-Length: 9223372036854775808`. So the length goes as a header and uWS ends without one. `close`
 * (a request body left unread) takes uWS's own path, which closes the connection after the answer: its length then
 * reads 0.
 */
export function endWithoutBody(res: HttpResponse, status: number, length: number, close = false): void {
  if (close) {
    res.endWithoutBody(0, true);
    return;
  }
  if (length >= 0 && status !== 204) res.writeHeader('content-length', String(length));
  res.endWithoutBody();
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
      res.writeStatus(storedHead(this.status, this.headers, this.ageSec, ctx.cacheStatus));
    } else writeHead(res, ctx, this.status, this.headers, this.ops);
    if (ctx.method === 'HEAD') endWithoutBody(res, this.status, ctx.bytes, ctx.bodyPaused);
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

/**
 * The response whose uWS request handler is running (server.ts sets it for the handler's synchronous part). uWS corks
 * the request's socket for the whole handler call, and res.cork on a corked socket only calls its callback: a call
 * into uWS and one back into JavaScript per answer for nothing. An answer given during that call (a cache hit, a
 * refusal, a redirect) is written directly; any other goes through res.cork.
 */
let handlerRes: HttpResponse | null = null;
export function setHandlerResponse(res: HttpResponse | null): void {
  handlerRes = res;
}

/** True while `res`'s request handler is running: nothing awaited yet, the request arrived moments ago. */
export function answeringInHandler(res: HttpResponse): boolean {
  return res === handlerRes;
}

function writeAnswer(res: HttpResponse): void {
  if (res === handlerRes) answer.write();
  else res.cork(corkAnswer);
}

export function textAnswer(message: string): [string, string][] {
  void message;
  return [['content-type', 'text/plain; charset=utf-8']];
}
