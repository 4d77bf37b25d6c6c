// One keep-alive connection to an origin, carrying one request at a time (no pipelining). It writes the request head
// and streams the body with backpressure, parses the answer with head.ts and delivers the body as slices of the bytes
// received (content-length, chunked, close-delimited), pausing the socket when the handler asks. Every event handler
// is bound once per connection: nothing is allocated per chunk but the slices themselves.
//
// The connection goes back to its pool only when both sides are known to be done and the origin did not say it will
// close: Connection: close, HTTP/1.0, a close-delimited body, bytes after the answer, a request body not wholly sent,
// Keep-Alive max=1 or a timeout hint under a second all end it.
import type { Socket } from 'node:net';
import { componentLogger } from '@platform/shared';
import { OriginError, OriginProtocolError } from './errors.js';
import { checkPartialHead, findHeadEnd, MAX_HEAD_BYTES, parseHead, type ResponseHead } from './head.js';
import type { OriginRequest } from './request.js';

/** The pool side of a connection (client.ts). */
export interface ConnectionOwner {
  /** The request on it is over (answered or failed); `reusable` says whether it may carry another. */
  release(conn: OriginConnection, reusable: boolean, idleMs: number): void;
  /** The connection is gone (closed, failed): forget it. */
  forget(conn: OriginConnection): void;
  /** Send a request again on a fresh connection (a reused one failed before any byte of the answer). */
  retry(req: OriginRequest): void;
}

const enum State {
  Idle,
  Head,
  Body,
  Closed,
}
const enum Framing {
  None,
  Length,
  Chunked,
  Close,
}
const enum Chunk {
  Size,
  Data,
  DataCr,
  DataLf,
  Trailers,
}

/** Most interim (1xx) answers before the final one. */
const MAX_INTERIM = 8;
/** Most bytes of a chunk-size line (with extensions). */
const MAX_CHUNK_LINE = 4096;
/** Chunk sizes up to 2^52 (13 hex digits): a number stays exact. */
const MAX_CHUNK_DIGITS = 13;
/** Idle connections kept after an answer without a Keep-Alive timeout hint. */
export const DEFAULT_IDLE_MS = 30_000;

const CR = 13;
const LF = 10;

function hexValue(c: number): number {
  if (c >= 48 && c <= 57) return c - 48;
  const l = c | 0x20;
  if (l >= 97 && l <= 102) return l - 87;
  return -1;
}

const TCHAR = new Uint8Array(256);
for (const c of "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
  TCHAR[c.charCodeAt(0)] = 1;

/**
 * Parses a chunk-size line (without its CRLF): 1*HEXDIG, then optionally ";" extensions of tchar, "=", quoted
 * strings (ignored). Returns the size, -1 when malformed.
 */
function chunkSize(buf: Buffer, start: number, end: number): number {
  let i = start;
  let n = 0;
  while (i < end) {
    const d = hexValue(buf[i]);
    if (d < 0) break;
    if (i - start >= MAX_CHUNK_DIGITS) return -1;
    n = n * 16 + d;
    i++;
  }
  if (i === start) return -1;
  // No whitespace before `;` (RFC 9112 allows BWS there; llhttp refuses it, and so do we: one reading only).
  if (i === end) return n;
  if (buf[i] !== 59) return -1; // ;
  for (i++; i < end; i++) {
    const c = buf[i];
    if (TCHAR[c] === 1 || c === 59 || c === 61 || c === 32 || c === 9 || c === 34 || c === 92) continue;
    if (c >= 0x80) continue;
    return -1;
  }
  return n;
}

/** A trailer line must be a well-formed field line (no obs-fold, a token name, no control characters). */
function checkTrailerLine(buf: Buffer, start: number, end: number): void {
  let i = start;
  while (i < end && TCHAR[buf[i]] === 1) i++;
  if (i === start || i === end || buf[i] !== 58) throw new OriginProtocolError('malformed trailer');
  for (i++; i < end; i++) {
    const c = buf[i];
    if ((c < 32 && c !== 9) || c === 127) throw new OriginProtocolError('control character in a trailer');
  }
}

export class OriginConnection {
  req: OriginRequest | null = null;
  state = State.Idle;
  /** Requests this connection carried (the current one included). */
  uses = 0;
  /** When it last became idle (Date.now()). */
  idleSince = 0;

  private head: ResponseHead | null = null;
  private interim = 0;
  private framing = Framing.None;
  private remaining = 0;
  private reusable = true;
  private idleMs = DEFAULT_IDLE_MS;
  /** Some byte of the current answer arrived. */
  private answering = false;
  /** A partial response head, or partial chunk-size / trailer line. */
  private partial: Buffer | null = null;
  private chunk = Chunk.Size;
  private trailers: string[] | null = null;
  private trailerBytes = 0;
  private paused = false;
  /** The answer ended while the handler had paused it: completed on resume. */
  private completeOnResume = false;
  /** The origin closed its side (FIN); judged once the handler has taken what was read before. */
  private eof = false;
  private pending: Buffer | null = null;
  private pendingOffset = 0;
  private processing = false;
  private headersTimer: NodeJS.Timeout | null = null;
  /** Request body: bytes written, whether it is all written, whether the socket asked to wait. */
  private bodySent = 0;
  private bodyDone = true;
  private bodyWaiting = false;

  private readonly onSocketData = (buf: Buffer) => this.data(buf);
  private readonly onSocketEnd = () => this.ended();
  private readonly onSocketError = (err: Error) => this.fail(err);
  private readonly onSocketClose = () => this.closed();
  private readonly onSocketTimeout = () => this.timedOut();
  private readonly onSocketDrain = () => this.drained();
  private readonly onBodyData = (chunk: Buffer) => this.bodyData(chunk);
  private readonly onBodyEnd = () => this.bodyEnd();
  private readonly onBodyError = (err: Error) => this.bodyFailed(err);
  private readonly onBodyClose = () => this.bodyClosed();

  constructor(
    readonly socket: Socket,
    private readonly owner: ConnectionOwner,
  ) {
    socket.setNoDelay(true);
    socket.on('data', this.onSocketData);
    socket.on('end', this.onSocketEnd);
    socket.on('error', this.onSocketError);
    socket.on('close', this.onSocketClose);
    socket.on('timeout', this.onSocketTimeout);
    socket.on('drain', this.onSocketDrain);
  }

  /** Still open, idle and never told to close: a request may be written to it. */
  get usable(): boolean {
    return this.state === State.Idle && !this.socket.destroyed && this.socket.readyState === 'open';
  }

  /** Writes `req` and waits for its answer. */
  start(req: OriginRequest): void {
    this.req = req;
    req.started(this);
    this.state = State.Head;
    this.uses++;
    this.head = null;
    this.interim = 0;
    this.answering = false;
    this.reusable = true;
    this.partial = null;
    this.paused = false;
    this.completeOnResume = false;
    this.pending = null;
    this.socket.write(req.head, 'latin1');
    const body = req.body;
    this.bodySent = 0;
    this.bodyWaiting = false;
    if (body === null) {
      this.bodyDone = true;
      this.socket.setTimeout(0);
      this.headersTimer = setTimeout(headersTimedOut, req.headersTimeoutMs, this);
      return;
    }
    // The record's timeout runs from the end of the body: an upload takes what it takes, as long as it moves
    // (a socket idle for the body timeout fails it).
    this.socket.setTimeout(req.bodyTimeoutMs);
    this.bodyDone = false;
    body.on('data', this.onBodyData);
    body.on('end', this.onBodyEnd);
    body.on('error', this.onBodyError);
    body.on('close', this.onBodyClose);
    body.resume();
  }

  // ---- request body -------------------------------------------------------------------------------------------

  private bodyData(chunk: Buffer): void {
    const req = this.req;
    if (req === null || this.bodyDone) return;
    this.bodySent += chunk.length;
    if (req.declaredLength >= 0 && this.bodySent > req.declaredLength) {
      this.fail(new OriginError('EDGE_ORIGIN_REQUEST', 'request body longer than its Content-Length'));
      return;
    }
    let ok: boolean;
    if (req.declaredLength < 0) {
      if (chunk.length === 0) return;
      this.socket.cork();
      this.socket.write(`${chunk.length.toString(16)}\r\n`, 'latin1');
      this.socket.write(chunk);
      ok = this.socket.write('\r\n', 'latin1');
      this.socket.uncork();
    } else ok = this.socket.write(chunk);
    if (!ok) {
      this.bodyWaiting = true;
      req.body!.pause();
    }
  }

  private drained(): void {
    if (this.bodyWaiting && this.req !== null && !this.bodyDone) {
      this.bodyWaiting = false;
      this.req.body!.resume();
    }
  }

  private bodyEnd(): void {
    const req = this.req;
    if (req === null || this.bodyDone) return;
    if (req.declaredLength >= 0 && this.bodySent !== req.declaredLength) {
      this.fail(new OriginError('EDGE_ORIGIN_REQUEST', 'request body shorter than its Content-Length'));
      return;
    }
    if (req.declaredLength < 0) this.socket.write('0\r\n\r\n', 'latin1');
    this.detachBody();
    if (this.state === State.Head) {
      this.socket.setTimeout(0);
      this.headersTimer = setTimeout(headersTimedOut, req.headersTimeoutMs, this);
    }
  }

  private bodyFailed(err: Error): void {
    if (this.req !== null && !this.bodyDone) this.fail(err);
  }

  private bodyClosed(): void {
    // Closed before its end (the client went away): the origin would wait for the rest forever.
    if (this.req !== null && !this.bodyDone)
      this.fail(new OriginError('EDGE_ORIGIN_REQUEST', 'request body ended early'));
  }

  private detachBody(): void {
    const body = this.req?.body;
    this.bodyDone = true;
    this.bodyWaiting = false;
    if (!body) return;
    body.off('data', this.onBodyData);
    body.off('end', this.onBodyEnd);
    body.off('error', this.onBodyError);
    body.off('close', this.onBodyClose);
  }

  // ---- answer -------------------------------------------------------------------------------------------------

  private data(buf: Buffer): void {
    if (this.req === null) {
      // Bytes while idle: the origin is confused or hostile; nothing more goes over this connection.
      this.destroy();
      return;
    }
    this.answering = true;
    if (this.paused) {
      // Already read off the socket before the pause took effect: kept for resume.
      this.pending = this.pending === null ? buf : Buffer.concat([this.pending.subarray(this.pendingOffset), buf]);
      this.pendingOffset = 0;
      return;
    }
    this.process(buf, 0);
  }

  /** Resumes delivery after onData returned false. */
  resume(): void {
    if (!this.paused || this.state === State.Closed) return;
    this.paused = false;
    if (this.processing) return; // called from inside a handler: the loop goes on by itself
    if (this.completeOnResume) {
      this.completeOnResume = false;
      this.complete();
      return;
    }
    const buf = this.pending;
    if (buf !== null) {
      this.pending = null;
      this.process(buf, this.pendingOffset);
    }
    if (this.paused || this.req === null) return;
    if (this.eof) this.endOfStream();
    else this.socket.resume();
  }

  private process(buf: Buffer, offset: number): void {
    this.processing = true;
    const current = this.req;
    try {
      let off = offset;
      while (off < buf.length && this.req !== null) {
        if (this.paused) {
          this.pending = buf;
          this.pendingOffset = off;
          this.socket.pause();
          return;
        }
        if (this.state === State.Head) off = this.readHead(buf, off);
        else if (this.state === State.Body) off = this.readBody(buf, off);
        else break;
        if (off < 0) return; // waiting for more bytes, or finished
      }
      if (this.paused && this.req !== null) this.socket.pause();
      else if (this.completeOnResume && !this.paused) {
        this.completeOnResume = false;
        this.complete();
      }
    } catch (err) {
      // A malformed answer, or the handler threw while its request was on the connection: that request fails.
      if (this.req !== null && this.req === current) this.fail(err instanceof Error ? err : new Error(String(err)));
      else handlerFailed(err);
    } finally {
      this.processing = false;
    }
  }

  /** Returns where the body starts, or -1 when the head is incomplete. */
  private readHead(input: Buffer, off: number): number {
    let buf = input;
    let start = off;
    // Bytes already looked at (a head dripping in is scanned once, not once per packet).
    let seen = 0;
    if (this.partial !== null) {
      seen = this.partial.length;
      buf = Buffer.concat([this.partial, input.subarray(off)]);
      start = 0;
      this.partial = null;
    }
    const end = findHeadEnd(buf, Math.max(start, seen - 3), buf.length);
    if (end < 0) {
      checkPartialHead(buf, start, Math.max(start, seen - 1), buf.length);
      this.partial = buf.subarray(start);
      return -1;
    }
    const head = parseHead(buf, start, end);
    const next = end + 1;
    if (head.status < 200) {
      // 101: the edge never asks to switch protocols; anything else interim (100, 102, 103) is skipped.
      if (head.status === 101) throw new OriginProtocolError('101 Switching Protocols to a request without Upgrade');
      if (++this.interim > MAX_INTERIM) throw new OriginProtocolError('too many interim responses');
      return this.continueFrom(buf, next, input);
    }
    this.head = head;
    if (this.headersTimer !== null) {
      clearTimeout(this.headersTimer);
      this.headersTimer = null;
    }
    const req = this.req!;
    this.socket.setTimeout(req.bodyTimeoutMs);
    const noBody = req.method === 'HEAD' || head.status === 204 || head.status === 304;
    if (noBody) {
      this.framing = Framing.None;
      // A 204/304 that announces a body sends bytes that must not be read as the next answer.
      if (req.method !== 'HEAD' && (head.chunked || head.contentLength > 0)) this.reusable = false;
    } else if (head.chunked) {
      this.framing = Framing.Chunked;
      this.chunk = Chunk.Size;
      this.trailers = null;
      this.trailerBytes = 0;
    } else if (head.contentLength >= 0) {
      this.framing = Framing.Length;
      this.remaining = head.contentLength;
    } else {
      this.framing = Framing.Close;
      this.reusable = false;
    }
    if (head.close || head.keepAliveMax === 1) this.reusable = false;
    this.idleMs = DEFAULT_IDLE_MS;
    if (head.keepAliveMs >= 0) {
      // Leave a second's margin before the origin's own timeout; under that, do not keep the connection at all.
      this.idleMs = Math.min(head.keepAliveMs - 1000, DEFAULT_IDLE_MS);
      if (this.idleMs <= 0) this.reusable = false;
    }
    this.state = State.Body;
    if (req.handler.onHeaders(head.status, head.raw, req.resumeArg, head.reason) === false) this.paused = true;
    if (this.req !== req) return -1; // aborted from the handler
    if (this.framing === Framing.None || (this.framing === Framing.Length && this.remaining === 0)) {
      if (next < buf.length) this.reusable = false;
      this.endAnswer(this.paused);
      return -1;
    }
    return this.continueFrom(buf, next, input);
  }

  /** After a head taken from a concatenated buffer, go on in that buffer (the caller's `input` is spent). */
  private continueFrom(buf: Buffer, next: number, input: Buffer): number {
    if (buf === input) return next;
    if (next < buf.length) this.process(buf, next);
    return -1;
  }

  private readBody(buf: Buffer, off: number): number {
    const req = this.req!;
    if (this.framing === Framing.Length) {
      const n = Math.min(this.remaining, buf.length - off);
      this.remaining -= n;
      const ok = req.handler.onData(buf.subarray(off, off + n));
      if (this.req !== req) return -1;
      if (this.remaining === 0) {
        if (off + n < buf.length) this.reusable = false;
        this.endAnswer(ok === false);
        return -1;
      }
      if (ok === false) this.paused = true;
      return off + n;
    }
    if (this.framing === Framing.Close) {
      if (req.handler.onData(off === 0 ? buf : buf.subarray(off)) === false && this.req === req) this.paused = true;
      return buf.length;
    }
    return this.readChunked(buf, off);
  }

  private readChunked(input: Buffer, off: number): number {
    const req = this.req!;
    switch (this.chunk) {
      case Chunk.Size:
      case Chunk.Trailers: {
        let buf = input;
        let start = off;
        if (this.partial !== null) {
          buf = Buffer.concat([this.partial, input.subarray(off)]);
          start = 0;
          this.partial = null;
        }
        const lf = buf.indexOf(LF, start);
        if (lf < 0) {
          const limit = this.chunk === Chunk.Size ? MAX_CHUNK_LINE : MAX_HEAD_BYTES - this.trailerBytes;
          if (buf.length - start > limit) throw new OriginProtocolError('chunk line too long');
          if (buf.indexOf(CR, start) >= 0 && buf[buf.length - 1] !== CR)
            throw new OriginProtocolError('CR without LF in a chunk line');
          this.partial = buf.subarray(start);
          return -1;
        }
        if (lf === start || buf[lf - 1] !== CR) throw new OriginProtocolError('bare LF in a chunk line');
        const lineEnd = lf - 1;
        const cr = buf.indexOf(CR, start);
        if (cr !== lineEnd) throw new OriginProtocolError('CR without LF in a chunk line');
        if (this.chunk === Chunk.Size) {
          if (lineEnd - start > MAX_CHUNK_LINE) throw new OriginProtocolError('chunk line too long');
          const size = chunkSize(buf, start, lineEnd);
          if (size < 0) throw new OriginProtocolError('invalid chunk size');
          if (size === 0) this.chunk = Chunk.Trailers;
          else {
            this.chunk = Chunk.Data;
            this.remaining = size;
          }
        } else {
          this.trailerBytes += lf + 1 - start;
          if (this.trailerBytes > MAX_HEAD_BYTES) throw new OriginProtocolError('trailers too large');
          if (lineEnd === start) {
            // The empty line: the answer is complete.
            if (lf + 1 < buf.length) this.reusable = false;
            this.endAnswer(false);
            return -1;
          }
          if (buf[start] === 32 || buf[start] === 9) throw new OriginProtocolError('obs-fold in the trailers');
          checkTrailerLine(buf, start, lineEnd);
          const colon = buf.indexOf(58, start);
          let vs = colon + 1;
          let ve = lineEnd;
          while (vs < ve && (buf[vs] === 32 || buf[vs] === 9)) vs++;
          while (ve > vs && (buf[ve - 1] === 32 || buf[ve - 1] === 9)) ve--;
          (this.trailers ??= []).push(buf.toString('latin1', start, colon), buf.toString('latin1', vs, ve));
        }
        return this.continueFrom(buf, lf + 1, input);
      }
      case Chunk.Data: {
        const n = Math.min(this.remaining, input.length - off);
        this.remaining -= n;
        if (this.remaining === 0) this.chunk = Chunk.DataCr;
        const ok = req.handler.onData(input.subarray(off, off + n));
        if (this.req === req && ok === false) this.paused = true;
        return off + n;
      }
      case Chunk.DataCr:
        if (input[off] !== CR) throw new OriginProtocolError('chunk data not followed by CRLF');
        this.chunk = Chunk.DataLf;
        return off + 1;
      case Chunk.DataLf:
        if (input[off] !== LF) throw new OriginProtocolError('chunk data not followed by CRLF');
        this.chunk = Chunk.Size;
        return off + 1;
    }
  }

  /** The answer's last byte is in: complete now, or once the handler resumes (as undici, onComplete never comes
   * while the handler holds the answer paused). */
  private endAnswer(paused: boolean): void {
    if (paused) {
      this.paused = true;
      this.completeOnResume = true;
      this.socket.pause();
    } else this.complete();
  }

  /** The answer is complete: hand the connection back (or close it) and tell the handler. */
  private complete(): void {
    const req = this.req!;
    this.clearTimers();
    // An answer before the whole request body went out: the origin may still expect the rest.
    if (!this.bodyDone) {
      this.reusable = false;
      this.detachBody();
      req.body!.destroy();
    }
    const trailers = this.trailers;
    this.trailers = null;
    this.req = null;
    req.finish();
    this.state = this.reusable ? State.Idle : State.Closed;
    this.partial = null;
    this.pending = null;
    this.paused = false;
    if (this.reusable) this.socket.resume();
    this.owner.release(this, this.reusable, this.idleMs);
    try {
      req.handler.onComplete(trailers);
    } catch (err) {
      handlerFailed(err); // the request is over and the connection maybe serving another: only logged
    }
  }

  // ---- failures and closing -----------------------------------------------------------------------------------

  private ended(): void {
    this.eof = true;
    // Never again a request on it; what was read before is judged once the handler has taken it.
    if (this.req === null) this.destroy();
    else if (!this.paused) this.endOfStream();
    else this.owner.forget(this);
  }

  /** The origin closed its side and everything read is delivered: a close-delimited answer is complete; anything
   * else in flight failed. */
  private endOfStream(): void {
    if (this.req !== null && this.state === State.Body && this.framing === Framing.Close) {
      this.reusable = false;
      this.complete();
    } else if (this.req !== null) this.fail(new OriginError('EDGE_ORIGIN_CLOSED', 'origin closed the connection'));
    this.destroy();
  }

  private closed(): void {
    // Closed after a FIN while the handler holds the answer paused: resume judges it.
    if (this.req !== null && !(this.eof && this.paused))
      this.fail(new OriginError('EDGE_ORIGIN_CLOSED', 'origin closed the connection'));
    if (this.state !== State.Closed && this.req === null) this.state = State.Closed;
    this.clearTimers();
    this.owner.forget(this);
  }

  private timedOut(): void {
    if (this.req === null)
      this.destroy(); // idle too long
    else if (this.state === State.Body) this.fail(new OriginError('EDGE_ORIGIN_BODY_TIMEOUT', 'origin body timed out'));
    else if (!this.bodyDone)
      this.fail(new OriginError('EDGE_ORIGIN_HEADERS_TIMEOUT', 'the request body stalled on its way to the origin'));
  }

  /** Called by the headers timer. */
  headersTimedOut(): void {
    this.headersTimer = null;
    if (this.req !== null && this.state === State.Head)
      this.fail(new OriginError('EDGE_ORIGIN_HEADERS_TIMEOUT', 'origin did not answer in time'));
  }

  /** Fails the request in flight (if any) and closes the connection; a retriable request goes once more. */
  fail(err: Error): void {
    const req = this.req;
    this.req = null;
    if (req !== null && !this.bodyDone) this.detachBody();
    this.destroy();
    if (req === null) return;
    this.owner.release(this, false, 0);
    const code = (err as { code?: string }).code;
    if (
      req.retriable &&
      !req.retried &&
      !this.answering &&
      this.uses > 1 &&
      (code === 'ECONNRESET' || code === 'EPIPE' || code === 'EDGE_ORIGIN_CLOSED')
    ) {
      // A reused connection the origin had closed (the keep-alive race): nothing of this request was answered.
      req.requeue();
      this.owner.retry(req);
      return;
    }
    req.finish();
    try {
      req.handler.onError(err);
    } catch (e) {
      handlerFailed(e);
    }
  }

  private clearTimers(): void {
    if (this.headersTimer !== null) {
      clearTimeout(this.headersTimer);
      this.headersTimer = null;
    }
    this.socket.setTimeout(0);
  }

  /** Closes the connection for good. */
  destroy(): void {
    if (this.state !== State.Closed) {
      this.state = State.Closed;
      this.clearTimers();
      this.owner.forget(this);
    }
    if (!this.socket.destroyed) this.socket.destroy();
  }

  /** Idle again with its idle timeout (called by the pool). */
  idle(idleMs: number): void {
    this.idleSince = Date.now();
    this.socket.setTimeout(idleMs);
  }
}

const log = componentLogger('edge-node.origin-client');

/** A handler threw after its request was over: logged, never thrown into a socket's event (it would end the process). */
function handlerFailed(err: unknown): void {
  log.error({ err }, 'origin response handler failed');
}

function headersTimedOut(conn: OriginConnection): void {
  conn.headersTimedOut();
}
