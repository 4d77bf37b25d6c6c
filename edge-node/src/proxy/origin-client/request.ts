// One request through the origin client: its encoded head, how its body is framed, whether it may be retried, and
// the handler that receives the answer (the same raw handler methods as undici's dispatch, so the proxy's Attempt
// serves both clients).
import type { Readable } from 'node:stream';
import { OriginError } from './errors.js';
import type { OriginConnection } from './connection.js';

/**
 * What receives the answer. onData returning false pauses the origin until `resume` is called. Headers and trailers
 * come as [name, value, …] latin1 strings (undici gives Buffers there: the proxy's handler takes both).
 */
export interface OriginHandler {
  onConnect(abort: (reason: Error) => void): void;
  onHeaders(status: number, raw: string[], resume: () => void, statusText: string): boolean;
  onData(chunk: Buffer): boolean;
  onComplete(trailers: string[] | null): void;
  onError(err: Error): void;
}

/** RFC 9110 §9.2.2: safe methods, PUT and DELETE. Retried once on a reused connection only when they carry no body. */
const IDEMPOTENT = new Set(['GET', 'HEAD', 'OPTIONS', 'TRACE', 'PUT', 'DELETE']);
/** Methods whose request without a body still says Content-Length: 0 (as undici and browsers do). */
const EXPECTS_BODY = new Set(['POST', 'PUT', 'PATCH']);

const TOKEN_RE = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** A request target: visible latin1 only (no space, CR, LF or NUL), as undici requires. */
const INVALID_PATH_RE = /[^\u0021-\u00ff]/;
/** A field value: HTAB, SP, VCHAR, obs-text (no CR, LF or NUL), as undici requires. */
const INVALID_VALUE_RE = /[^\t\u0020-\u007e\u0080-\u00ff]/;
const DECIMAL_RE = /^\d{1,15}$/;

const enum Stage {
  Queued,
  Connecting,
  Active,
  Done,
}

export class OriginRequest {
  /** The request head, latin1. */
  readonly head: string;
  /** The body's declared length; -1 when it goes chunked (the client sent none). */
  readonly declaredLength: number;
  /** May be sent again on a fresh connection when a reused one fails before any byte of the answer. */
  readonly retriable: boolean;
  stage = Stage.Queued;
  conn: OriginConnection | null = null;
  retried = false;
  /** A reason the request cannot be sent, found while encoding it (reported once dispatched). */
  readonly invalid: OriginError | null = null;

  constructor(
    readonly method: string,
    path: string,
    headers: string[],
    readonly body: Readable | null,
    readonly handler: OriginHandler,
    readonly headersTimeoutMs: number,
    readonly bodyTimeoutMs: number,
  ) {
    this.retriable = body === null && IDEMPOTENT.has(method);
    let invalid: string | undefined;
    if (!TOKEN_RE.test(method)) invalid = 'invalid method';
    else if (path.length === 0 || INVALID_PATH_RE.test(path)) invalid = 'invalid request path';
    let head = `${method} ${path} HTTP/1.1\r\n`;
    let declared = -1;
    for (let i = 0; i < headers.length; i += 2) {
      const name = headers[i];
      const value = headers[i + 1];
      if (!TOKEN_RE.test(name) || INVALID_VALUE_RE.test(value)) {
        invalid ??= `invalid request header ${JSON.stringify(name)}`;
        continue;
      }
      if (name.length === 14 && name.toLowerCase() === 'content-length') {
        if (declared >= 0 || !DECIMAL_RE.test(value)) invalid ??= 'invalid Content-Length';
        declared = Number(value);
      } else if (name.length === 17 && name.toLowerCase() === 'transfer-encoding') {
        invalid ??= 'Transfer-Encoding in the header list'; // the body's framing is the client's own to choose
        continue;
      }
      head += `${name}: ${value}\r\n`;
    }
    if (body === null) {
      if (declared > 0) invalid ??= 'Content-Length without a body';
      else if (declared < 0 && EXPECTS_BODY.has(method)) head += 'content-length: 0\r\n';
      declared = 0;
    } else if (declared < 0) head += 'transfer-encoding: chunked\r\n';
    this.head = `${head}\r\n`;
    this.declaredLength = declared;
    if (invalid !== undefined) this.invalid = new OriginError('EDGE_ORIGIN_REQUEST', invalid);
  }

  /** Cancels the request wherever it is (queued, connecting, in flight): the handler's onError gets `reason` once. */
  readonly abort = (reason: Error): void => {
    if (this.stage === Stage.Done) return;
    if (this.conn !== null) {
      this.retried = true; // never sent again
      this.conn.fail(reason);
      return;
    }
    this.finish();
    this.handler.onError(reason);
  };

  /** Resumes the origin after onData returned false (only while this request is on the connection). */
  readonly resume = (): void => {
    if (this.conn !== null && this.conn.req === this) this.conn.resume();
  };

  get done(): boolean {
    return this.stage === Stage.Done;
  }
  connecting(): void {
    this.stage = Stage.Connecting;
  }
  started(conn: OriginConnection): void {
    this.stage = Stage.Active;
    this.conn = conn;
  }
  /** Back to the queue for a retry. */
  requeue(): void {
    this.stage = Stage.Queued;
    this.conn = null;
    this.retried = true;
  }
  finish(): void {
    this.stage = Stage.Done;
    this.conn = null;
  }
}
