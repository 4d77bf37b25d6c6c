// The edge's plain-HTTP listener on the native front (EDGE_FRONT=native; edge-node/native/http-front): the module
// accepts and parses in C and hands a batch of requests per call; the phases run here as they do for uWS, on a
// NativeResponse (the part of uWS's HttpResponse the phases write with). What a plain proxied request needs after
// the phases (an IPv4/IPv6 literal origin over HTTP the address policy allows, nothing reading or rewriting the
// answer but response header rules and the cache status line) is forwarded by the module, the answer relayed in C; its completion record comes back with
// a later batch and is logged as any other request. Everything else (a cache hit, a refusal, a redirect, an origin by
// name, HTTPS origins, cache fills, optimize, error pages, origin pools) runs the existing path and its answer goes out
// whole through the module (see NativeResponse). HTTPS stays on uWS (server.ts).
import { isIP } from 'node:net';
import { performance } from 'node:perf_hooks';
import type { HttpResponse } from 'uWebSockets.js';
import { componentLogger } from '@platform/shared';
import type { AddressPolicy } from '@platform/shared/address-policy';
import { normalisePath, parsePeerAddress, type PeerAddress } from '@platform/shared/match';
import {
  D,
  DONE_FIELDS,
  ERRORS,
  FIELDS,
  FLAG,
  M,
  listenFront,
  loadHttpFront,
  type Front,
} from '../../native/http-front/front.js';
import { RequestContext } from '../context.js';
import type { EdgeErrorCode } from '../errors.js';
import { runPhases, type EdgeState } from '../phases.js';
import type { NativeForwarder, ResponsePlan } from '../proxy/forward.js';
import { OriginError, OriginProtocolError } from '../proxy/origin-client/errors.js';
import type { OriginTarget } from '../proxy/origin.js';
import { setHandlerResponse } from '../proxy/respond.js';
import { hostOf, requestFailed } from '../server.js';
import { isConnectFailure, isTimeout } from '../proxy/upstream.js';
import type { HeaderOp } from '../rules/header.js';

const log = componentLogger('edge-node.front');

/** Whether EDGE_FRONT=native can serve here: the module built. */
export function nativeFrontAvailable(): boolean {
  return loadHttpFront() !== null;
}

/** Bytes an answer made in JavaScript may have on this front (the module keeps it unsent up to 64 MiB). */
const MAX_ANSWER = 64 * 1024 * 1024;
/** Keep-alive connections per origin the module keeps open (a bounded queue of requests waits beyond it). */
const ORIGIN_POOL = 256;
/** How often forwarded requests are checked against their origin's timeout (the record's timeout, for the head). */
const SWEEP_MS = 250;

/**
 * Buffer's own latin1 methods (on Buffer.prototype, undocumented; undici reads with them too): toString and write with
 * an encoding name first check their arguments and look the encoding up, a third of their time for the short strings of
 * a request (profiled under wrk). Bounds are the caller's: every offset here comes from the module's parse of rx or
 * from txAt and a size checked against tx.
 */
interface Latin1Buffer {
  latin1Slice(start: number, end: number): string;
  latin1Write(text: string, offset: number, length: number): number;
}
function latin1(b: Buffer, start: number, end: number): string {
  return (b as unknown as Latin1Buffer).latin1Slice(start, end);
}
function writeLatin1(b: Buffer, text: string, offset: number): number {
  return (b as unknown as Latin1Buffer).latin1Write(text, offset, b.length - offset);
}

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'OPTIONS', 'PATCH'];
/** The method as a shared literal when it is a common one (as server.ts methodOf). */
function methodAt(rx: Buffer, off: number, len: number): string {
  for (let k = 0; k < METHODS.length; k++) {
    const m = METHODS[k];
    if (m.length !== len) continue;
    let same = true;
    for (let i = 0; same && i < len; i++) same = rx[off + i] === m.charCodeAt(i);
    if (same) return m;
  }
  return latin1(rx, off, off + len);
}

/** PeerAddress objects of IPv4 clients by a hash of the address (direct-mapped, as server.ts peerOf). */
const PEERS: (PeerAddress | undefined)[] = new Array<PeerAddress | undefined>(4096).fill(undefined);
function peerV4(v4: number): PeerAddress {
  const slot = (v4 ^ (v4 >>> 12) ^ (v4 >>> 24)) & 4095;
  const known = PEERS[slot];
  if (known !== undefined && known.v4 === v4) return known;
  const peer: PeerAddress = {
    v4,
    v6: undefined,
    text: `${v4 >>> 24}.${(v4 >>> 16) & 255}.${(v4 >>> 8) & 255}.${v4 & 255}`,
  };
  PEERS[slot] = peer;
  return peer;
}

/** SP or HTAB: the only whitespace around a field value (RFC 9110 §5.5, OWS), kept out of it. */
function isOws(c: number): boolean {
  return c === 0x20 || c === 0x09;
}

/**
 * Request header names most clients send, by length: a name found here (ASCII case-insensitively, by its bytes) is the
 * shared lower-case literal, no slice or toLowerCase per header. Lower-case letters and `-` only (see knownName).
 */
const KNOWN_NAMES: string[][] = [];
for (const name of [
  'host',
  'user-agent',
  'accept',
  'accept-encoding',
  'accept-language',
  'connection',
  'cookie',
  'referer',
  'origin',
  'cache-control',
  'pragma',
  'authorization',
  'content-type',
  'content-length',
  'if-none-match',
  'if-modified-since',
  'upgrade-insecure-requests',
  'sec-fetch-site',
  'sec-fetch-mode',
  'sec-fetch-dest',
  'sec-fetch-user',
  'sec-ch-ua',
  'sec-ch-ua-mobile',
  'sec-ch-ua-platform',
  'priority',
  'dnt',
  'te',
  'x-requested-with',
  'x-forwarded-for',
]) {
  while (KNOWN_NAMES.length <= name.length) KNOWN_NAMES.push([]);
  KNOWN_NAMES[name.length].push(name);
}

/**
 * The known name rx[start, end) spells, ignoring ASCII case, or undefined. `c | 0x20` equals a lower-case letter only
 * for it and its upper-case form, and equals `-` only for `-` and CR (never in a name the module parsed).
 */
function knownName(rx: Buffer, start: number, end: number): string | undefined {
  const len = end - start;
  if (len >= KNOWN_NAMES.length) return undefined;
  const names = KNOWN_NAMES[len];
  for (let k = 0; k < names.length; k++) {
    const name = names[k];
    let i = 0;
    while (i < len && (rx[start + i] | 0x20) === name.charCodeAt(i)) i++;
    if (i === len) return name;
  }
  return undefined;
}

/** The Host line's value headerList read (latin1, the head being ASCII), undefined when it read none. */
let listHost: string | undefined;

/**
 * Request header lines of head rx[off, off + len) as uWS's forEach gives them: names lower case, values trimmed. The
 * module's parse (http_front.c) has checked every line: a token name, `:`, a value with no control character but
 * HTAB, CRLF. Found by a scan of the bytes; the values read as latin1 from one string of the head when it is all ASCII
 * (a byte's index is then its character's), each as UTF-8 otherwise (uWS gives header values as UTF-8 strings; a
 * value's bytes start and end at ASCII ones, so decoding it alone gives what decoding the head gives there).
 */
function headerList(rx: Buffer, off: number, len: number): [string, string][] {
  listHost = undefined;
  const end = off + len;
  let ascii = true;
  for (let i = off; ascii && i < end; i++) ascii = rx[i] < 0x80;
  const text = ascii ? latin1(rx, off, end) : '';
  const out: [string, string][] = [];
  let at = off;
  while (at < end && rx[at] !== 0x0a) at++;
  at++;
  while (at < end && rx[at] !== 0x0d) {
    let colon = at;
    while (colon < end && rx[colon] !== 0x3a) colon++;
    let eol = colon;
    while (eol < end && rx[eol] !== 0x0d) eol++;
    // Trimmed by index (one slice per value, no String.trim copy): SP and HTAB only, as RFC 9110 says.
    let start = colon + 1;
    let stop = eol;
    while (start < stop && isOws(rx[start])) start++;
    while (stop > start && isOws(rx[stop - 1])) stop--;
    const name = knownName(rx, at, colon) ?? latin1(rx, at, colon).toLowerCase();
    const value = ascii ? text.slice(start - off, stop - off) : rx.toString('utf8', start, stop);
    // The module's Host value is this line's (trimmed alike; a second Host line is refused): read once.
    if (ascii && name === 'host') listHost = value;
    out.push([name, value]);
    at = eol + 2;
  }
  return out;
}

/** The Date line of answers made here (uWS writes one too), made again when the second changes. */
let dateSecond = 0;
let dateLine = '';
function dateHeader(): string {
  const now = Date.now();
  const second = Math.floor(now / 1000);
  if (second !== dateSecond) {
    dateSecond = second;
    dateLine = `date: ${new Date(now).toUTCString()}\r\n`;
  }
  return dateLine;
}

/**
 * What the module does to a relayed answer's head for the response header rules and the cache status: the names of the
 * origin's fields to drop (`set` and `remove` ops, each followed by LF; dropLen bytes), then the lines to add
 * (`name: value` CRLF; the x-cache-status line and `set`/`add` values, as applyHeaderOps leaves them), UTF-8 as uWS
 * writes text. Made once per cache status for no ops and for one op (the common cases).
 */
interface HeadEdit {
  bytes: Buffer;
  dropLen: number;
}
const NO_OP_EDITS = new Map<string, HeadEdit>();
const ONE_OP_EDITS = new WeakMap<HeaderOp, Map<string, HeadEdit>>();
function headEdit(cacheStatus: string, ops: readonly HeaderOp[] | null): HeadEdit {
  const n = ops === null ? 0 : ops.length;
  const memo = n === 0 ? NO_OP_EDITS : n === 1 ? ONE_OP_EDITS.get(ops![0]) : undefined;
  const known = memo?.get(cacheStatus);
  if (known !== undefined) return known;
  const added: [string, string][] = cacheStatus === '' ? [] : [['x-cache-status', cacheStatus]];
  const drop = new Set<string>();
  for (let k = 0; k < n; k++) {
    const o = ops![k];
    if (o.op !== 'add') {
      drop.add(o.name);
      for (let i = added.length - 1; i >= 0; i--) if (added[i][0] === o.name) added.splice(i, 1);
    }
    if (o.op !== 'remove') added.push([o.name, o.value]);
  }
  let names = '';
  for (const name of drop) names += `${name}\n`;
  let lines = '';
  for (const [name, value] of added) lines += `${name}: ${value}\r\n`;
  const made = { bytes: Buffer.from(names + lines), dropLen: Buffer.byteLength(names) };
  if (n === 0) NO_OP_EDITS.set(cacheStatus, made);
  else if (n === 1) {
    let m = ONE_OP_EDITS.get(ops![0]);
    if (m === undefined) ONE_OP_EDITS.set(ops![0], (m = new Map()));
    m.set(cacheStatus, made);
  }
  return made;
}

/** The module's failure codes as the errors the existing path reads (isConnectFailure, isTimeout, sendError). */
function errorOf(code: string): Error {
  switch (code) {
    case 'origin-connect':
      return Object.assign(new Error(`connect failed (${code})`), { code: 'ECONNREFUSED' });
    case 'origin-timeout':
      return new OriginError('EDGE_ORIGIN_HEADERS_TIMEOUT', 'no response head within the timeout');
    case 'origin-closed':
      return new OriginError('EDGE_ORIGIN_CLOSED', 'the origin closed the connection before answering');
    case 'origin-reset':
    case 'origin-write':
      return Object.assign(new Error(`the origin reset the connection (${code})`), { code: 'ECONNRESET' });
    case 'origin-head':
    case 'origin-interim':
    case 'origin-framing':
    case 'origin-chunked':
      return new OriginProtocolError(code);
    default:
      return new Error(`the request could not be forwarded (${code})`);
  }
}

/**
 * The part of uWS's HttpResponse the phases write with, for a request of the native front: the answer is collected
 * whole (status block, header lines, body) and handed to the module when it ends, in the batch's answer buffer when
 * it ends during the batch's call, else with respond(). Writes never refuse (nothing streams through JavaScript on
 * this front): an answer over MAX_ANSWER bytes is replaced by a 502 (x-edge-error EDGE_ERR_INTERNAL).
 */
class NativeResponse implements NativeForwarder {
  private status: string | Buffer = '';
  private lines = '';
  /** Made at the first chunk: most answers made here end with one Buffer or none. */
  private body: Buffer[] | null = null;
  private size = 0;
  private done = false;
  private tooLarge = false;
  /**
   * While the module forwards the request (until its completion record): what the record completes. Kept here, the
   * response found by its connection slot, rather than in a record per request in a Map (whose churn was GC time).
   */
  ctx: RequestContext | null = null;
  plan: ResponsePlan | null = null;
  /** performance.now() past which its answer's head is late (the origin's timeout). */
  deadline = 0;
  cancelled = false;

  constructor(
    private readonly server: NativeServer,
    readonly slot: number,
    readonly gen: number,
    /** The request's index in the batch while its call runs, -1 after. */
    public at: number,
    /** The client's HTTP version and keep-alive (FLAG.*). */
    readonly flags: number,
  ) {}

  writeStatus(block: string | Buffer): this {
    this.status = block;
    return this;
  }
  writeHeader(name: string, value: string): this {
    this.lines += `${name}: ${value}\r\n`;
    return this;
  }
  write(chunk: string | ArrayBuffer | Uint8Array): boolean {
    this.add(chunk);
    return true;
  }
  tryEnd(chunk: string | ArrayBuffer | Uint8Array, total: number): [boolean, boolean] {
    this.add(chunk);
    const ended = this.size >= total;
    if (ended) this.finish(this.size, false, true);
    return [true, ended];
  }
  end(body?: string | ArrayBuffer | Uint8Array, close?: boolean): this {
    // The answer is written before end returns: a Buffer given here is used as it is (no copy).
    if (body !== undefined && Buffer.isBuffer(body) && !this.done && this.size + body.length <= MAX_ANSWER) {
      if (body.length > 0) (this.body ??= []).push(body);
      this.size += body.length;
    } else if (body !== undefined) this.add(body);
    this.finish(this.size, close === true, true);
    return this;
  }
  endWithoutBody(length?: number, close?: boolean): this {
    this.finish(length ?? -1, close === true, false);
    return this;
  }
  getWriteOffset(): number {
    return this.size;
  }
  onWritable(): this {
    return this;
  }
  onAborted(): this {
    return this;
  }
  onData(): this {
    return this;
  }
  cork(cb: () => void): this {
    cb();
    return this;
  }
  pause(): this {
    return this;
  }
  resume(): this {
    return this;
  }
  close(): this {
    if (this.done) return this;
    this.done = true;
    this.server.closeConnection(this);
    return this;
  }

  private add(chunk: string | ArrayBuffer | Uint8Array): void {
    if (this.done) return;
    const b =
      typeof chunk === 'string'
        ? Buffer.from(chunk)
        : chunk instanceof ArrayBuffer
          ? Buffer.from(new Uint8Array(chunk).slice())
          : Buffer.from(chunk.buffer.slice(chunk.byteOffset, chunk.byteOffset + chunk.byteLength));
    if (b.length === 0) return;
    this.size += b.length;
    if (this.size > MAX_ANSWER) this.tooLarge = true;
    else (this.body ??= []).push(b);
  }

  /** The answer's bytes: `length` >= 0 is its Content-Length; `withBody`: the collected body follows. */
  private finish(length: number, close: boolean, withBody: boolean): void {
    if (this.done) return;
    this.done = true;
    if (this.tooLarge) {
      const text = 'answer too large for this front\n';
      this.status = '502 Bad Gateway';
      this.lines = `content-type: text/plain; charset=utf-8\r\nx-edge-error: ${'EDGE_ERR_INTERNAL' satisfies EdgeErrorCode}\r\n`;
      this.body = [Buffer.from(text)];
      length = text.length;
      withBody = true;
    }
    const keepAlive = (this.flags & FLAG.KEEP_ALIVE) !== 0 && !close;
    const connection = !keepAlive
      ? 'connection: close\r\n'
      : (this.flags & FLAG.HTTP10) !== 0
        ? 'connection: keep-alive\r\n'
        : '';
    const tail = `\r\n${this.lines}${dateHeader()}${length >= 0 ? `content-length: ${length}\r\n` : ''}${connection}\r\n`;
    this.server.answer(this, this.status, tail, withBody && this.body !== null ? this.body : NO_BODY, !keepAlive);
    this.body = null;
  }

  forwardNative(ctx: RequestContext, target: OriginTarget, head: string, plan: ResponsePlan): boolean {
    return this.server.forward(this, ctx, target, head, plan);
  }
}
const NO_BODY: Buffer[] = [];

/** The answer's bytes in one Buffer: `HTTP/1.1 `, the status block (UTF-8, as uWS writes text), the tail, the body. */
function answerBytes(status: string | Buffer, tail: string, body: readonly Buffer[]): Buffer {
  const parts: Buffer[] = [HTTP11, typeof status === 'string' ? Buffer.from(status) : status, Buffer.from(tail)];
  for (const b of body) parts.push(b);
  return Buffer.concat(parts);
}
const HTTP11 = Buffer.from('HTTP/1.1 ');

export interface NativeServer {
  readonly port: number;
  /** Answers the module relayed whole from an origin (completion records without an error). */
  readonly relayed: number;
  /** An answer made in JavaScript: `HTTP/1.1 `, the status block and header lines (writeStatus), `tail`, the body. */
  answer(res: NativeResponse, status: string | Buffer, tail: string, body: readonly Buffer[], close: boolean): void;
  closeConnection(res: NativeResponse): void;
  forward(res: NativeResponse, ctx: RequestContext, target: OriginTarget, head: string, plan: ResponsePlan): boolean;
  close(): void;
}

/** Listens on host:port with the native front; requests run the phases of `state`. */
export function startNativeFront(
  state: EdgeState,
  opts: { host: string; port: number; policy: AddressPolicy | undefined; batch?: number },
): NativeServer {
  /** Where the batch's answers and forwarded heads go in tx, during a call. */
  let txAt = 0;
  let inBatch = false;
  /** Forwarded requests by connection slot (one at a time per connection); undefined where none is. */
  const forwarded: (NativeResponse | undefined)[] = [];
  /** performance.now() at the start of the batch's call: the requests' start and forwarding time. */
  let batchNow = 0;
  let relayed = 0;
  /** The module's origin index of each target (-1: not forwarded by the module), and of each address and port. */
  const originOfTarget = new WeakMap<OriginTarget, number>();
  const originIndex = new Map<string, number>();

  const originFor = (target: OriginTarget): number => {
    let i = originOfTarget.get(target);
    if (i !== undefined) return i;
    i = -1;
    if (
      target.scheme === 'http' &&
      isIP(target.address) !== 0 &&
      opts.policy?.refusal(target.address, target.port) === undefined
    ) {
      const key = `${target.address}|${target.port}`;
      const known = originIndex.get(key);
      if (known !== undefined) i = known;
      else {
        try {
          i = front.addOrigin(target.address, target.port, ORIGIN_POOL);
          originIndex.set(key, i);
        } catch (err) {
          log.warn(
            { err, address: target.address },
            'origin not added to the native front: the existing client serves it',
          );
        }
      }
    }
    originOfTarget.set(target, i);
    return i;
  };

  /** A completion record: the request is logged, or (handed back) answered as the existing path answers a failure. */
  const completed = (r: number): void => {
    const done = front.done;
    const slot = done[r + D.SLOT];
    const f = forwarded[slot];
    if (f === undefined || f.gen !== done[r + D.GEN]) return;
    forwarded[slot] = undefined;
    const ctx = f.ctx!;
    const plan = f.plan!;
    f.ctx = null;
    f.plan = null;
    const headUs = done[r + D.HEAD_US];
    if (headUs >= 0) ctx.upstreamMs = headUs / 1000;
    const code = ERRORS[done[r + D.ERROR]] ?? 'forward-invalid';
    const bytes = done[r + D.BYTES_LO] + done[r + D.BYTES_HI] * 2 ** 31;
    ctx.bytes = bytes;
    ctx.originBytes = bytes;
    if (code === '') {
      relayed++;
      ctx.status = done[r + D.STATUS];
      ctx.aborted = true;
    } else if (done[r + D.WAITING] === 1) {
      // Nothing reached the client: answered as the existing path answers the same failure (stale, error pages).
      const err = errorOf(code);
      if (!plan.onFailure(err, isConnectFailure(err))) plan.sendError(isTimeout(err) ? 504 : 502);
    } else {
      // The client went away, or the answer was cut after its head went out (the connection closed).
      ctx.status = headUs >= 0 ? done[r + D.STATUS] : 499;
      ctx.aborted = true;
    }
    plan.done();
  };

  const onBatch = (n: number, d: number): void => {
    inBatch = true;
    txAt = 0;
    // One clock read per batch: the requests of a batch arrived together (a batch is one pass of the module's loop).
    batchNow = performance.now();
    try {
      for (let k = 0; k < d; k++) completed(k * DONE_FIELDS);
      const { rx, meta } = front;
      for (let i = 0; i < n; i++) {
        const m = i * FIELDS;
        const res = new NativeResponse(server, meta[m + M.SLOT], meta[m + M.GEN], i, meta[m + M.FLAGS]);
        const method = methodAt(rx, meta[m + M.METHOD_OFF], meta[m + M.METHOD_LEN]);
        const targetOff = meta[m + M.TARGET_OFF];
        const pathLen = meta[m + M.PATH_LEN];
        const targetLen = meta[m + M.TARGET_LEN];
        const url = latin1(rx, targetOff, targetOff + pathLen);
        const flags = meta[m + M.FLAGS];
        const headers = headerList(rx, meta[m + M.HEAD_OFF], meta[m + M.HEAD_LEN]);
        const hostOff = meta[m + M.HOST_OFF];
        const ctx = new RequestContext({
          method,
          host: hostOf(listHost ?? latin1(rx, hostOff, hostOff + meta[m + M.HOST_LEN])),
          path: normalisePath(url),
          rawPath: url,
          query: pathLen < targetLen ? latin1(rx, targetOff + pathLen + 1, targetOff + targetLen) : '',
          headers,
          peer: (flags & FLAG.V6) !== 0 ? parsePeerAddress('') : peerV4(meta[m + M.PEER] >>> 0),
          scheme: 'http',
          startedAt: batchNow,
        });
        let pending: Promise<void> | undefined;
        setHandlerResponse(res as unknown as HttpResponse);
        try {
          pending = runPhases(res as unknown as HttpResponse, ctx, state, null);
        } catch (err) {
          failed(res, ctx, err);
        } finally {
          setHandlerResponse(null);
        }
        res.at = -1;
        pending?.catch((err) => failed(res, ctx, err));
      }
    } finally {
      inBatch = false;
    }
  };

  const failed = (res: NativeResponse, ctx: RequestContext, err: unknown): void =>
    requestFailed(res as unknown as HttpResponse, ctx, state, err);

  const server: NativeServer = {
    get port() {
      return front.port;
    },
    get relayed() {
      return relayed;
    },
    answer(res, status, tail, body, close) {
      if (res.at >= 0 && inBatch && !close) {
        // Written straight into the batch's answer buffer when it surely fits (a string of n characters is at most 3n
        // bytes of UTF-8): no Buffer made per answer.
        let size = 9 + (typeof status === 'string' ? status.length * 3 : status.length) + tail.length * 3;
        for (const b of body) size += b.length;
        const tx = front.tx;
        if (txAt + size <= tx.length) {
          const start = txAt;
          let at = txAt + writeLatin1(tx, 'HTTP/1.1 ', txAt);
          at += typeof status === 'string' ? tx.write(status, at) : status.copy(tx, at);
          at += tx.write(tail, at);
          for (const b of body) {
            tx.set(b, at);
            at += b.length;
          }
          const m = res.at * FIELDS;
          front.meta[m + M.TX_OFF] = start;
          front.meta[m + M.TX_LEN] = at - start;
          txAt = at;
          return;
        }
      }
      front.respond(res.slot, res.gen, answerBytes(status, tail, body), close);
    },
    closeConnection(res) {
      if (res.at >= 0 && inBatch) front.meta[res.at * FIELDS + M.TX_LEN] = -1;
      else front.respond(res.slot, res.gen, EMPTY);
    },
    forward(res, ctx, target, head, plan) {
      const origin = originFor(target);
      if (origin < 0) return false;
      const edit = headEdit(ctx.cacheStatus, plan.ops);
      const add = edit.bytes;
      if (res.at >= 0 && inBatch && txAt + head.length + add.length <= front.tx.length) {
        const m = res.at * FIELDS;
        const len = writeLatin1(front.tx, head, txAt);
        front.tx.set(add, txAt + len);
        front.meta[m + M.TX_OFF] = txAt;
        front.meta[m + M.TX_LEN] = len;
        front.meta[m + M.ADD_LEN] = add.length;
        front.meta[m + M.DROP_LEN] = edit.dropLen;
        front.meta[m + M.ORIGIN] = origin;
        txAt += len + add.length;
      } else if (!front.forward(res.slot, res.gen, origin, Buffer.from(head, 'latin1'), add, edit.dropLen)) {
        return false;
      }
      res.ctx = ctx;
      res.plan = plan;
      res.deadline = (inBatch ? batchNow : performance.now()) + target.timeoutSec * 1000;
      res.cancelled = false;
      // Grown one by one (the module hands out the lowest free slot first): the array stays dense, never a dictionary.
      while (forwarded.length <= res.slot) forwarded.push(undefined);
      forwarded[res.slot] = res;
      return true;
    },
    close() {
      clearInterval(sweep);
      front.close();
    },
  };

  // Called back only after listenFront returns (the module calls JavaScript from the loop): `front` is set by then.
  const front: Front = listenFront(
    {
      host: opts.host,
      port: opts.port,
      reusePort: true,
      batch: opts.batch ?? 64,
      records: true,
      failToJs: true,
    },
    onBatch,
  );
  // An origin that sends no answer head within its timeout: the module drops the request (origin-timeout), handed
  // back and answered 504. The body's pace is not timed on this path.
  const sweep = setInterval(() => {
    const now = performance.now();
    for (let slot = 0; slot < forwarded.length; slot++) {
      const f = forwarded[slot];
      if (f !== undefined && !f.cancelled && f.deadline <= now) {
        f.cancelled = true;
        front.cancel(slot, f.gen);
      }
    }
  }, SWEEP_MS);
  sweep.unref();
  return server;
}

const EMPTY = Buffer.alloc(0);
