// The native origin client (edge-node/native/origin-client/, C on Node's own libuv loop) behind the same interface as
// the TypeScript one (client.ts), which stays the reference and the fallback. Pools, connections, the request head's
// write, the response's framing and the body bytes are native; JavaScript keeps the handler contract (request.ts
// OriginHandler: onStart/onConnect, onHeaders with [name, value, …] latin1 strings, onData returning false to pause,
// onComplete with trailers, onError), the request body's stream and the errors' shape.
//
// Addresses: an address literal is checked against the policy once, when its pool is made; a name is resolved and
// checked (resolveAllowed, as guarded-connect.ts: every address checked, the allowed one connected to) when its pool
// is made and again every NAME_TTL_MS, its native pool following the address. What goes to the TypeScript client
// instead: a refused literal (it answers the refusal), and a name until its first lookup answers or while it
// resolves to nothing allowed (the TypeScript client looks it up per connection and reports why).
//
// One call into C per request (the encoded head, its flags), one call back per read of the socket: the head as one
// latin1 string with the header offsets in a shared Int32Array, the body bytes of that read, and whether the answer
// is complete (the connection is then already back in its pool). Body bytes lying in the C client's read buffer (a
// sized or close-delimited body: the common case) come as their length, their offset in the shared Int32Array, and
// are read through a view of that buffer, which is Buffer JavaScript holds: no copy and no allocation per read. A
// handler that says it borrows chunks (OriginHandler.borrowsChunks) gets the view, valid during its onData call
// only; any other gets a copy.
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { isIP } from 'node:net';
import { dirname, join } from 'node:path';
import type { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { componentLogger } from '@platform/shared';
import { resolveAllowed } from '@platform/shared/address-policy';
import { OriginClient, type OriginClientOptions } from './client.js';
import { OriginError } from './errors.js';
import {
  encodeRequest,
  type EncodedRequest,
  type ForwardHead,
  type OriginControl,
  type OriginHandler,
} from './request.js';

interface Binding {
  init(
    onHeadCallback: typeof onHead,
    onDataCallback: typeof onData,
    onError: (id: number, code: string, message: string) => void,
    onDrain: (id: number) => void,
    meta: Int32Array,
    forward: Buffer,
  ): Buffer;
  poolCreate(address: string, port: number, maxConnections: number, maxIdle: number, connectTimeoutMs: number): number;
  poolClose(pool: number): void;
  poolConnections(pool: number): number;
  request(
    pool: number,
    id: number,
    head: string,
    flags: number,
    headersTimeoutMs: number,
    bodyTimeoutMs: number,
    declaredLength: number,
  ): void;
  write(id: number, chunk: Buffer | undefined, last: boolean): boolean;
  abort(id: number): void;
  resume(id: number): void;
}

const F_HEAD = 1;
const F_RETRIABLE = 2;
const F_BODY = 4;
/** The handler forwards the head (OriginHandler.forwardsHead): the C client gives its forwardable lines too. */
const F_FORWARD = 16;
/** Header lines at most in one head (the C client's MAX_LINES): the offsets array holds 3 + 4 per line. */
const META_LEN = 3 + 4 * 256;
/** meta[BODY_AT]: the offset in the read buffer of body bytes given by their length (the C client's BODY_AT). */
const BODY_AT = META_LEN;

/**
 * Where the C client writes a head's forwardable lines in forwardBuffer (its FWD_AT); the bytes before are for the
 * status line written in front of them (NativeForwardHead.block). Their room after: a head's 16 KiB and 256 lines.
 */
const FWD_AT = 64;
const FWD_ROOM = 16 * 1024 + 1024;

/** A read's body bytes: none, a Buffer of its own, or the length of the bytes at meta[BODY_AT] in the read buffer. */
type NativeBody = Buffer | number | undefined;

const here = dirname(fileURLToPath(import.meta.url));
/** Where scripts/setup.mjs builds the module (node-gyp). */
export const NATIVE_MODULE_PATH = join(here, '../../../native/origin-client/build/Release/origin_client.node');

const log = componentLogger('edge-node.origin-client');

/** RFC 9110 §9.2.2: safe methods, PUT and DELETE. Retried once on a reused connection only when they carry no body. */
const IDEMPOTENT = new Set(['GET', 'HEAD', 'OPTIONS', 'TRACE', 'PUT', 'DELETE']);

// ---- the module, loaded once per process ------------------------------------------------------------------------

let binding: Binding | null = null;
const meta = new Int32Array(META_LEN + 1);
/** The C client's read buffer (a body given by length is viewed in it during the call). */
let readBuffer: Buffer = Buffer.alloc(0);
/** The C client writes a head's forwardable lines at FWD_AT (given by their length during the head's call). */
const forwardBuffer = Buffer.alloc(FWD_AT + FWD_ROOM);
/** Requests in flight by id (the id is the slot); freed ids are reused. */
const slots: (NativeRequest | undefined)[] = [];
const freeIds: number[] = [];

/**
 * Loads the native module. Throws with what to do when it is not built (`npm run setup` builds it): the edge asked
 * for the native client, so a missing module is an error, never a silent fallback.
 */
export function loadNativeOriginClient(): Binding {
  if (binding !== null) return binding;
  if (!existsSync(NATIVE_MODULE_PATH))
    throw new Error(
      `the native origin client is not built (${NATIVE_MODULE_PATH}): run \`npm run setup\` (it needs a C compiler, ` +
        'make and python3 for node-gyp), or set EDGE_ORIGIN_CLIENT=js for the TypeScript client',
    );
  const b = createRequire(import.meta.url)(NATIVE_MODULE_PATH) as Binding;
  readBuffer = b.init(onHead, onData, onError, onDrain, meta, forwardBuffer);
  binding = b;
  return b;
}

function onHead(
  id: number,
  status: number,
  head: string,
  body: NativeBody,
  done: number,
  trailers?: string,
  forward?: string | number,
  contentLength?: number,
) {
  return slots[id]!.head(status, head, body, done === 1, trailers, forward, contentLength ?? -1);
}
function onData(id: number, body: NativeBody, done: number, trailers?: string) {
  return slots[id]!.data(body, done === 1, trailers);
}

/** The body bytes of a read as a Buffer: a view of the read buffer (valid during this call) when given by length. */
function bodyOf(body: NativeBody, borrow: boolean): Buffer | undefined {
  if (typeof body !== 'number') return body;
  const at = meta[BODY_AT];
  const view = readBuffer.subarray(at, at + body);
  return borrow ? view : Buffer.from(view);
}
function onError(id: number, code: string, message: string): void {
  slots[id]!.failed(code, message);
}
function onDrain(id: number): void {
  slots[id]?.drained();
}

/** A native failure as the errors the proxy reads (upstream.ts isTimeout, isConnectFailure): the same codes. */
function nativeError(code: string, message: string): Error {
  if (code.startsWith('EDGE_ORIGIN_')) return new OriginError(code as OriginError['code'], message);
  const err = new Error(message) as Error & { code: string };
  err.code = code;
  return err;
}

/** "name:value\r\n" lines (checked and trimmed in C) as [name, value, …]. */
function trailerList(text: string | undefined): string[] | null {
  if (text === undefined) return null;
  const out: string[] = [];
  let at = 0;
  while (at < text.length) {
    const end = text.indexOf('\r\n', at);
    const colon = text.indexOf(':', at);
    out.push(text.slice(at, colon), text.slice(colon + 1, end));
    at = end + 2;
  }
  return out;
}

const NOOP = (): void => undefined;

/**
 * A head's forwardable lines from the C client: as text when some byte is not ASCII, otherwise their length in
 * forwardBuffer, where they stay until the next head: during the head's call they can go to uWS as one block with the
 * status line in front (block: no string made, none converted); what is still to write after the call is made text
 * then (detach).
 */
class NativeForwardHead implements ForwardHead {
  private text: string | null;
  private length: number;
  private used = false;
  constructor(
    forward: string | number,
    readonly contentLength: number,
  ) {
    this.text = typeof forward === 'string' ? forward : null;
    this.length = typeof forward === 'number' ? forward : -1;
  }

  get lines(): string {
    if (this.text !== null) return this.text;
    if (this.length < 0) throw new Error('the forwarded head was read after its call');
    const text = forwardBuffer.toString('latin1', FWD_AT, FWD_AT + this.length);
    this.text = text;
    return text;
  }

  block(before: Buffer, after: readonly Buffer[]): Buffer | null {
    if (this.length < 0 || this.used || before.length > FWD_AT) return null;
    let end = FWD_AT + this.length;
    for (let i = 0; i < after.length; i++) end += after[i].length;
    if (end > forwardBuffer.length) return null;
    this.used = true;
    const start = FWD_AT - before.length;
    forwardBuffer.set(before, start);
    end = FWD_AT + this.length;
    for (let i = 0; i < after.length; i++) {
      forwardBuffer.set(after[i], end);
      end += after[i].length;
    }
    return forwardBuffer.subarray(start, end);
  }

  /** The head's call is over: its lines, unless already written, become text (the buffer serves the next head). */
  detach(): void {
    if (this.length < 0) return;
    if (!this.used && this.text === null) this.text = forwardBuffer.toString('latin1', FWD_AT, FWD_AT + this.length);
    this.length = -1;
  }
}

/** The raw list given with a ForwardHead (read only): the list itself is rawHeaders(). */
const NO_RAW: string[] = Object.freeze([]) as unknown as string[];

/** The head's header lines as [name, value, …] from its text and the offsets the C client left in meta. */
function rawList(text: string): string[] {
  const n = meta[0];
  const raw: string[] = new Array<string>(n * 2);
  for (let i = 0, m = 3; i < n; i++, m += 4) {
    raw[2 * i] = text.slice(meta[m], meta[m + 1]);
    raw[2 * i + 1] = text.slice(meta[m + 2], meta[m + 3]);
  }
  return raw;
}

interface BodyListeners {
  data(chunk: Buffer): void;
  end(): void;
  error(err: Error): void;
  close(): void;
}

/** One request through the native client; its own OriginControl (no closure per request). */
class NativeRequest implements OriginControl {
  readonly id: number;
  /** The native side is done with it (answered, failed or aborted): its id is free. */
  private released = false;
  /** The handler got onComplete or onError. */
  private finished = false;
  /** The handler returned false: what the native side already gave waits here for resume. */
  private paused = false;
  private held: Buffer | null = null;
  private heldDone = false;
  private heldTrailers: string | undefined;
  private bodySent = 0;
  private bodyDone = true;
  private resumeFn: (() => void) | null = null;

  /** The request body's listeners, made only for a request with a body. */
  private listeners: BodyListeners | null = null;
  /** The handler takes views of the read buffer (OriginHandler.borrowsChunks). */
  private readonly borrows: boolean;

  constructor(
    private readonly b: Binding,
    readonly handler: OriginHandler,
    private readonly body: Readable | null,
    private readonly declaredLength: number,
  ) {
    this.id = freeIds.length > 0 ? freeIds.pop()! : slots.length;
    slots[this.id] = this;
    this.borrows = handler.borrowsChunks === true;
  }

  /** Tells the handler the request started: onStart with this request, or onConnect with an abort function. */
  announce(): void {
    const h = this.handler;
    if (h.onStart !== undefined) h.onStart(this);
    else h.onConnect((reason) => this.abort(reason));
  }

  private get resumeArg(): () => void {
    if (this.handler.onStart !== undefined) return NOOP;
    return (this.resumeFn ??= () => this.resume());
  }

  /** Sends the request (the head, then the body as it comes). */
  send(pool: number, head: string, flags: number, headersTimeoutMs: number, bodyTimeoutMs: number): void {
    this.b.request(pool, this.id, head, flags, headersTimeoutMs, bodyTimeoutMs, this.declaredLength);
    const body = this.body;
    if (body === null) return;
    this.bodyDone = false;
    const l = (this.listeners = {
      data: (chunk: Buffer) => this.bodyData(chunk),
      end: () => this.bodyEnd(),
      error: (err: Error) => this.fail(err),
      close: () => {
        if (!this.bodyDone) this.fail(new OriginError('EDGE_ORIGIN_REQUEST', 'request body ended early'));
      },
    });
    body.on('data', l.data);
    body.on('end', l.end);
    body.on('error', l.error);
    body.on('close', l.close);
    body.resume();
  }

  private release(): void {
    if (this.released) return;
    this.released = true;
    slots[this.id] = undefined;
    freeIds.push(this.id);
  }

  // ---- the request body ---------------------------------------------------------------------------------------

  private bodyData(chunk: Buffer): void {
    if (this.bodyDone || this.released) return;
    this.bodySent += chunk.length;
    if (this.declaredLength >= 0 && this.bodySent > this.declaredLength) {
      this.fail(new OriginError('EDGE_ORIGIN_REQUEST', 'request body longer than its Content-Length'));
      return;
    }
    if (!this.b.write(this.id, chunk, false)) this.body!.pause();
  }

  private bodyEnd(): void {
    if (this.bodyDone || this.released) return;
    if (this.declaredLength >= 0 && this.bodySent !== this.declaredLength) {
      this.fail(new OriginError('EDGE_ORIGIN_REQUEST', 'request body shorter than its Content-Length'));
      return;
    }
    this.detachBody();
    this.b.write(this.id, undefined, true);
  }

  drained(): void {
    if (!this.bodyDone) this.body!.resume();
  }

  private detachBody(): void {
    if (this.bodyDone) return;
    this.bodyDone = true;
    const body = this.body!;
    const l = this.listeners!;
    body.off('data', l.data);
    body.off('end', l.end);
    body.off('error', l.error);
    body.off('close', l.close);
  }

  // ---- the answer (called by the native side) -----------------------------------------------------------------

  head(
    status: number,
    text: string,
    body: NativeBody,
    done: boolean,
    trailers: string | undefined,
    forward: string | number | undefined,
    contentLength: number,
  ): boolean {
    if (done) this.release();
    const reason = meta[2] > meta[1] ? text.slice(meta[1], meta[2]) : '';
    const fh = forward !== undefined ? new NativeForwardHead(forward, contentLength) : null;
    try {
      let ok: boolean;
      if (fh !== null) {
        // A handler that forwards the head: the raw list is made only if it asks (rawHeaders, during this call).
        this.headText = text;
        try {
          ok = this.handler.onHeaders(status, NO_RAW, this.resumeArg, reason, fh) !== false;
        } finally {
          this.headText = null;
        }
      } else ok = this.handler.onHeaders(status, rawList(text), this.resumeArg, reason) !== false;
      if (this.finished) return true;
      return this.deliver(ok, bodyOf(body, ok && this.borrows), done, trailers);
    } catch (err) {
      this.handlerFailed(err);
      return true;
    } finally {
      fh?.detach();
    }
  }

  data(body: NativeBody, done: boolean, trailers: string | undefined): boolean {
    if (done) this.release();
    try {
      return this.deliver(true, bodyOf(body, this.borrows), done, trailers);
    } catch (err) {
      this.handlerFailed(err);
      return true;
    }
  }

  /**
   * Hands the handler body bytes and the end, or holds them while it has paused; false asks the native side to wait.
   * `body` is a view of the read buffer only when `ok` and the handler borrows chunks (it is held only when not ok).
   */
  private deliver(ok: boolean, body: Buffer | undefined, done: boolean, trailers: string | undefined): boolean {
    if (body !== undefined) {
      if (!ok) this.held = body;
      else {
        ok = this.handler.onData(body) !== false;
        if (this.finished) return true;
      }
    }
    if (done) {
      if (!ok) {
        this.heldDone = true;
        this.heldTrailers = trailers;
      } else this.complete(trailers);
    }
    if (!ok) this.paused = true;
    return ok;
  }

  private complete(trailers: string | undefined): void {
    this.finished = true;
    if (!this.bodyDone) {
      // An answer before the whole request body went out (the connection was not kept): the rest is not wanted.
      this.detachBody();
      this.body!.destroy();
    }
    this.handler.onComplete(trailerList(trailers));
  }

  failed(code: string, message: string): void {
    this.release();
    this.fail(nativeError(code, message));
  }

  /** The handler threw while its request was under way: that request fails; after its end it is only logged. */
  private handlerFailed(err: unknown): void {
    if (this.finished) {
      log.error({ err }, 'origin response handler failed');
      return;
    }
    this.fail(err instanceof Error ? err : new Error(String(err)));
  }

  /** Ends the request with `err` (once): the native side drops it, the handler's onError gets it. */
  private fail(err: Error): void {
    if (this.finished) return;
    this.finished = true;
    if (!this.released) {
      this.b.abort(this.id);
      this.release();
    }
    if (!this.bodyDone) this.detachBody();
    this.held = null;
    try {
      this.handler.onError(err);
    } catch (e) {
      log.error({ err: e }, 'origin response handler failed');
    }
  }

  /** A request that may not be sent (encodeRequest found why): never sent, the handler told on the next tick. */
  refuse(err: OriginError): void {
    this.finished = true;
    this.release();
    queueMicrotask(() => this.handler.onError(err));
  }

  // ---- OriginControl ------------------------------------------------------------------------------------------

  /** The head's text while a forwarding handler's onHeaders runs (rawHeaders reads it). */
  private headText: string | null = null;

  rawHeaders(): string[] {
    if (this.headText === null) throw new Error('rawHeaders is read during onHeaders only');
    return rawList(this.headText);
  }

  abort(reason: Error): void {
    this.fail(reason);
  }

  resume(): void {
    if (this.finished || !this.paused) return;
    this.paused = false;
    try {
      const held = this.held;
      if (held !== null) {
        this.held = null;
        const ok = this.handler.onData(held) !== false;
        if (this.finished) return;
        if (!ok) {
          this.paused = true;
          return;
        }
      }
      if (this.heldDone) {
        this.heldDone = false;
        this.complete(this.heldTrailers);
        return;
      }
    } catch (err) {
      this.handlerFailed(err);
      return;
    }
    if (!this.released) this.b.resume(this.id);
  }
}

/** How long a name's checked address is used before it is looked up again (the old one serves meanwhile). */
const NAME_TTL_MS = 30_000;

/** An origin served natively: an address literal, or a name with the address last resolved and checked for it. */
class Pool {
  /** The native pool; -1 while a name has no checked address (its requests go to the TypeScript client). */
  id = -1;
  address = '';
  /** When a name was last resolved (Date.now()), whether a lookup is under way. */
  resolvedAt = 0;
  resolving = false;
  closed = false;
  constructor(
    readonly host: string,
    readonly port: number,
    readonly tag: string,
    readonly name: boolean,
  ) {}
}

/** The native origin client: the same interface as OriginClient (client.ts). */
export class NativeOriginClient {
  private readonly b: Binding;
  /** Pools by host|port|tag, in LRU order; null: a refused address, answered by the TypeScript client. */
  private readonly pools = new Map<string, Pool | null>();
  private last: Pool | null = null;
  private readonly fallback: OriginClient;
  private readonly maxConnections: number;
  private readonly maxIdle: number;
  private readonly connectTimeoutMs: number;
  private evictedNative = 0;

  constructor(private readonly opts: OriginClientOptions) {
    this.b = loadNativeOriginClient();
    this.fallback = new OriginClient(opts);
    this.maxConnections = opts.maxConnections ?? 256;
    this.maxIdle = opts.maxIdle ?? 128;
    this.connectTimeoutMs = opts.connectTimeoutMs ?? 10_000;
  }

  /** Pools closed to stay within maxPools. */
  get evicted(): number {
    return this.evictedNative + this.fallback.evicted;
  }

  get size(): number {
    let n = 0;
    for (const p of this.pools.values()) if (p !== null && p.id >= 0) n++;
    return n + this.fallback.size;
  }

  /** As OriginClient.dispatch. */
  dispatch(
    host: string,
    port: number,
    tag: string,
    method: string,
    path: string,
    headers: string[],
    body: Readable | null,
    handler: OriginHandler,
    headersTimeoutMs: number,
    bodyTimeoutMs: number,
  ): void {
    const encoded = encodeRequest(method, path, headers, body !== null);
    this.dispatchEncoded(host, port, tag, method, encoded, body, handler, headersTimeoutMs, bodyTimeoutMs);
  }

  /** As OriginClient.dispatchEncoded. */
  dispatchEncoded(
    host: string,
    port: number,
    tag: string,
    method: string,
    encoded: EncodedRequest,
    body: Readable | null,
    handler: OriginHandler,
    headersTimeoutMs: number,
    bodyTimeoutMs: number,
  ): void {
    const pool = this.pool(host, port, tag);
    if (pool === null || (pool.name && !this.named(pool))) {
      this.fallback.dispatchEncoded(host, port, tag, method, encoded, body, handler, headersTimeoutMs, bodyTimeoutMs);
      return;
    }
    const req = new NativeRequest(this.b, handler, body, encoded.declaredLength);
    req.announce();
    if (encoded.invalid !== null) {
      req.refuse(encoded.invalid);
      return;
    }
    let flags = method === 'HEAD' ? F_HEAD : 0;
    if (handler.forwardsHead === true) flags |= F_FORWARD;
    if (body !== null) flags |= F_BODY;
    else if (IDEMPOTENT.has(method)) flags |= F_RETRIABLE;
    req.send(pool.id, encoded.head, flags, headersTimeoutMs, bodyTimeoutMs);
  }

  /**
   * Whether a name's pool has a checked address to connect to; looks the name up again (resolveAllowed: every
   * address checked, the allowed one kept) when its address is older than NAME_TTL_MS. Until the first lookup
   * answers, and while the name resolves to nothing allowed, the TypeScript client serves it (and reports why).
   */
  private named(p: Pool): boolean {
    if (!p.resolving && Date.now() - p.resolvedAt >= NAME_TTL_MS) {
      p.resolving = true;
      resolveAllowed(this.opts.policy, p.host, p.port).then(
        (address) => this.resolved(p, address),
        () => this.resolved(p, ''),
      );
    }
    return p.id >= 0;
  }

  private resolved(p: Pool, address: string): void {
    p.resolving = false;
    p.resolvedAt = Date.now();
    if (p.closed || address === p.address) return;
    if (p.id >= 0) this.b.poolClose(p.id); // requests under way finish on their connections
    p.address = address;
    p.id =
      address === ''
        ? -1
        : this.b.poolCreate(address, p.port, this.maxConnections, this.maxIdle, this.connectTimeoutMs);
  }

  private pool(host: string, port: number, tag: string): Pool | null {
    const last = this.last;
    if (last !== null && last.port === port && last.host === host && last.tag === tag) return last;
    const key = `${host}|${port}|${tag}`;
    let p = this.pools.get(key);
    if (p !== undefined) {
      this.pools.delete(key);
      this.pools.set(key, p);
      if (p !== null) this.last = p;
      return p;
    }
    const bare = host.replace(/^\[|\]$/g, '');
    if (isIP(bare) === 0) p = new Pool(host, port, tag, true);
    else if (this.opts.policy.refusal(bare, port) !== undefined) p = null;
    else {
      p = new Pool(host, port, tag, false);
      p.address = bare;
      p.id = this.b.poolCreate(bare, port, this.maxConnections, this.maxIdle, this.connectTimeoutMs);
    }
    if (p !== null) this.last = p;
    this.pools.set(key, p);
    if (this.pools.size > this.opts.maxPools) {
      const [oldKey, oldest] = this.pools.entries().next().value as [string, Pool | null];
      this.pools.delete(oldKey);
      if (oldest !== null) {
        oldest.closed = true;
        if (oldest.id >= 0) {
          this.evictedNative++;
          this.b.poolClose(oldest.id);
        }
        if (this.last === oldest) this.last = null;
      }
    }
    return p;
  }

  /** Connections (busy and idle) to host:port (pools tagged `tag`) now. */
  connections(host: string, port: number, tag = ''): number {
    const p = this.pools.get(`${host}|${port}|${tag}`);
    if (p === undefined || p === null || p.id < 0) return this.fallback.connections(host, port, tag);
    return this.b.poolConnections(p.id);
  }

  close(): void {
    for (const p of this.pools.values())
      if (p !== null) {
        p.closed = true;
        if (p.id >= 0) this.b.poolClose(p.id);
      }
    this.pools.clear();
    this.last = null;
    this.fallback.close();
  }
}
