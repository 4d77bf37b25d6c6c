// The edge's HTTP/1.1 origin client for plain-HTTP origins: keep-alive pools per origin (bounded connections and idle
// connections, at most `maxPools` pools, the least recently used closed beyond it), every connection through the
// address guard (guarded-connect.ts), one request per connection at a time.
//
// What a request is never written to: a connection the origin closed (FIN seen while idle, idle timeout, the origin's
// Keep-Alive timeout less a second), or one it announced it will close (Connection: close, HTTP/1.0, close-delimited
// body). What remains is the race of an origin closing an idle connection just as a request goes out: a request
// without a body and of an idempotent method is then sent once more on a new connection; any other request is written
// only to a connection used within the last second (or a new one), and fails with 502 rather than being replayed.
import type { Readable } from 'node:stream';
import type { AddressPolicy } from '@platform/shared/address-policy';
import { guardedSocket } from '../guarded-connect.js';
import { DEFAULT_IDLE_MS, OriginConnection, type ConnectionOwner } from './connection.js';
import { encodeRequest, OriginRequest, type EncodedRequest, type OriginHandler } from './request.js';

export interface OriginClientOptions {
  policy: AddressPolicy;
  /** Most pools (origins) kept; the least recently used is closed beyond it. */
  maxPools: number;
  /** Most connections per origin, busy or idle; requests beyond wait in a queue. */
  maxConnections?: number;
  /** Most idle connections kept per origin. */
  maxIdle?: number;
  connectTimeoutMs?: number;
}

/** A request that could not be replayed goes only on a connection idle less than this long. */
const UNREPLAYABLE_MAX_IDLE_MS = 1000;

class OriginPool implements ConnectionOwner {
  /** Idle connections, most recently used last. */
  private readonly idle: OriginConnection[] = [];
  /** Connections carrying a request or being opened. */
  private busy = 0;
  private readonly queue: OriginRequest[] = [];
  private closed = false;

  constructor(
    private readonly client: OriginClient,
    readonly host: string,
    readonly port: number,
    readonly tag: string,
  ) {}

  get connections(): number {
    return this.busy + this.idle.length;
  }

  dispatch(req: OriginRequest): void {
    const now = Date.now();
    while (this.idle.length > 0) {
      const conn = this.idle.pop()!;
      if (!conn.usable) {
        conn.destroy();
        continue;
      }
      if (!req.retriable && now - conn.idleSince > UNREPLAYABLE_MAX_IDLE_MS) {
        conn.destroy(); // may have been closed by the origin a moment ago: a new connection is safer
        continue;
      }
      this.busy++;
      conn.start(req);
      return;
    }
    if (this.busy < this.client.maxConnections) this.open(req);
    else this.queue.push(req);
  }

  /** Opens a new connection for `req`. */
  private open(req: OriginRequest): void {
    this.busy++;
    req.connecting();
    guardedSocket(this.client.policy, this.host, this.port, this.client.connectTimeoutMs, (err, socket) => {
      if (err !== null || socket === null) {
        this.busy--;
        if (!req.done) {
          req.finish();
          req.handler.onError(err ?? new Error('no connection'));
        }
        this.next();
        return;
      }
      const conn = new OriginConnection(socket, this);
      if (req.done) {
        // Aborted while connecting: the connection serves the next request.
        this.release(conn, true, DEFAULT_IDLE_MS);
        return;
      }
      conn.start(req);
    });
  }

  /** A connection became free for another request. */
  release(conn: OriginConnection, reusable: boolean, idleMs: number): void {
    this.busy--;
    if (!reusable || this.closed || !conn.usable) {
      conn.destroy();
      this.next();
      return;
    }
    const req = this.dequeue();
    if (req !== undefined) {
      this.busy++;
      conn.start(req);
      return;
    }
    if (this.idle.length >= this.client.maxIdle) {
      conn.destroy();
      return;
    }
    conn.idle(idleMs);
    this.idle.push(conn);
  }

  forget(conn: OriginConnection): void {
    const i = this.idle.indexOf(conn);
    if (i >= 0) this.idle.splice(i, 1);
  }

  retry(req: OriginRequest): void {
    if (this.busy < this.client.maxConnections) this.open(req);
    else this.queue.unshift(req);
  }

  private dequeue(): OriginRequest | undefined {
    while (this.queue.length > 0) {
      const req = this.queue.shift()!;
      if (!req.done) return req;
    }
    return undefined;
  }

  /** A connection went away: a waiting request gets a new one. */
  private next(): void {
    const req = this.dequeue();
    if (req !== undefined) this.dispatch(req);
  }

  /** Closes the idle connections; busy ones close when their answer is done. */
  close(): void {
    this.closed = true;
    for (const conn of this.idle.splice(0)) conn.destroy();
  }
}

export class OriginClient {
  private readonly pools = new Map<string, OriginPool>();
  /** The pool used last (the last in `pools`), or null. */
  private last: OriginPool | null = null;
  /** Pools closed to stay within maxPools. */
  evicted = 0;
  readonly policy: AddressPolicy;
  readonly maxConnections: number;
  readonly maxIdle: number;
  readonly connectTimeoutMs: number;

  constructor(private readonly opts: OriginClientOptions) {
    this.policy = opts.policy;
    this.maxConnections = opts.maxConnections ?? 256;
    this.maxIdle = opts.maxIdle ?? 128;
    this.connectTimeoutMs = opts.connectTimeoutMs ?? 10_000;
  }

  get size(): number {
    return this.pools.size;
  }

  /**
   * Sends a request to host:port (an address or a name, resolved and checked on every new connection). `tag` keeps
   * apart pools to the same origin (the proxy keys them by the Host it presents, as its undici pools). `headers` is a
   * flat [name, value, …] list without framing headers but Content-Length; `body` is null or the stream of the body.
   */
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

  /** Sends a request already encoded (encodeRequest, encodeProxied): as dispatch. */
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
    const req = new OriginRequest(method, encoded, body, handler, headersTimeoutMs, bodyTimeoutMs);
    req.announce();
    if (req.invalid !== null) {
      const err = req.invalid;
      req.finish();
      queueMicrotask(() => handler.onError(err));
      return;
    }
    this.pool(host, port, tag).dispatch(req);
  }

  private pool(host: string, port: number, tag: string): OriginPool {
    // The pool used last is last in the LRU order already: found again without a key or a move.
    const last = this.last;
    if (last !== null && last.port === port && last.host === host && last.tag === tag) return last;
    const key = `${host}|${port}|${tag}`;
    let p = this.pools.get(key);
    if (p !== undefined) {
      // Map order is the LRU order: move a used pool to the end.
      this.pools.delete(key);
      this.pools.set(key, p);
      this.last = p;
      return p;
    }
    p = new OriginPool(this, host, port, tag);
    this.pools.set(key, p);
    this.last = p;
    if (this.pools.size > this.opts.maxPools) {
      const [oldKey, oldest] = this.pools.entries().next().value as [string, OriginPool];
      this.pools.delete(oldKey);
      this.evicted++;
      oldest.close();
      if (this.last === oldest) this.last = null;
    }
    return p;
  }

  /** Connections (busy and idle) to host:port (pools tagged `tag`) now. */
  connections(host: string, port: number, tag = ''): number {
    return this.pools.get(`${host}|${port}|${tag}`)?.connections ?? 0;
  }

  close(): void {
    for (const p of this.pools.values()) p.close();
    this.pools.clear();
    this.last = null;
  }
}
