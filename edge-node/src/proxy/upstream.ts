// Keep-alive connection pools to origins and a streaming dispatch with no body buffering. Plain-HTTP origins (the hot
// path) go through the edge's own HTTP/1.1 client (origin-client/); HTTPS origins through undici Pools, where a
// domain's origin_protocol decides whether TLS connections offer h2 in ALPN (see offersH2). Pools are keyed by the
// Host they present (SNI), which a `*` record lets any client choose: at most `maxPools` of each client live, the
// least recently used closed.
import { isIP } from 'node:net';
import type { Readable } from 'node:stream';
import { rootCertificates } from 'node:tls';
import { Pool, type Dispatcher } from 'undici';
import { AddressRefusedError, type AddressPolicy } from '@platform/shared/address-policy';
import { guardedConnector } from './guarded-connect.js';
import { OriginClient } from './origin-client/client.js';
import { NativeOriginClient } from './origin-client/native.js';
import type { EncodedRequest, OriginHandler } from './origin-client/request.js';
import type { OriginTarget } from './origin.js';

export interface UpstreamOptions {
  /** Verify certificates of origins with an explicit https scheme (Auto never verifies: it is the opt-out). */
  tlsVerify: boolean;
  /** Extra trusted certificate authorities for origins (PEM), besides the system's. */
  extraCa?: string;
  /** Which origin addresses may be connected to (checked on every new connection, after resolution). */
  policy: AddressPolicy;
  /** Most pools kept open (EDGE_ORIGIN_POOLS_MAX); the least recently used is closed beyond it. */
  maxPools: number;
  /** Plain-HTTP origins through the native client (EDGE_ORIGIN_CLIENT=native) rather than the TypeScript one. */
  nativeClient?: boolean;
}

export class UpstreamPools {
  private readonly pools = new Map<string, Pool>();
  /** Origins that refused HTTPS under scheme Auto: plain HTTP until the time stored. */
  private readonly autoHttpUntil = new Map<string, number>();
  /** undici pools closed to stay within maxPools. */
  private undiciEvicted = 0;
  /** Plain-HTTP origins. */
  private readonly http: OriginClient | NativeOriginClient;

  constructor(private readonly opts: UpstreamOptions) {
    const o = { policy: opts.policy, maxPools: opts.maxPools };
    this.http = opts.nativeClient ? new NativeOriginClient(o) : new OriginClient(o);
  }

  /** Pools closed to stay within maxPools (a metric and the tests read it). */
  get evicted(): number {
    return this.undiciEvicted + this.http.evicted;
  }

  private pool(
    scheme: 'http' | 'https',
    address: string,
    port: number,
    servername: string,
    h2: boolean,
    verify: boolean,
  ): Pool | AddressRefusedError {
    const allowH2 = h2 && scheme === 'https';
    const key = `${scheme}|${address}|${port}|${servername}|${allowH2 ? 'h2' : 'h1'}|${verify ? 'v' : 'nv'}`;
    let p = this.pools.get(key);
    if (p) {
      // Map order is the LRU order: move a used pool to the end.
      this.pools.delete(key);
      this.pools.set(key, p);
    } else {
      // A refused address literal gets no pool (checked here, off the per-request path; the connector checks names).
      const refusal = isIP(address) !== 0 ? this.opts.policy.refusal(address, port) : undefined;
      if (refusal) return new AddressRefusedError(address, refusal);
      const host = isIP(address) === 6 ? `[${address}]` : address;
      p = new Pool(`${scheme}://${host}:${port}`, {
        connections: 256,
        pipelining: 1,
        keepAliveTimeout: 30_000,
        allowH2,
        connect: guardedConnector(
          this.opts.policy,
          scheme === 'https'
            ? {
                rejectUnauthorized: verify,
                ...(verify && this.opts.extraCa ? { ca: [...rootCertificates, this.opts.extraCa] } : {}),
                ...(servername && isIP(servername) === 0 ? { servername } : {}),
                timeout: 10_000,
                allowH2, // the connector offers h2 in ALPN; the pool speaks what the origin picks
              }
            : { timeout: 10_000 },
        ),
      });
      this.pools.set(key, p);
      if (this.pools.size > this.opts.maxPools) this.evictOldest();
    }
    return p;
  }

  /** Closes the least recently used pool: requests already in it finish, new ones get a new pool. */
  private evictOldest(): void {
    const [key, oldest] = this.pools.entries().next().value as [string, Pool];
    this.pools.delete(key);
    this.undiciEvicted++;
    oldest.close().catch(() => undefined);
  }

  /** Pools open now (at most maxPools of each client). */
  get size(): number {
    return this.pools.size + this.http.size;
  }

  /** The scheme to use now for `target` (resolves `auto` with what earlier attempts learned). */
  effectiveScheme(target: OriginTarget): 'http' | 'https' {
    if (target.scheme !== 'auto') return target.scheme;
    const until = this.autoHttpUntil.get(target.address);
    return until !== undefined && until > Date.now() ? 'http' : 'https';
  }

  /** Remember for a minute that an Auto origin does not speak HTTPS on 443. */
  markAutoHttp(target: OriginTarget): void {
    // Bounded like the pools: a full map forgets its oldest mark (the origin is tried over HTTPS again).
    if (this.autoHttpUntil.size >= this.opts.maxPools)
      this.autoHttpUntil.delete(this.autoHttpUntil.keys().next().value!);
    this.autoHttpUntil.delete(target.address);
    this.autoHttpUntil.set(target.address, Date.now() + 60_000);
  }

  /**
   * Sends the request; `handler` (undici's dispatch handler) streams the answer. `headers` is a flat [name, value, …]
   * list; `body` is null or a stream the request body is piped through. `h2`: offer HTTP/2 to a TLS origin.
   */
  dispatch(
    target: OriginTarget,
    scheme: 'http' | 'https',
    req: { method: string; path: string; headers: string[]; body: Readable | null },
    handler: Dispatcher.DispatchHandler & OriginHandler,
    h2: boolean,
  ): void {
    const port = target.scheme === 'auto' ? (scheme === 'https' ? 443 : 80) : target.port;
    const timeoutMs = target.timeoutSec * 1000;
    if (scheme === 'http') {
      this.http.dispatch(
        target.address,
        port,
        target.hostHeader,
        req.method,
        req.path,
        req.headers,
        req.body,
        handler,
        timeoutMs,
        Math.max(timeoutMs, 30_000),
      );
      return;
    }
    const verify = this.opts.tlsVerify && target.scheme === 'https';
    const pool = this.pool(scheme, target.address, port, target.hostHeader, h2, verify);
    if (pool instanceof AddressRefusedError) {
      queueMicrotask(() => handler.onError?.(pool));
      return;
    }
    pool.dispatch(
      {
        path: req.path,
        method: req.method,
        headers: req.headers,
        body: req.body,
        headersTimeout: timeoutMs,
        bodyTimeout: Math.max(timeoutMs, 30_000),
      },
      handler,
    );
  }

  /** Sends a request already encoded (forward.ts encodeUpstream) to a plain-HTTP origin: the hot path. */
  dispatchHttp(
    target: OriginTarget,
    method: string,
    encoded: EncodedRequest,
    body: Readable | null,
    handler: OriginHandler,
  ): void {
    const port = target.scheme === 'auto' ? 80 : target.port;
    const timeoutMs = target.timeoutSec * 1000;
    this.http.dispatchEncoded(
      target.address,
      port,
      target.hostHeader,
      method,
      encoded,
      body,
      handler,
      timeoutMs,
      Math.max(timeoutMs, 30_000),
    );
  }

  /**
   * An uptime probe (edge-node/src/uptime/probes.ts): GET `path` from `target` through the very pool, guarded
   * connector and TLS settings a proxied request would use (so it reaches only where origins may be), the scheme
   * `auto` falling back to plain HTTP as the proxy does. Resolves the status; rejects with the connection error. At
   * most 64 KiB of the body is read, then the answer is dropped.
   */
  async probe(target: OriginTarget, path: string, userAgent: string, timeoutMs: number, h2: boolean): Promise<number> {
    let scheme = this.effectiveScheme(target);
    for (;;) {
      const port = target.scheme === 'auto' ? (scheme === 'https' ? 443 : 80) : target.port;
      const verify = this.opts.tlsVerify && target.scheme === 'https';
      const pool = this.pool(scheme, target.address, port, target.hostHeader, h2, verify);
      if (pool instanceof AddressRefusedError) throw pool;
      try {
        const res = await pool.request({
          path,
          method: 'GET',
          headers: { host: target.hostHeader, 'user-agent': userAgent },
          headersTimeout: timeoutMs,
          bodyTimeout: timeoutMs,
        });
        await res.body.dump({ limit: 64 * 1024 }).catch(() => undefined);
        return res.statusCode;
      } catch (err) {
        if (target.scheme === 'auto' && scheme === 'https' && isConnectFailure(err as Error)) {
          this.markAutoHttp(target);
          scheme = 'http';
          continue;
        }
        throw err;
      }
    }
  }

  async close(): Promise<void> {
    this.http.close();
    await Promise.all([...this.pools.values()].map((p) => p.close().catch(() => undefined)));
    this.pools.clear();
  }
}

/**
 * Whether a domain's origin_protocol lets the edge offer HTTP/2: all but `http1`. The origin picks in TLS ALPN, so
 * `auto` ends where a probe would; `http3` is a ceiling the edge cannot reach yet (no QUIC client), so h2 it is.
 * Plain-HTTP origins always get HTTP/1.1 (no h2c), as at Cloudflare.
 */
export function offersH2(originProtocol: string | undefined): boolean {
  return originProtocol !== 'http1';
}

/** True for failures before anything reached the origin (Auto may retry over plain HTTP, a pool may fail over). */
export function isConnectFailure(err: Error): boolean {
  const code = (err as { code?: string }).code ?? '';
  return (
    code === 'ECONNREFUSED' ||
    code === 'UND_ERR_CONNECT_TIMEOUT' ||
    code === 'EDGE_ORIGIN_CONNECT_TIMEOUT' ||
    (code === 'ECONNRESET' && /connect|handshake|TLS|socket disconnected/i.test(err.message)) ||
    code === 'EPROTO' ||
    code === 'ERR_SSL_WRONG_VERSION_NUMBER' ||
    code === 'EHOSTUNREACH' ||
    code === 'ENOTFOUND' ||
    code === 'EAI_AGAIN' ||
    /wrong version number|handshake/i.test(err.message)
  );
}

/** Node's codes for a certificate that does not verify (OpenSSL's X509 errors, and a name it does not cover). */
const CERTIFICATE_ERRORS = new Set([
  'ERR_TLS_CERT_ALTNAME_INVALID',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_REVOKED',
  'CERT_UNTRUSTED',
  'CERT_REJECTED',
  'CERT_SIGNATURE_FAILURE',
  'INVALID_CA',
]);

/** True when the origin's certificate was refused (→ 526, as Cloudflare's "Invalid SSL certificate"). */
export function isCertificateFailure(err: Error): boolean {
  return CERTIFICATE_ERRORS.has((err as { code?: string }).code ?? '');
}

/** True when the origin did not answer in time (→ 504). */
export function isTimeout(err: Error): boolean {
  const code = (err as { code?: string }).code ?? '';
  return (
    code === 'UND_ERR_HEADERS_TIMEOUT' ||
    code === 'UND_ERR_CONNECT_TIMEOUT' ||
    code === 'UND_ERR_BODY_TIMEOUT' ||
    code === 'EDGE_ORIGIN_HEADERS_TIMEOUT' ||
    code === 'EDGE_ORIGIN_CONNECT_TIMEOUT' ||
    code === 'EDGE_ORIGIN_BODY_TIMEOUT'
  );
}
