// Sends a request to its origin and streams the answer back through uWS with backpressure, no body buffering
// (except a bounded copy when the answer is being stored in the cache). One Attempt object per origin try, with
// prototype methods as the handler of either origin client (the edge's own for plain HTTP, undici for HTTPS): no
// closures are created per request on this path.
import { performance } from 'node:perf_hooks';
import type { Readable, Transform } from 'node:stream';
import type { Dispatcher } from 'undici';
import { isAddressRefused } from '@platform/shared/address-policy';
import type { HttpResponse } from 'uWebSockets.js';
import type { RequestContext } from '../context.js';
import type { OriginTarget } from './origin.js';
import { isCertificateFailure, isConnectFailure, isTimeout, type UpstreamPools } from './upstream.js';
import { OriginError } from './origin-client/errors.js';
import {
  encodeLines,
  encodeProxied,
  type EncodedRequest,
  type ForwardHead,
  type OriginControl,
  type OriginHandler,
} from './origin-client/request.js';
import { endWithoutBody, linesFit, writeHead, writeHeadLines, type ResponseOps } from './respond.js';
import { createCompressor, type Coding } from '../rules/optimize.js';
import { charsetOf, TRANSFORM_MAX_BYTES, transformBody, type TransformKind } from '../rules/optimize-transform.js';

/** Hop-by-hop and edge-owned headers never copied between client and origin (RFC 9110 §7.6.1). */
const HOP_REQUEST = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'te',
  'trailer',
  'upgrade',
  'transfer-encoding',
  'host',
  'x-forwarded-for',
  'x-forwarded-proto',
  'x-forwarded-host',
  'x-real-ip',
  'forwarded',
  'expect',
]);
const HOP_RESPONSE = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'te',
  'trailer',
  'upgrade',
  'transfer-encoding',
  'content-length',
  'date',
]);

const EMPTY_HEADERS: Record<string, string | string[]> = Object.freeze({}) as Record<string, string | string[]>;

/** What the phases decided about the answer before it arrives. */
export interface ResponsePlan {
  ops: ResponseOps | null;
  /** captureLimit reads the origin's headers (a cache rule applies); otherwise it is given an empty record. */
  needsOriginHeaders: boolean;
  /** Called with the status: a body to send instead (error_page), or undefined to stream the origin's. */
  replaceBody(status: number): { body: Buffer; contentType: string } | undefined;
  /** Called with status and headers: max bytes to copy for the cache (0: do not store). */
  captureLimit(status: number, headers: Record<string, string | string[]>): number;
  /** An optimize rule may compress this request's answers (compression() is asked only then). */
  readonly compresses: boolean;
  /**
   * Called before captureLimit with the status, the outgoing headers (it may add Vary, Content-Encoding and weaken an
   * ETag) and the origin's Content-Length (-1: unknown): the coding to compress the body with, or undefined.
   */
  compression(status: number, headers: [string, string][], contentLength: number): Coding | undefined;
  /** An optimize rule may minify or convert this request's answers (transform() is asked only then). */
  readonly transforms: boolean;
  /**
   * Called first with the status, the outgoing headers (it may add Vary) and the origin's Content-Length: the
   * transformation of the whole body and the headers of the transformed answer, or undefined.
   */
  transform(
    status: number,
    headers: [string, string][],
    contentLength: number,
  ): { kind: TransformKind; headers: [string, string][] } | undefined;
  /** Browser TTL to set as Cache-Control, 0 to leave the origin's. */
  browserTtlSec: number;
  /** The origin answered and the whole body was copied. */
  onStored(
    status: number,
    headers: [string, string][],
    body: Buffer,
    originHeaders: Record<string, string | string[]>,
  ): void;
  /** The origin failed or answered 5xx: return true when the phases answered (stale entry); else 502/504 is sent. */
  onFailure(err: Error, connectFailure: boolean): boolean;
  /**
   * Edge error answer (502/504/526) with error_page applied; `cause` names why for a refused origin address (502) and
   * a refused origin certificate (526).
   */
  sendError(status: number, cause?: Error): void;
  /** Another origin to try after a connection failure (origin_pool failover), or undefined. */
  retarget(): OriginTarget | undefined;
  /** The exchange is over (answered, failed or aborted): log it. */
  done(): void;
  /**
   * Nothing but the origin's status decides the answer beyond forwardsAsIs: no error_page rule (replaceBody) and no
   * origin_pool (health marks, failover). The native front may relay such an answer itself.
   */
  readonly nativeForwardable?: boolean;
}

/**
 * A response of the native front (front/native.ts) that forwards a request itself: the head goes to the origin and
 * the answer to the client in C, edited by the response header rules and given its x-cache-status line. False when it does not
 * take the request (an origin by name, a refused address, a full module): the exchange then runs here.
 */
export interface NativeForwarder {
  forwardNative(ctx: RequestContext, target: OriginTarget, head: string, plan: ResponsePlan): boolean;
}

/**
 * The request head's parts a route and origin share (the Host line, encoded and checked once) and the forwarding
 * lines of the last scheme and client Host seen with them, so a request writes only what is its own: the request
 * line, the client's headers and its address. One per OriginTarget (proxy/origin.ts keeps a record's target while
 * the request Host stays the same).
 */
class ProxyHeadTemplate {
  readonly host: EncodedRequest;
  private scheme = '';
  private clientHost = '';
  private forwarded = '';
  private forwardedInvalid = false;

  constructor(target: OriginTarget) {
    this.host = encodeLines([['host', target.hostHeader]]);
  }

  /** x-forwarded-proto and x-forwarded-host for this request ('' and invalidForwarded() when the Host may not be sent). */
  forwardedLines(scheme: string, clientHost: string): string {
    if (scheme !== this.scheme || clientHost !== this.clientHost) {
      const lines = encodeLines([
        ['x-forwarded-proto', scheme],
        ['x-forwarded-host', clientHost],
      ]);
      this.scheme = scheme;
      this.clientHost = clientHost;
      this.forwarded = lines.head;
      this.forwardedInvalid = lines.invalid !== null;
    }
    return this.forwarded;
  }

  get invalidForwarded(): boolean {
    return this.forwardedInvalid;
  }

  private tailPeer = '';
  private tailForwarded = '';
  private tail = '';

  /**
   * The head's last lines: x-forwarded-for and x-real-ip (the TCP peer, an address the front formatted: nothing to
   * check), then forwardedLines; made again when the peer or those lines change (a connection's requests share them).
   */
  tailLines(peer: string, scheme: string, clientHost: string): string {
    const forwarded = this.forwardedLines(scheme, clientHost);
    if (peer !== this.tailPeer || forwarded !== this.tailForwarded) {
      this.tail = `x-forwarded-for: ${peer}\r\nx-real-ip: ${peer}\r\n${forwarded}`;
      this.tailPeer = peer;
      this.tailForwarded = forwarded;
    }
    return this.tail;
  }
}

const templates = new WeakMap<OriginTarget, ProxyHeadTemplate>();

/**
 * The head of a proxied request to a plain-HTTP origin: the route's template, the client's headers minus hop-by-hop
 * ones (each checked), then the forwarding headers from the TCP peer (an address uWS formatted: nothing to check).
 */
export function encodeUpstream(
  ctx: RequestContext,
  target: OriginTarget,
  requestHeaders: [string, string][],
  hasBody: boolean,
): EncodedRequest {
  let t = templates.get(target);
  if (t === undefined) templates.set(target, (t = new ProxyHeadTemplate(target)));
  const path = ctx.upstreamQuery ? `${ctx.upstreamPath}?${ctx.upstreamQuery}` : ctx.upstreamPath;
  const tail = t.tailLines(ctx.peer.text, ctx.scheme, ctx.host);
  const encoded = encodeProxied(ctx.method, path, t.host, requestHeaders, HOP_REQUEST, tail, hasBody);
  if (t.invalidForwarded)
    encoded.invalid ??= new OriginError('EDGE_ORIGIN_REQUEST', 'invalid request header "x-forwarded-host"');
  return encoded;
}

/** Builds the flat header list for the origin: the client's headers minus hop-by-hop, then forwarding headers from the TCP peer. */
export function upstreamHeaders(
  ctx: RequestContext,
  target: OriginTarget,
  requestHeaders: [string, string][],
): string[] {
  const out: string[] = ['host', target.hostHeader];
  for (const [k, v] of requestHeaders) if (!HOP_REQUEST.has(k)) out.push(k, v);
  // The client address is the TCP peer; whatever X-Forwarded-For the client sent is dropped, never trusted.
  out.push(
    'x-forwarded-for',
    ctx.peer.text,
    'x-real-ip',
    ctx.peer.text,
    'x-forwarded-proto',
    ctx.scheme,
    'x-forwarded-host',
    ctx.host,
  );
  return out;
}

/** A header name or value from the origin: latin1 strings from the origin client, Buffers from undici. */
type RawHeader = Buffer | string;

function latin1(h: RawHeader): string {
  return typeof h === 'string' ? h : h.toString('latin1');
}

/**
 * The origin's raw header list ([name, value, …], as the clients' parsers give them) as a record: names lower case,
 * values latin1, repeated names as arrays — the same shape as undici's own parseHeaders. Built only when the cache needs it.
 */
function headerRecord(raw: RawHeader[]): Record<string, string | string[]> {
  const obj: Record<string, string | string[]> = {};
  for (let i = 0; i < raw.length; i += 2) {
    const key = latin1(raw[i]).toLowerCase();
    const value = latin1(raw[i + 1]);
    const prev = Object.hasOwn(obj, key) ? obj[key] : undefined;
    if (prev === undefined)
      Object.defineProperty(obj, key, { value, enumerable: true, configurable: true, writable: true });
    else if (typeof prev === 'string') obj[key] = [prev, value];
    else prev.push(value);
  }
  return obj;
}

/**
 * The answer's headers go out as the origin sent them (less hop-by-hop and framing lines), edited by response header
 * rules only: no optimize rule may transform or compress it, no browser TTL replaces Cache-Control, and no cache rule
 * reads them (a cache copy keeps the header list).
 */
function forwardsAsIs(plan: ResponsePlan): boolean {
  return (
    !plan.transforms && !plan.compresses && plan.browserTtlSec === 0 && !plan.needsOriginHeaders && linesFit(plan.ops)
  );
}

/** Shared state of one proxied request across its attempts (Auto fallback, pool failover). */
class Exchange {
  scheme: 'http' | 'https';
  readonly startedAt = performance.now();
  finished = false;
  /** The head encoded for `encodedFor` (plain HTTP), kept for an attempt again at the same origin. */
  private encoded: EncodedRequest | null = null;
  private encodedFor: OriginTarget | null = null;
  constructor(
    readonly res: HttpResponse,
    readonly ctx: RequestContext,
    readonly pools: UpstreamPools,
    public target: OriginTarget,
    readonly requestHeaders: [string, string][],
    readonly body: Readable | null,
    readonly plan: ResponsePlan,
    readonly h2: boolean,
  ) {
    this.scheme = pools.effectiveScheme(target);
  }

  start(): void {
    const { ctx, target } = this;
    if (this.scheme === 'http') {
      if (this.encodedFor !== target) {
        this.encoded = encodeUpstream(ctx, target, this.requestHeaders, this.body !== null);
        this.encodedFor = target;
      }
      this.pools.dispatchHttp(target, ctx.method, this.encoded!, this.body, new Attempt(this));
      return;
    }
    const path = ctx.upstreamQuery ? `${ctx.upstreamPath}?${ctx.upstreamQuery}` : ctx.upstreamPath;
    const headers = upstreamHeaders(ctx, target, this.requestHeaders);
    this.pools.dispatch(
      target,
      this.scheme,
      { method: ctx.method, path, headers, body: this.body },
      new Attempt(this),
      this.h2,
    );
  }

  finish(): void {
    if (!this.finished) {
      this.finished = true;
      this.plan.done();
    }
  }
}

/** The attempt whose chunk res.cork is writing: cork runs its callback synchronously, so one module-level callback
 * serves every request (no closure per request or per chunk). */
let corking: Attempt | null = null;
function corkWriteChunk(): void {
  corking!.writeChunk();
}

/**
 * One try at the origin, as undici's dispatch handler and the origin client's (origin-client/request.ts, the same
 * methods). It uses undici's raw handler methods (onConnect, onHeaders with the raw header list, onData returning
 * false to pause): the newer onRequestStart/onResponseStart API wraps every request in an UnwrapHandler that parses
 * the headers into an object first.
 */
class Attempt implements Dispatcher.DispatchHandler, OriginHandler {
  /**
   * onData's chunk may be a view of the native client's read buffer, valid during the call only: what outlives it
   * (the cache copy, a chunk held under backpressure, compressor and transformation input) is copied.
   */
  readonly borrowsChunks = true;
  /** The native client may give the head as it is passed on (ForwardHead): no header list when nothing edits it. */
  readonly forwardsHead = true;
  /**
   * The head as the native client gives it (its lines), written as it is (writeHeadLines) when nothing reads or edits
   * the answer's headers (forwardsAsIs); null when the header list (outHeaders) is written.
   */
  private outHead: ForwardHead | null = null;
  /** The origin client's request (onStart), or undici's abort and resume functions (onConnect, onHeaders). */
  private ctl: OriginControl | null = null;
  private abort: ((reason: Error) => void) | undefined;
  private resume: (() => void) | undefined;
  private headSent = false;
  private headWritten = false;
  private answered = false;
  private replaced: { body: Buffer; contentType: string } | undefined;
  private contentLength = -1;
  private capture: Buffer[] | null = null;
  private captureLeft = 0;
  private status = 0;
  private outHeaders: [string, string][] = [];
  private rawHeaders: RawHeader[] = [];
  private originHeadersRecord: Record<string, string | string[]> | undefined;
  private pending: Buffer | null = null;
  private pendingOffset = 0;

  constructor(private readonly x: Exchange) {}

  private get originHeaders(): Record<string, string | string[]> {
    return (this.originHeadersRecord ??= headerRecord(this.rawHeaders));
  }

  /** The origin client's start: the request is the control (no closure per request). */
  onStart(ctl: OriginControl): void {
    this.ctl = ctl;
    this.x.ctx.upstream = this;
  }

  /** undici's start. */
  onConnect(abort: (reason: Error) => void): void {
    this.abort = abort;
    this.x.ctx.upstream = this;
  }

  /** The client went away (server.ts onAborted): the origin exchange and a compressor are ended. */
  cancel(): void {
    this.abortOrigin(new Error('client aborted'));
    this.z?.destroy();
  }

  private abortOrigin(reason: Error): void {
    if (this.ctl !== null) this.ctl.abort(reason);
    else this.abort?.(reason);
  }

  private resumeOrigin(): void {
    if (this.ctl !== null) this.ctl.resume();
    else this.resume?.();
  }

  onHeaders(st: number, given: RawHeader[], resume: () => void, _statusText?: string, forward?: ForwardHead): boolean {
    if (st < 200) return true;
    const { ctx, plan } = this.x;
    this.status = st;
    if (this.ctl === null) this.resume = resume;
    ctx.upstreamMs = performance.now() - this.x.startedAt;
    if (ctx.aborted) {
      this.abortOrigin(new Error('client aborted'));
      return true;
    }
    // A 5xx with a stale entry at hand: the stale entry is the answer (the origin body is read and dropped).
    if (st >= 500 && plan.onFailure(new Error(`origin answered ${st}`), false)) {
      this.answered = true;
      return true;
    }
    this.replaced = st >= 400 ? plan.replaceBody(st) : undefined;
    if (this.replaced) return true;
    const noBody = ctx.method === 'HEAD' || st === 204 || st === 304;
    if (forward !== undefined && forwardsAsIs(plan)) {
      // Nothing reads the headers: the native client's lines go out (the same bytes as the list would give).
      this.outHead = forward;
      this.contentLength = forward.contentLength;
      this.decideBody(noBody);
      return this.headReady(noBody);
    }
    const raw = forward !== undefined ? this.ctl!.rawHeaders!() : given;
    this.rawHeaders = raw;
    // One pass over the raw list: names lower case, values latin1 (as undici's parseHeaders), hop-by-hop dropped.
    const out: [string, string][] = [];
    let cl: string | undefined;
    let clCount = 0;
    for (let i = 0; i < raw.length; i += 2) {
      const name = latin1(raw[i]).toLowerCase();
      if (name === 'content-length') {
        cl = latin1(raw[i + 1]);
        clCount++;
        continue;
      }
      if (HOP_RESPONSE.has(name)) continue;
      out.push([name, latin1(raw[i + 1])]);
    }
    if (plan.browserTtlSec > 0) {
      for (let i = out.length - 1; i >= 0; i--) if (out[i][0] === 'cache-control') out.splice(i, 1);
      out.push(['cache-control', `max-age=${plan.browserTtlSec}`]);
    }
    this.outHeaders = out;
    this.contentLength = clCount === 1 && /^\d+$/.test(cl!) ? Number(cl) : -1;
    if (plan.transforms && !noBody && this.contentLength !== 0) {
      const t = plan.transform(st, out, this.contentLength);
      if (t) {
        let type: string | undefined;
        for (const [name, value] of out) if (name === 'content-type') type = value;
        this.tf = { kind: t.kind, headers: t.headers, chunks: [], size: 0, charset: charsetOf(type) };
      }
    }
    // A body to transform is held first: compression and the cache copy are decided once it is known.
    if (this.tf === null) this.decideBody(noBody);
    return this.headReady(noBody);
  }

  /** The head is decided: an answer without a body goes out now; otherwise the head goes with the first chunk. */
  private headReady(noBody: boolean): boolean {
    const { ctx, res } = this.x;
    this.headSent = true;
    if (noBody || this.contentLength === 0) {
      const len = this.contentLength;
      res.cork(() => {
        this.writeOutHead();
        if (noBody) endWithoutBody(res, this.status, len);
        else res.end();
      });
      this.headWritten = true;
      ctx.aborted = true;
    }
    // Otherwise the head goes out with the first body chunk: one write (one send) instead of two.
    return true;
  }

  /** Writes the answer's status and headers (inside res.cork): the native client's lines or the header list. */
  private writeOutHead(): void {
    const { ctx, res, plan } = this.x;
    if (this.outHead !== null) writeHeadLines(res, ctx, this.status, this.outHead, plan.ops);
    else writeHead(res, ctx, this.status, this.headersToWrite(), plan.ops);
  }

  /**
   * The header list writeHead may edit in place (it applies the response header rules to it): a copy while the answer
   * is being stored, so the cache keeps the origin's headers and a hit applies the rules once, not on top of themselves.
   */
  private headersToWrite(): [string, string][] {
    const ops = this.x.plan.ops;
    return this.capture !== null && ops !== null && ops.length > 0 ? this.outHeaders.slice() : this.outHeaders;
  }

  /** Compression and the cache copy, decided from the outgoing headers and the body's length (-1: unknown). */
  private decideBody(noBody: boolean): void {
    const { ctx, plan } = this.x;
    const st = this.status;
    if (plan.compresses && !noBody && this.contentLength !== 0) {
      const coding = plan.compression(st, this.outHeaders, this.contentLength);
      if (coding) this.startCompressor(coding);
    }
    const limit =
      ctx.method === 'GET' ? plan.captureLimit(st, plan.needsOriginHeaders ? this.originHeaders : EMPTY_HEADERS) : 0;
    if (limit > 0 && (this.contentLength < 0 || this.contentLength <= limit)) {
      this.capture = [];
      this.captureLeft = limit;
    }
  }

  /** A body being held for an optimize transformation (at most TRANSFORM_MAX_BYTES). */
  private tf: {
    kind: TransformKind;
    headers: [string, string][];
    chunks: Buffer[];
    size: number;
    charset: string | undefined;
  } | null = null;

  /** Holds a chunk of a body to transform; past the bound the answer goes out as the origin sent it. */
  private holdChunk(chunk: Buffer): boolean {
    const tf = this.tf!;
    if (tf.size + chunk.length <= TRANSFORM_MAX_BYTES) {
      tf.chunks.push(Buffer.from(chunk));
      tf.size += chunk.length;
      return true;
    }
    this.tf = null;
    tf.chunks.push(Buffer.from(chunk));
    this.decideBody(false);
    return this.onData(Buffer.concat(tf.chunks));
  }

  /** The whole body is in: transform it (off this call stack), then answer. */
  private completeTransform(): void {
    const tf = this.tf!;
    this.tf = null;
    const body = tf.chunks.length === 1 ? tf.chunks[0] : Buffer.concat(tf.chunks);
    transformBody(tf.kind, body, tf.charset).then(
      (out) => this.sendTransformed(out, body, tf.headers),
      () => this.sendTransformed(undefined, body, tf.headers),
    );
  }

  /** Sends the transformed body (or the original, when the transformation gave nothing), compressed if it may be. */
  private sendTransformed(out: Buffer | undefined, body: Buffer, headers: [string, string][]): void {
    const { ctx, res, plan } = this.x;
    if (ctx.aborted) {
      this.x.finish();
      return;
    }
    if (out !== undefined) this.outHeaders = headers;
    const answer = out ?? body;
    this.contentLength = answer.length;
    this.decideBody(false);
    if (this.z) {
      // The compressor's end answers the client, stores the copy and finishes the exchange (on its close).
      this.z.end(answer);
      return;
    }
    this.sent(answer);
    ctx.aborted = true;
    this.headWritten = true;
    res.cork(() => {
      writeHead(res, ctx, this.status, this.headersToWrite(), plan.ops);
      res.end(answer);
    });
    if (this.capture) plan.onStored(this.status, this.outHeaders, Buffer.concat(this.capture), this.originHeaders);
    this.x.finish();
  }

  /** Returns false to pause the origin while uWS has backpressure (resumed from onWritable). */
  onData(chunk: Buffer): boolean {
    const { ctx, res } = this.x;
    ctx.originBytes += chunk.length;
    if (this.replaced || this.answered || ctx.aborted) return true;
    if (this.tf) return this.holdChunk(chunk);
    if (this.z) return this.compressChunk(chunk);
    this.sent(chunk);
    this.chunk = chunk;
    this.ok = true;
    // eslint-disable-next-line @typescript-eslint/no-this-alias -- hands this attempt to the module-level cork callback, so no closure is made per chunk
    corking = this;
    res.cork(corkWriteChunk);
    corking = null;
    if (!this.ok) {
      res.onWritable((this.onWritableFn ??= (offset) => this.onWritable(offset)));
      return false;
    }
    return true;
  }

  /** Counts a chunk going to the client and copies it for the cache (dropping the copy once over its limit). */
  private sent(chunk: Buffer): void {
    this.x.ctx.bytes += chunk.length;
    if (this.capture) {
      if (chunk.length > this.captureLeft) this.capture = null;
      else {
        this.capture.push(Buffer.from(chunk));
        this.captureLeft -= chunk.length;
      }
    }
  }

  chunk: Buffer | null = null;
  ok = true;
  /** Created on the first backpressure only (most answers never need it). */
  private onWritableFn: ((offset: number) => boolean) | undefined;

  /** Writes the current chunk (called inside cork by corkWriteChunk). */
  writeChunk(): void {
    const { ctx, res } = this.x;
    const chunk = this.chunk!;
    this.chunk = null;
    const first = !this.headWritten;
    if (first) {
      this.headWritten = true;
      if (ctx.bodyPaused) {
        // The origin answers before the client's upload is through (an origin that does not read it, as Python's
        // http.server answering 501): uWS paused on the request body sends nothing, so it goes on reading (what the
        // origin no longer takes is dropped by the body stream) and the answer goes out.
        ctx.bodyPaused = false;
        res.resume();
      }
      this.writeOutHead();
    }
    if (first && chunk.length === this.contentLength) {
      // The whole body in one read (most answers): end() with it, as a whole-body answer is written (what the socket
      // does not take at once, uWS keeps; at most one read of the origin, 64 KiB).
      res.end(chunk);
      ctx.aborted = true;
    } else if (this.contentLength >= 0) {
      const offset = res.getWriteOffset();
      const [written, done] = res.tryEnd(chunk, this.contentLength);
      if (done) ctx.aborted = true;
      else if (!written) {
        this.ok = false;
        this.pending = Buffer.from(chunk);
        this.pendingOffset = offset;
      }
    } else this.ok = res.write(chunk);
  }

  private onWritable(offset: number): boolean {
    const { ctx, res } = this.x;
    if (ctx.aborted) return true;
    if (this.pending) {
      const [written, done] = res.tryEnd(this.pending.subarray(offset - this.pendingOffset), this.contentLength);
      if (done) ctx.aborted = true;
      if (!written) return false;
      this.pending = null;
    }
    this.resumeOrigin();
    return true;
  }

  /** The compressor of this answer (optimize rule), when the edge compresses it. */
  private z: Transform | null = null;
  private zWaiting = false;

  /**
   * Compresses the body from here on: the answer goes out chunked (no Content-Length), the cache copy (if any) is of
   * the compressed bytes. Memory stays bounded: the compressor's buffers are 16 KiB; when the client is slow its
   * output pauses (resumed from onWritable), its input then fills and the origin is paused (resumed on drain).
   */
  private startCompressor(coding: Coding): void {
    const { ctx, res } = this.x;
    const z = createCompressor(coding, this.contentLength);
    this.z = z;
    this.contentLength = -1;
    z.on('data', (out: Buffer) => {
      if (ctx.aborted) {
        z.destroy();
        return;
      }
      this.sent(out);
      let ok = true;
      res.cork(() => {
        if (!this.headWritten) {
          this.headWritten = true;
          this.writeOutHead();
        }
        ok = res.write(out);
      });
      if (!ok) {
        z.pause();
        res.onWritable(() => {
          z.resume();
          return true;
        });
      }
    });
    z.on('end', () => {
      if (ctx.aborted) return;
      ctx.aborted = true;
      res.cork(() => {
        if (!this.headWritten) {
          this.headWritten = true;
          this.writeOutHead();
        }
        res.end();
      });
      if (this.capture)
        this.x.plan.onStored(this.status, this.outHeaders, Buffer.concat(this.capture), this.originHeaders);
    });
    z.on('error', () => {
      if (!ctx.aborted) {
        ctx.aborted = true;
        res.close();
      }
    });
    z.on('close', () => this.x.finish());
  }

  /** Feeds one origin chunk to the compressor; false pauses the origin until the compressor drains. */
  private compressChunk(chunk: Buffer): boolean {
    const z = this.z!;
    if (z.write(Buffer.from(chunk)) || this.zWaiting) return !this.zWaiting;
    this.zWaiting = true;
    z.once('drain', () => {
      this.zWaiting = false;
      this.resumeOrigin();
    });
    return false;
  }

  onComplete(): void {
    const { ctx, res, plan } = this.x;
    if (this.tf && !ctx.aborted && !this.answered && !this.replaced) {
      this.completeTransform();
      return;
    }
    if (this.z) {
      // The compressor's end answers the client, stores the copy and finishes the exchange (on its close).
      if (ctx.aborted) this.z.destroy();
      else this.z.end();
      return;
    }
    if (this.answered) {
      this.x.finish();
      return;
    }
    if (this.replaced) {
      const r = this.replaced;
      if (!ctx.aborted) {
        ctx.aborted = true;
        ctx.bytes = r.body.length;
        res.cork(() => {
          writeHead(res, ctx, this.status, [['content-type', r.contentType]], plan.ops);
          if (ctx.method === 'HEAD') endWithoutBody(res, this.status, r.body.length);
          else res.end(r.body);
        });
      }
    } else if (!ctx.aborted && this.headSent) {
      ctx.aborted = true;
      // A chunked answer ends here; a sized one that came up short is cut (the client sees a truncated body).
      res.cork(() => {
        if (!this.headWritten) {
          this.headWritten = true;
          this.writeOutHead();
        }
        if (this.contentLength < 0) res.end();
        else res.close();
      });
    }
    if (this.capture) plan.onStored(this.status, this.outHeaders, Buffer.concat(this.capture), this.originHeaders);
    this.x.finish();
  }

  onError(err: Error): void {
    const x = this.x;
    const { ctx, res, plan } = x;
    this.z?.destroy();
    if (this.answered) {
      x.finish();
      return;
    }
    if (this.replaced) {
      // The origin's body was to be dropped for an error page: the page is the answer, whatever became of the body.
      this.onComplete();
      return;
    }
    if (this.headSent && !ctx.aborted) {
      if (this.headWritten) {
        // Part of the answer is already with the client: cutting the connection is the only honest end.
        ctx.aborted = true;
        res.close();
        x.finish();
        return;
      }
      // The origin's head came but nothing reached the client yet (the head goes out with the first chunk): a 502,
      // never a reset. An origin that answers a POST and closes without reading its body (Python's http.server) is
      // the common case: the request body's write fails with EPIPE after the head was parsed. Never retried: the
      // request reached the origin.
      if (!plan.onFailure(err, false)) plan.sendError(isTimeout(err) ? 504 : 502);
      x.finish();
      return;
    }
    if (ctx.aborted) {
      x.finish();
      return;
    }
    if (isAddressRefused(err)) {
      // Never tried over plain HTTP (same address) nor answered from a stale entry; a pool may fail over.
      const next = x.body === null ? plan.retarget() : undefined;
      if (next) {
        x.target = next;
        x.scheme = x.pools.effectiveScheme(next);
        x.start();
        return;
      }
      plan.sendError(502, err);
      x.finish();
      return;
    }
    if (isCertificateFailure(err)) {
      plan.sendError(526, err);
      x.finish();
      return;
    }
    const connectFailure = isConnectFailure(err);
    if (connectFailure && x.body === null) {
      if (x.target.scheme === 'auto' && x.scheme === 'https') {
        x.pools.markAutoHttp(x.target);
        x.scheme = 'http';
        x.start();
        return;
      }
      const next = plan.retarget();
      if (next) {
        x.target = next;
        x.scheme = x.pools.effectiveScheme(next);
        x.start();
        return;
      }
    }
    if (!plan.onFailure(err, connectFailure)) plan.sendError(isTimeout(err) ? 504 : 502);
    x.finish();
  }
}

/** `requestHeaders`: the client's headers as the origin is to get them (request header rules applied). */
export function forward(
  res: HttpResponse,
  ctx: RequestContext,
  pools: UpstreamPools,
  target: OriginTarget,
  requestHeaders: [string, string][],
  body: Readable | null,
  plan: ResponsePlan,
  h2: boolean,
): void {
  // The native front relays a bodiless request to a plain-HTTP origin whose answer nothing reads or edits but response
  // header rules; everything else (HTTPS, Auto, a body, cache fills, optimize, error pages, pools) runs here.
  if (
    body === null &&
    target.scheme === 'http' &&
    plan.nativeForwardable === true &&
    forwardsAsIs(plan) &&
    (res as Partial<NativeForwarder>).forwardNative !== undefined
  ) {
    const encoded = encodeUpstream(ctx, target, requestHeaders, false);
    if (encoded.invalid === null && (res as unknown as NativeForwarder).forwardNative(ctx, target, encoded.head, plan))
      return;
  }
  new Exchange(res, ctx, pools, target, requestHeaders, body, plan, h2).start();
}
