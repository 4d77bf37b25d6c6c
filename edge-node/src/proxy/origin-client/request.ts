// One request through the origin client: its encoded head, how its body is framed, whether it may be retried, and
// the handler that receives the answer (the same raw handler methods as undici's dispatch, so the proxy's Attempt
// serves both clients).
import type { Readable } from 'node:stream';
import { OriginError } from './errors.js';
import type { OriginConnection } from './connection.js';

/** What a handler may do with its request while it is under way (the request itself: no closure per request). */
export interface OriginControl {
  /** Cancels the request wherever it is: the handler's onError gets `reason` once. */
  abort(reason: Error): void;
  /** Resumes the origin after onData returned false. */
  resume(): void;
  /**
   * The answer's raw header list, for a handler given a ForwardHead (OriginHandler.forwardsHead): read during its
   * onHeaders call only.
   */
  rawHeaders?(): string[];
}

/**
 * The head as a proxy passes it on, made by the native client for a handler that forwards heads: `lines` the header
 * lines to pass on, each as CRLF, the name in lower case, `: ` and the value trimmed, leaving out hop-by-hop and
 * framing lines and Date (forward.ts HOP_RESPONSE); `contentLength` the answer's Content-Length, -1 when it has none.
 */
export interface ForwardHead {
  readonly lines: string;
  readonly contentLength: number;
  /**
   * `before`, the lines and each of `after` as one block of bytes, without making the lines' text: only when every
   * byte of the lines is ASCII, once, during the handler's onHeaders call or the body's that came with it; null
   * otherwise (the lines are then read as text). The block is valid until the call ends.
   */
  block?(before: Buffer, after: readonly Buffer[]): Buffer | null;
}

/**
 * What receives the answer. onData returning false pauses the origin until `resume` is called. Headers and trailers
 * come as [name, value, …] latin1 strings (undici gives Buffers there: the proxy's handler takes both). A handler
 * with onStart is given the request as its OriginControl there and not onConnect's abort function nor onHeaders'
 * resume function (those are closures made for the handlers that ask for them: tests, undici-shaped handlers).
 */
export interface OriginHandler {
  onStart?(control: OriginControl): void;
  onConnect(abort: (reason: Error) => void): void;
  /**
   * With `forward` (only for a handler that forwards heads: forwardsHead) `raw` is an empty list: the raw list is
   * then its control's rawHeaders().
   */
  onHeaders(status: number, raw: string[], resume: () => void, statusText: string, forward?: ForwardHead): boolean;
  /** The handler may be given the head as it is passed on (ForwardHead) instead of the raw list (the native client). */
  readonly forwardsHead?: boolean;
  onData(chunk: Buffer): boolean;
  /**
   * The handler reads onData's chunk during the call only (copying what it keeps): the native client may then give it
   * a view of its read buffer instead of a copy.
   */
  readonly borrowsChunks?: boolean;
  onComplete(trailers: string[] | null): void;
  onError(err: Error): void;
}

/** RFC 9110 §9.2.2: safe methods, PUT and DELETE. Retried once on a reused connection only when they carry no body. */
const IDEMPOTENT = new Set(['GET', 'HEAD', 'OPTIONS', 'TRACE', 'PUT', 'DELETE']);
/** Methods whose request without a body still says Content-Length: 0 (as undici and browsers do). */
const EXPECTS_BODY = new Set(['POST', 'PUT', 'PATCH']);

const TOKEN_RE = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** Methods known to be tokens: a request's method is nearly always one, looked up without the regex. */
const KNOWN_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'OPTIONS', 'PATCH']);
/** A request target: visible latin1 only (no space, CR, LF or NUL), as undici requires. */
const INVALID_PATH_RE = /[^\u0021-\u00ff]/;
/** A field value: HTAB, SP, VCHAR, obs-text (no CR, LF or NUL), as undici requires. */
const INVALID_VALUE_RE = /[^\t\u0020-\u007e\u0080-\u00ff]/;
const DECIMAL_RE = /^\d{1,15}$/;

/** A field value may be sent as it is (one linear scan). */
export function validFieldValue(value: string): boolean {
  return !INVALID_VALUE_RE.test(value);
}

/** A request encoded for the wire: its head (latin1) and its body's framing. */
export class EncodedRequest {
  /** The request head, latin1. */
  head = '';
  /** The body's declared length; -1 when it goes chunked (the client sent none). */
  declaredLength = -1;
  /** A reason the request cannot be sent, found while encoding it (reported once dispatched). */
  invalid: OriginError | null = null;
}

/**
 * The head's framing end: Content-Length: 0 for a bodiless method that expects a body, chunked for a body of unknown
 * length, then the blank line. `declared` is the Content-Length the header lines said (-1: none).
 */
function finishHead(out: EncodedRequest, head: string, method: string, declared: number, hasBody: boolean): void {
  if (!hasBody) {
    if (declared > 0) out.invalid ??= new OriginError('EDGE_ORIGIN_REQUEST', 'Content-Length without a body');
    else if (declared < 0 && EXPECTS_BODY.has(method)) head += 'content-length: 0\r\n';
    declared = 0;
  } else if (declared < 0) head += 'transfer-encoding: chunked\r\n';
  out.head = `${head}\r\n`;
  out.declaredLength = declared;
}

/** The request line; sets `out.invalid` for a method or target that may not be sent. */
function requestLine(out: EncodedRequest, method: string, path: string): string {
  if (!KNOWN_METHODS.has(method) && !TOKEN_RE.test(method))
    out.invalid ??= new OriginError('EDGE_ORIGIN_REQUEST', 'invalid method');
  else if (path.length === 0 || INVALID_PATH_RE.test(path))
    out.invalid ??= new OriginError('EDGE_ORIGIN_REQUEST', 'invalid request path');
  return `${method} ${path} HTTP/1.1\r\n`;
}

/**
 * Appends one header line to `head` after checking it (a token name, a value without CR, LF or NUL); Content-Length
 * is read into out.declaredLength, Transfer-Encoding refused (the body's framing is the client's own to choose).
 */
function headerLine(out: EncodedRequest, head: string, name: string, value: string): string {
  if (!TOKEN_RE.test(name) || INVALID_VALUE_RE.test(value)) {
    out.invalid ??= new OriginError('EDGE_ORIGIN_REQUEST', `invalid request header ${JSON.stringify(name)}`);
    return head;
  }
  if (name.length === 14 && name.toLowerCase() === 'content-length') {
    if (out.declaredLength >= 0 || !DECIMAL_RE.test(value))
      out.invalid ??= new OriginError('EDGE_ORIGIN_REQUEST', 'invalid Content-Length');
    out.declaredLength = Number(value);
  } else if (name.length === 17 && name.toLowerCase() === 'transfer-encoding') {
    out.invalid ??= new OriginError('EDGE_ORIGIN_REQUEST', 'Transfer-Encoding in the header list');
    return head;
  }
  return `${head}${name}: ${value}\r\n`;
}

/** Encodes a request from a flat [name, value, …] header list (every line checked). */
export function encodeRequest(method: string, path: string, headers: string[], hasBody: boolean): EncodedRequest {
  const out = new EncodedRequest();
  let head = requestLine(out, method, path);
  for (let i = 0; i < headers.length; i += 2) head = headerLine(out, head, headers[i], headers[i + 1]);
  finishHead(out, head, method, out.declaredLength, hasBody);
  return out;
}

/**
 * Header lines encoded and checked once, to be reused in many heads (encodeProxied): `head` holds the lines, `invalid`
 * why they may not be sent. Content-Length and Transfer-Encoding have no place among them.
 */
export function encodeLines(lines: readonly (readonly [string, string])[]): EncodedRequest {
  const out = new EncodedRequest();
  let head = '';
  for (const [name, value] of lines) head = headerLine(out, head, name, value);
  if (out.declaredLength >= 0)
    out.invalid ??= new OriginError('EDGE_ORIGIN_REQUEST', 'Content-Length among fixed lines');
  out.head = head;
  return out;
}

/**
 * Encodes a proxied request from its parts: `fixed` lines encoded and checked once per route and origin
 * (encodeLines: the Host line), `client` the client's headers (each checked here, those in `skip` left out), `tail`
 * lines encoded for this request (encodeLines, or the proxy's own lines of values that cannot be invalid).
 */
export function encodeProxied(
  method: string,
  path: string,
  fixed: EncodedRequest,
  client: readonly (readonly [string, string])[],
  skip: ReadonlySet<string>,
  tail: string,
  hasBody: boolean,
): EncodedRequest {
  const out = new EncodedRequest();
  out.invalid = fixed.invalid;
  let head = requestLine(out, method, path) + fixed.head;
  for (let i = 0; i < client.length; i++) {
    const h = client[i];
    if (!skip.has(h[0])) head = headerLine(out, head, h[0], h[1]);
  }
  finishHead(out, head + tail, method, out.declaredLength, hasBody);
  return out;
}

const enum Stage {
  Queued,
  Connecting,
  Active,
  Done,
}

const NOOP = (): void => undefined;

export class OriginRequest implements OriginControl {
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
  readonly invalid: OriginError | null;
  /** onHeaders' resume argument: made once, for a handler without onStart only. */
  private resumeFn: (() => void) | null = null;

  constructor(
    readonly method: string,
    encoded: EncodedRequest,
    readonly body: Readable | null,
    readonly handler: OriginHandler,
    readonly headersTimeoutMs: number,
    readonly bodyTimeoutMs: number,
  ) {
    this.retriable = body === null && IDEMPOTENT.has(method);
    this.head = encoded.head;
    this.declaredLength = encoded.declaredLength;
    this.invalid = encoded.invalid;
  }

  /** Tells the handler the request started: onStart with this request, or onConnect with an abort function. */
  announce(): void {
    const h = this.handler;
    if (h.onStart !== undefined) h.onStart(this);
    else h.onConnect((reason) => this.abort(reason));
  }

  /** What onHeaders is given as `resume`. */
  get resumeArg(): () => void {
    if (this.handler.onStart !== undefined) return NOOP;
    return (this.resumeFn ??= () => this.resume());
  }

  /** Cancels the request wherever it is (queued, connecting, in flight): the handler's onError gets `reason` once. */
  abort(reason: Error): void {
    if (this.stage === Stage.Done) return;
    if (this.conn !== null) {
      this.retried = true; // never sent again
      this.conn.fail(reason);
      return;
    }
    this.finish();
    this.handler.onError(reason);
  }

  /** Resumes the origin after onData returned false (only while this request is on the connection). */
  resume(): void {
    if (this.conn !== null && this.conn.req === this) this.conn.resume();
  }

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
