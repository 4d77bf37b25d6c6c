// uWS wiring: the HTTP and HTTPS apps, SNI certificates from the snapshots, and the per-request entry into the phases.
import { createHash, createPrivateKey, randomBytes } from 'node:crypto';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { performance } from 'node:perf_hooks';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import uWS, { type HttpRequest, type HttpResponse, type TemplatedApp } from 'uWebSockets.js';
import { componentLogger } from '@platform/shared';
import type { AddressPolicy } from '@platform/shared/address-policy';
import { openCertificateKey, type Certificate } from '@platform/shared/config';
import { normaliseHost, normalisePath, parsePeerAddress, type PeerAddress } from '@platform/shared/match';
import { RequestContext } from './context.js';
import type { EdgeErrorCode } from './errors.js';
import { runPhases, type EdgeState } from './phases.js';
import { respond, setHandlerResponse } from './proxy/respond.js';
import { nativeFrontAvailable, startNativeFront, type NativeServer } from './front/native.js';

const log = componentLogger('edge-node.server');

export interface EdgeServer {
  httpPort: number;
  /** -1 when HTTPS is off. */
  httpsPort: number;
  /** Answers the native front relayed from origins in C (EDGE_FRONT=native; 0 on uWS). */
  readonly nativeRelayed: number;
  /** Installs the certificates of one domain (replacing what it had); an empty list removes them. */
  setCertificates(domain: string, certs: readonly Certificate[]): void;
  close(): void;
}

/**
 * Request body as a stream fed by uWS onData, pausing the client while the origin is not reading. A resume asked for
 * in the same turn as the pause (a reader that consumes at once, as the waf phase does) is lost by uWS and the body
 * stalls: resuming waits for the next turn of the loop, and happens only after a pause.
 */
function bodyStream(res: HttpResponse, ctx: RequestContext): Readable {
  let paused = false;
  const resume = () => {
    if (ctx.aborted) return;
    ctx.bodyPaused = false;
    res.resume();
  };
  const stream = new Readable({
    read() {
      if (!paused) return;
      paused = false;
      setImmediate(resume);
    },
  });
  res.onData((chunk, isLast) => {
    // Answered without its body (a rule refused the request, an unknown host) or gone: uWS still delivers the rest so
    // the connection can be reused. Drop it unread, and never touch res again: pause() after an answer throws, and
    // thrown from this callback it took the whole process down (a 2 MB POST to a blocked path was enough).
    if (ctx.aborted) {
      if (!stream.destroyed) stream.destroy();
      return;
    }
    // uWS neuters the ArrayBuffer after the callback: copy it.
    const more = stream.push(Buffer.from(chunk.slice(0)));
    if (isLast) stream.push(null);
    else if (!more) {
      paused = true;
      ctx.bodyPaused = true;
      res.pause();
    }
  });
  return stream;
}

/**
 * The request's host as rules and the domain lookup compare it: without a port or IPv6 brackets, normaliseHost'd. A
 * Host already in that form (lower-case letters, digits, `.`, `-`, `_`, not ending in a dot: what clients send) is
 * returned as it is, in one scan (no lastIndexOf, trim and toLowerCase calls, each a call out of JIT code).
 */
export function hostOf(raw: string): string {
  const n = raw.length;
  let plain = n > 0 && raw.charCodeAt(n - 1) !== 46;
  for (let i = 0; plain && i < n; i++) {
    const c = raw.charCodeAt(i);
    plain = (c >= 97 && c <= 122) || (c >= 48 && c <= 57) || c === 46 || c === 45 || c === 95;
  }
  if (plain) return raw;
  let h = raw;
  if (h.startsWith('[')) {
    const end = h.indexOf(']');
    h = end > 0 ? h.slice(1, end) : h;
  } else {
    const colon = h.lastIndexOf(':');
    if (colon >= 0) h = h.slice(0, colon);
  }
  return normaliseHost(h);
}

/** The list req.forEach is filling: forEach runs its callback synchronously, so one module-level callback serves every request. */
let collecting: [string, string][] = [];
function collectHeader(k: string, v: string): void {
  collecting.push([k, v]);
}

/** The first value of header `name` (lower case) in a list forEach made, as uWS's getHeader reads it. */
function firstHeader(headers: readonly [string, string][], name: string): string | undefined {
  for (let i = 0; i < headers.length; i++) if (headers[i][0] === name) return headers[i][1];
  return undefined;
}

/**
 * The method as one of the literal strings when it is a common one: uWS makes a new string per request, and the
 * request log's ring keeps the method for thousands of requests (a string kept that long is copied by the garbage
 * collector into the old generation; a literal is shared).
 */
function methodOf(m: string): string {
  switch (m) {
    case 'GET':
      return 'GET';
    case 'HEAD':
      return 'HEAD';
    case 'POST':
      return 'POST';
    case 'PUT':
      return 'PUT';
    case 'DELETE':
      return 'DELETE';
    case 'OPTIONS':
      return 'OPTIONS';
    case 'PATCH':
      return 'PATCH';
    default:
      return m;
  }
}

/** PeerAddress objects of IPv4 clients by a hash of the address (direct-mapped: a collision replaces the entry). */
const PEERS: (PeerAddress | undefined)[] = new Array<PeerAddress | undefined>(4096).fill(undefined);
const HEX4 = (n: number): string => n.toString(16).padStart(4, '0');

/**
 * The TCP peer of a request from uWS's binary address (4 bytes, or 16 for IPv6 with IPv4 mapped in it): no text made
 * by uWS (its inet formatting), no Buffer, no parse, and for IPv4 one immutable PeerAddress per address, kept in a
 * small table. The same values as parsePeerAddress of uWS's text (IPv4-mapped peers count as IPv4; other IPv6
 * addresses get uWS's text form, eight groups of four hex digits).
 */
export function peerOf(raw: ArrayBuffer): PeerAddress {
  const b = new Uint8Array(raw);
  let at = -1;
  if (b.length === 4) at = 0;
  else if (b.length === 16) {
    let mapped = b[10] === 255 && b[11] === 255;
    for (let i = 0; mapped && i < 10; i++) mapped = b[i] === 0;
    if (mapped) at = 12;
    else {
      let text = HEX4((b[0] << 8) | b[1]);
      for (let i = 2; i < 16; i += 2) text += `:${HEX4((b[i] << 8) | b[i + 1])}`;
      return parsePeerAddress(text);
    }
  }
  if (at < 0) return parsePeerAddress('');
  const v4 = ((b[at] << 24) | (b[at + 1] << 16) | (b[at + 2] << 8) | b[at + 3]) >>> 0;
  const slot = (v4 ^ (v4 >>> 12) ^ (v4 >>> 24)) & 4095;
  const known = PEERS[slot];
  if (known !== undefined && known.v4 === v4) return known;
  const peer: PeerAddress = { v4, v6: undefined, text: `${b[at]}.${b[at + 1]}.${b[at + 2]}.${b[at + 3]}` };
  PEERS[slot] = peer;
  return peer;
}

export function makeHandler(state: EdgeState, scheme: 'http' | 'https') {
  return (res: HttpResponse, req: HttpRequest) => {
    const headers: [string, string][] = [];
    collecting = headers;
    req.forEach(collectHeader);
    const method = methodOf(req.getCaseSensitiveMethod());
    const url = req.getUrl();
    const ctx = new RequestContext({
      method,
      // The first Host header, as req.getHeader('host') gives it, from the list forEach made (no second call into uWS).
      host: hostOf(firstHeader(headers, 'host') ?? ''),
      // Rules match, the cache keys on and the origin receives this one form (normalisePath).
      path: normalisePath(url),
      rawPath: url,
      query: req.getQuery() ?? '',
      headers,
      peer: peerOf(res.getRemoteAddress()),
      scheme,
      startedAt: performance.now(),
    });
    const hasBody =
      method !== 'GET' &&
      method !== 'HEAD' &&
      (Number(firstHeader(headers, 'content-length') || 0) > 0 || !!firstHeader(headers, 'transfer-encoding'));
    const body = hasBody ? bodyStream(res, ctx) : null;
    // HEAD gets its abort handler first, as every request once did: uWS does not count a synchronous endWithoutBody as
    // having responded, and aborts the process when the handler returns without an abort handler; attaching one to
    // the ended response does not help (acme-http01.test.ts's HEAD found it).
    const headFirst = method === 'HEAD';
    if (headFirst) res.onAborted(() => onAborted(ctx, body));
    // Synchronous on the common path: no promise per request; only an awaited basic_auth verdict returns one.
    let pending: Promise<void> | undefined;
    setHandlerResponse(res);
    try {
      pending = runPhases(res, ctx, state, body);
    } catch (err) {
      requestFailed(res, ctx, state, err);
    } finally {
      setHandlerResponse(null);
    }
    // An answer given synchronously (a cache hit, a refusal, a redirect: ctx.aborted is then set, since the client
    // cannot have gone away within this call) needs no abort handler: uWS keeps one per request (a closure and a V8
    // global handle), so it is attached only to a request still waiting for its answer, before the handler returns.
    if (!ctx.aborted && !headFirst) res.onAborted(() => onAborted(ctx, body));
    pending?.catch((err) => requestFailed(res, ctx, state, err));
  };
}

/** The client went away before its answer was finished. */
function onAborted(ctx: RequestContext, body: Readable | null): void {
  const finished = ctx.aborted;
  ctx.aborted = true;
  if (!finished) ctx.status = ctx.status || 499;
  ctx.upstream?.cancel();
  // A reader of the body before any origin exchange (the waf phase) would otherwise wait for data forever.
  body?.destroy();
}

/** One catch per request: 502 `edge error` once, logged (the native front's requests too). */
export function requestFailed(res: HttpResponse, ctx: RequestContext, state: EdgeState, err: unknown): void {
  log.error({ err, host: ctx.host, path: ctx.path }, 'request failed');
  ctx.unserved = 'edge_error';
  respond(
    res,
    ctx,
    502,
    [
      ['content-type', 'text/plain; charset=utf-8'],
      ['x-edge-error', 'EDGE_ERR_INTERNAL' satisfies EdgeErrorCode],
    ],
    'edge error\n',
    null,
  );
  state.log(ctx);
}

function listen(app: TemplatedApp, host: string, port: number): Promise<{ port: number; socket: unknown }> {
  return new Promise((resolve, reject) => {
    app.listen(host, port, (socket) => {
      if (!socket) reject(new Error(`cannot listen on ${host}:${port}`));
      else resolve({ port: uWS.us_socket_local_port(socket), socket });
    });
  });
}

export interface ServerOptions {
  host: string;
  httpPort: number;
  httpsPort: number;
  tlsDir: string;
  defaultCert: { certFile: string; keyFile: string } | undefined;
  /** Opens the sealed private keys of snapshot certificates (cert-seal.ts); unset: only plain keys are installed. */
  nodeToken?: string;
  /** Plain HTTP through the native front (config.ts `front`); HTTPS stays on uWS. */
  front?: 'uws' | 'native';
  /** Origin addresses the native front may connect to (the others go through the existing clients, which refuse). */
  policy?: AddressPolicy;
}

export async function startEdgeServer(state: EdgeState, opts: ServerOptions): Promise<EdgeServer> {
  let native = opts.front === 'native';
  if (native && (!nativeFrontAvailable() || isIP(opts.host) !== 4)) {
    log.error(
      { host: opts.host },
      'EDGE_FRONT=native needs the http-front module (npm run setup) and an IPv4 EDGE_HOST: uWS serves HTTP',
    );
    native = false;
  }
  const httpHandler = makeHandler(state, 'http');
  const http = native ? undefined : uWS.App().any('/*', httpHandler);
  const httpsHandler = makeHandler(state, 'https');
  // Both apps are built before either listens: a worker whose HTTPS app cannot be built (an unreadable certificate)
  // exits without having accepted, and so reset, any connection.
  const https =
    opts.httpsPort >= 0 && opts.defaultCert
      ? uWS
          .SSLApp({ cert_file_name: opts.defaultCert.certFile, key_file_name: opts.defaultCert.keyFile })
          .any('/*', httpsHandler)
      : undefined;
  let nativeServer: NativeServer | undefined;
  const httpListen = http
    ? await listen(http, opts.host, opts.httpPort)
    : {
        port: (nativeServer = startNativeFront(state, { host: opts.host, port: opts.httpPort, policy: opts.policy }))
          .port,
        socket: undefined,
      };
  const httpsListen = https ? await listen(https, opts.host, opts.httpsPort) : undefined;
  // hostname → fingerprint of the certificate installed for it, and the domain that installed it.
  const installed = new Map<string, { fingerprint: string; domain: string }>();
  mkdirSync(opts.tlsDir, { recursive: true, mode: 0o700 });
  // Keys on disk (uWS loads certificates from files) are encrypted with a passphrase that lives only in this process.
  const passphrase = randomBytes(24).toString('base64url');
  /** The key PEM of `cert` (opened when sealed), re-encrypted for the file; null when it cannot be opened. */
  const keyFileText = (domain: string, cert: Certificate): string | null => {
    try {
      const plain =
        cert.privateKeySealed && cert.privateKeySealed.length > 0
          ? openCertificateKey(opts.nodeToken ?? '', domain, cert.certificatePem, cert.privateKeySealed)
          : cert.privateKeyPem;
      return createPrivateKey(plain)
        .export({ format: 'pem', type: 'pkcs8', cipher: 'aes-256-cbc', passphrase })
        .toString();
    } catch (err) {
      log.error({ err, domain, hostnames: cert.hostnames }, 'certificate key cannot be opened: not installed');
      return null;
    }
  };

  return {
    httpPort: httpListen.port,
    httpsPort: httpsListen?.port ?? -1,
    get nativeRelayed() {
      return nativeServer?.relayed ?? 0;
    },
    setCertificates(domain, certs) {
      if (!https) return;
      const wanted = new Map<string, { fingerprint: string; cert: Certificate }>();
      for (const c of certs) {
        // The certificate decides its key: a re-sealed key (a new nonce in every entry) is the same certificate.
        const fingerprint = createHash('sha256').update(c.certificatePem).digest('hex').slice(0, 32);
        for (const h of c.hostnames) wanted.set(normaliseHost(h), { fingerprint, cert: c });
      }
      for (const [name, v] of installed) {
        if (v.domain === domain && wanted.get(name)?.fingerprint !== v.fingerprint) {
          https.removeServerName(name);
          installed.delete(name);
        }
      }
      // Files written by this call: uWS reads them inside addServerName, so they are removed before returning (a
      // key is on disk only for that moment, encrypted). Names carry the pid: workers of one node share the directory.
      const written = new Map<string, string[] | null>();
      try {
        for (const [name, { fingerprint, cert }] of wanted) {
          if (installed.get(name)?.fingerprint === fingerprint) continue;
          const certFile = join(opts.tlsDir, `${fingerprint}.${process.pid}.crt`);
          const keyFile = join(opts.tlsDir, `${fingerprint}.${process.pid}.key`);
          if (!written.has(fingerprint)) {
            const keyText = keyFileText(domain, cert);
            written.set(fingerprint, keyText === null ? null : [certFile, keyFile]);
            if (keyText !== null) {
              writeFileSync(keyFile, keyText, { mode: 0o600 });
              writeFileSync(certFile, cert.certificatePem, { mode: 0o600 });
            }
          }
          if (written.get(fingerprint) === null) continue;
          if (installed.has(name)) https.removeServerName(name);
          https.addServerName(name, { cert_file_name: certFile, key_file_name: keyFile, passphrase });
          // Each server name has its own router in uWS: give it the same handler.
          https.domain(name).any('/*', httpsHandler);
          installed.set(name, { fingerprint, domain });
        }
      } finally {
        for (const files of written.values()) for (const f of files ?? []) rmSync(f, { force: true });
      }
    },
    close() {
      if (nativeServer) nativeServer.close();
      else uWS.us_listen_socket_close(httpListen.socket as never);
      if (httpsListen) uWS.us_listen_socket_close(httpsListen.socket as never);
    },
  };
}
