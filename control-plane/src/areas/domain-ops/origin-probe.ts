// GET /domains/{domain}/origin-protocols: which HTTP versions each distinct origin behind the domain's proxied records
// speaks. Per origin: a TLS handshake offering h2 and http/1.1 in ALPN (HTTP/2 when the origin picks h2), and one
// `HEAD /` (HTTP/1.1 when it answers; HTTP/3 when its Alt-Svc advertises h3). Node 20 has no QUIC client (no
// node:quic without flags, and no maintained npm QUIC client), so HTTP/3 is established by the Alt-Svc path only:
// `http3_via` is `alt-svc` (never `quic`). Every connection goes to an address the origin policy allows (resolved
// once, connected to by address: no rebinding), with a timeout per step; answers younger than 20 s are reused.
import { isIP } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { resolveAllowed, type AddressPolicy } from '@platform/shared/address-policy';

/** Answers younger than this are reused (spec Limits: origin protocol probe cache). */
export const PROBE_CACHE_MS = 20_000;
/** Each step (connect and handshake, the HEAD's answer) gives up after this long. */
export const PROBE_STEP_TIMEOUT_MS = 5_000;
/** Origins probed at once for one request. */
export const PROBE_CONCURRENCY = 4;
/** Distinct origins probed for one domain; the rest are listed unprobed (`error` says so). */
export const PROBE_MAX_ORIGINS = 64;
/** Probe answers kept in this process (oldest dropped first). */
const CACHE_MAX = 10_000;

export interface OriginKey {
  /** `https` (TLS), `http` (plain) or `auto` (TLS on 443, as the edge tries first). */
  scheme: 'https' | 'http' | 'auto';
  /** IP address or host name, as the record names it (no trailing dot). */
  host: string;
  port: number;
  /** TLS SNI and Host header: the host_header override, the CNAME target, or the record's own name for an IP. */
  serverName: string;
}

export interface ProbeResult {
  http1: boolean;
  http2: boolean;
  http3: boolean;
  http3_via: 'alt-svc' | 'quic' | null;
  /** The HEAD's status, when it answered. */
  status: number | null;
  /** Why a step failed (refused address, timeout, TLS failure…); null when both steps answered. */
  error: string | null;
  checked_at: string;
}

const cache = new Map<string, { at: number; result: ProbeResult }>();

export const originKeyText = (o: OriginKey): string => `${o.scheme}|${o.host}|${o.port}|${o.serverName}`;

/** The origin of a proxied record as the edge computes it (edge-node/src/proxy/origin.ts). */
export function recordOriginKey(
  zone: string,
  r: { name: string; destination: string; scheme: string; port: number; hostHeader: string | null },
): OriginKey {
  const host = r.destination.endsWith('.') ? r.destination.slice(0, -1) : r.destination;
  const valid = Number.isInteger(r.port) && r.port >= 1 && r.port <= 65535;
  const scheme = r.scheme === 'Https' ? 'https' : r.scheme === 'Http' ? 'http' : 'auto';
  const port = scheme === 'auto' ? 443 : valid ? r.port : scheme === 'https' ? 443 : 80;
  const own = r.name === '@' ? zone : `${r.name.replace(/^\*\./, 'www.')}.${zone}`;
  const serverName = r.hostHeader || (isIP(host) !== 0 ? own : host);
  return { scheme, host, port, serverName };
}

function timeoutError(what: string): Error {
  return new Error(`${what}: no answer within ${PROBE_STEP_TIMEOUT_MS} ms`);
}

/** TLS handshake offering h2 and http/1.1: the protocol the origin picked ('' without ALPN). */
function alpn(address: string, o: OriginKey): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = tlsConnect({
      host: address,
      port: o.port,
      servername: isIP(o.serverName) === 0 ? o.serverName : undefined,
      ALPNProtocols: ['h2', 'http/1.1'],
      // What the origin speaks is asked, not whether its certificate verifies (the edge's own check says that).
      rejectUnauthorized: false,
    });
    const timer = setTimeout(() => {
      socket.destroy();
      reject(timeoutError('TLS handshake'));
    }, PROBE_STEP_TIMEOUT_MS);
    socket.once('secureConnect', () => {
      clearTimeout(timer);
      const picked = socket.alpnProtocol || '';
      socket.destroy();
      resolve(picked);
    });
    socket.once('error', (err) => {
      clearTimeout(timer);
      socket.destroy();
      reject(err);
    });
  });
}

/** One `HEAD /` over HTTP/1.1: the status and the Alt-Svc header. */
function head(address: string, o: OriginKey, tls: boolean): Promise<{ status: number; altSvc: string }> {
  return new Promise((resolve, reject) => {
    const fn = tls ? httpsRequest : httpRequest;
    const req = fn({
      host: address,
      port: o.port,
      method: 'HEAD',
      path: '/',
      agent: false,
      headers: { host: o.serverName, 'user-agent': 'origin-protocol-probe', connection: 'close' },
      ...(tls
        ? {
            servername: isIP(o.serverName) === 0 ? o.serverName : undefined,
            rejectUnauthorized: false,
            ALPNProtocols: ['http/1.1'],
          }
        : {}),
      // The answer head is bounded like any HTTP/1.1 client's (Node's 16 KiB default).
      timeout: PROBE_STEP_TIMEOUT_MS,
    });
    req.once('timeout', () => req.destroy(timeoutError('HEAD /')));
    req.once('error', reject);
    req.once('response', (res) => {
      const alt = res.headers['alt-svc'];
      resolve({ status: res.statusCode ?? 0, altSvc: Array.isArray(alt) ? alt.join(',') : (alt ?? '') });
      res.resume();
      req.destroy();
    });
    req.end();
  });
}

/** True when an Alt-Svc value advertises HTTP/3 (`h3` or a draft `h3-NN`), RFC 7838 syntax. */
export function advertisesH3(altSvc: string): boolean {
  return /(^|[\s,])h3(-\d+)?\s*=/i.test(altSvc.slice(0, 4096));
}

/** Probes one origin (no cache). */
export async function probeOrigin(policy: AddressPolicy, o: OriginKey): Promise<ProbeResult> {
  const result: ProbeResult = {
    http1: false,
    http2: false,
    http3: false,
    http3_via: null,
    status: null,
    error: null,
    checked_at: new Date().toISOString(),
  };
  let address: string;
  try {
    address = await withTimeout(resolveAllowed(policy, o.host, o.port), 'address lookup');
  } catch (err) {
    result.error = (err as Error).message;
    return result;
  }
  const tls = o.scheme !== 'http';
  const errors: string[] = [];
  const [picked, answer] = await Promise.allSettled([
    tls ? alpn(address, o) : Promise.resolve(''),
    head(address, o, tls),
  ]);
  if (picked.status === 'fulfilled') result.http2 = picked.value === 'h2';
  else errors.push(`TLS: ${(picked.reason as Error).message}`);
  if (answer.status === 'fulfilled') {
    result.http1 = true;
    result.status = answer.value.status;
    if (advertisesH3(answer.value.altSvc)) {
      result.http3 = true;
      result.http3_via = 'alt-svc';
    }
  } else errors.push(`HEAD /: ${(answer.reason as Error).message}`);
  if (errors.length) result.error = errors.join('; ').slice(0, 512);
  return result;
}

function withTimeout<T>(p: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    p,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(timeoutError(what)), PROBE_STEP_TIMEOUT_MS);
    }),
  ]).finally(() => clearTimeout(timer));
}

/**
 * Probes `origins` with at most PROBE_CONCURRENCY at once, reusing answers younger than PROBE_CACHE_MS. Returns
 * each result with whether it came from the cache.
 */
export async function probeOrigins(
  policy: AddressPolicy,
  origins: readonly OriginKey[],
  now = Date.now,
): Promise<Array<{ result: ProbeResult; cached: boolean }>> {
  const out = new Array<{ result: ProbeResult; cached: boolean }>(origins.length);
  let next = 0;
  const worker = async () => {
    while (next < origins.length) {
      const i = next++;
      const key = originKeyText(origins[i]);
      const hit = cache.get(key);
      if (hit && now() - hit.at < PROBE_CACHE_MS) {
        out[i] = { result: hit.result, cached: true };
        continue;
      }
      const result = await probeOrigin(policy, origins[i]);
      cache.delete(key);
      cache.set(key, { at: now(), result });
      if (cache.size > CACHE_MAX) cache.delete(cache.keys().next().value!);
      out[i] = { result, cached: false };
    }
  };
  await Promise.all(Array.from({ length: Math.min(PROBE_CONCURRENCY, origins.length) }, worker));
  return out;
}
