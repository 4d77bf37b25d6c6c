// Cache inventories (issue 15 items 1 and 5): what this process's cache holds, per domain, reported to the control
// plane (POST /internal/cache-inventory, msgpack, node token), and the one cached object the control plane asks for
// (GET /cache/object on this process's own cache listener, node token).
//
// A report is a full snapshot of the process's cache: per domain the exact count and body bytes of its objects, and
// the most recently used entries listed (key, status, size, content type, stored, fresh until, expires, hits), bounded
// per domain, per report and in bytes; what is left out is counted per domain (`dropped`). The control plane replaces
// what it holds of this node with each snapshot. A snapshot is kept until acknowledged (2xx); a newer one replaces a
// snapshot not acknowledged yet (it says everything the old one said), so the node keeps at most one. Snapshots are
// taken every EDGE_CACHE_REPORT_MS when the cache changed, and at least every HEARTBEAT_MS (the control plane takes a
// node silent for longer than its horizon as gone). A process that stops sends an empty snapshot last (best effort):
// what its cache held goes with it, and a restarted node (a new process, a new name) is not counted twice. Decision in
// docs/decisions.md ("Cache inventories").
import { createServer, type Server } from 'node:http';
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { pack } from 'msgpackr';
import { componentLogger } from '@platform/shared';
import { ensureNodeToken } from '@platform/shared/node-token';
import type { AddressPolicy } from '@platform/shared/address-policy';
import type { EdgeConfig } from '../config.js';
import { nodeName, postReport, reportLoop, retryAt } from '../log/post.js';
import type { CacheEntry, EdgeCache } from './store.js';

const log = componentLogger('edge-node.cache-inventory');

export interface InventoryLimits {
  /** Entries listed per domain (the most recently used). */
  perDomain: number;
  /** Entries listed per report, all domains together. */
  perReport: number;
  /** Estimated bytes of the listed entries per report. */
  maxBytes: number;
  /** Longest key listed (a longer one is counted in `dropped`). */
  maxKey: number;
}

export const INVENTORY_LIMITS: InventoryLimits = {
  perDomain: 5000,
  perReport: 50_000,
  maxBytes: 8 * 1024 * 1024,
  maxKey: 4096,
};

/** A snapshot is sent at least this often, changed or not. */
export const HEARTBEAT_MS = 60_000;

/** One listed entry: [key, status, body bytes, content type, stored at, fresh until, expires at, hits] (times in ms). */
export type InventoryEntry = [string, number, number, string, number, number, number, number];

/** One domain of a snapshot: [name, objects, body bytes, entries left out of `listed`, listed]. */
export type InventoryDomain = [string, number, number, number, InventoryEntry[]];

function headerOf(e: CacheEntry, name: string): string {
  for (const [k, v] of e.headers) if (k === name) return v;
  return '';
}

/** Entries visited between two yields to the event loop while a snapshot is taken or packed. */
export const VISIT_SLICE = 4096;

const nextTurn = () => new Promise<void>((r) => setImmediate(r));

let passes = 0;

/**
 * The snapshot of what `cache` holds, bounded by `limits`; counts and bytes are exact whatever is listed. Taken in
 * slices of VISIT_SLICE entries with `pause` awaited between them (the serving process keeps answering: a million
 * entries visited at once would stall it for about 100 ms); an entry moved to the end of its domain's order by a hit
 * meanwhile is counted once.
 */
export async function takeInventory(
  cache: EdgeCache,
  limits: InventoryLimits,
  now: number,
  pause: () => Promise<void> = nextTurn,
): Promise<InventoryDomain[]> {
  const pass = ++passes;
  const out: InventoryDomain[] = [];
  let listedTotal = 0;
  let bytesTotal = 0;
  let visited = 0;
  for (const [domain, entries] of cache.domainEntries()) {
    // The domain's most recently used entries (its map is in least-recently-used order): the last `room` seen.
    const room = Math.min(limits.perDomain, limits.perReport - listedTotal);
    const ring: CacheEntry[] = new Array<CacheEntry>(Math.max(0, room));
    let ringed = 0;
    let count = 0;
    let bytes = 0;
    for (const e of entries) {
      if (++visited % VISIT_SLICE === 0) await pause();
      if (e.vary !== undefined || now >= e.expiresAt || e.pass === pass) continue;
      e.pass = pass;
      count++;
      bytes += e.body.length;
      if (room > 0 && e.key!.length <= limits.maxKey) ring[ringed++ % room] = e;
    }
    if (count === 0) continue;
    const listed: InventoryEntry[] = [];
    for (let i = ringed - 1; i >= Math.max(0, ringed - room); i--) {
      if (++visited % VISIT_SLICE === 0) await pause();
      const e = ring[i % room];
      const type = headerOf(e, 'content-type').slice(0, 256);
      const cost = e.key!.length + type.length + 64;
      if (bytesTotal + cost > limits.maxBytes) break;
      bytesTotal += cost;
      listed.push([e.key!, e.status, e.body.length, type, e.storedAt, e.freshUntil, e.expiresAt, e.hits ?? 0]);
    }
    listedTotal += listed.length;
    out.push([domain, count, bytes, count - listed.length, listed]);
  }
  return out;
}

/** A msgpack array header for `n` items. */
function arrayHeader(n: number): Buffer {
  if (n < 16) return Buffer.from([0x90 | n]);
  const b = Buffer.alloc(n < 0x10000 ? 3 : 5);
  if (n < 0x10000) {
    b[0] = 0xdc;
    b.writeUInt16BE(n, 1);
  } else {
    b[0] = 0xdd;
    b.writeUInt32BE(n, 1);
  }
  return b;
}

/** The items of `items` packed, without the array header (what a pack of the array holds after it). */
function packItems(items: readonly unknown[]): Buffer {
  return pack(items).subarray(arrayHeader(items.length).length);
}

/**
 * The report packed as one msgpack map ({node, report, at, address, domains}), VISIT_SLICE entries at a time with
 * `pause` awaited between (a snapshot of 8 MiB packed at once would stall the process as long as taking it).
 */
export async function packReport(
  head: { node: string; report: string; at: number; address: string },
  domains: readonly InventoryDomain[],
  pause: () => Promise<void> = nextTurn,
): Promise<Buffer> {
  const parts: Buffer[] = [Buffer.from([0x85])];
  for (const [k, v] of Object.entries(head)) parts.push(pack(k), pack(v));
  parts.push(pack('domains'), arrayHeader(domains.length));
  let packed = 0;
  for (const [name, count, bytes, dropped, listed] of domains) {
    parts.push(arrayHeader(5), packItems([name, count, bytes, dropped]), arrayHeader(listed.length));
    for (let i = 0; i < listed.length; i += VISIT_SLICE / 4) {
      const chunk = listed.slice(i, i + VISIT_SLICE / 4);
      parts.push(packItems(chunk));
      packed += chunk.length;
      if (packed >= VISIT_SLICE / 4) {
        packed = 0;
        await pause();
      }
    }
  }
  return Buffer.concat(parts);
}

export interface CacheReporter {
  /** Takes a snapshot when the cache changed (or `force`) and sends what is pending now (no backoff wait). */
  flush(force?: boolean): Promise<void>;
  stop(): Promise<void>;
  /** Base URL of the cache listener ('' when off). */
  readonly address: string;
  /** Snapshots replaced before they were acknowledged. */
  superseded: number;
}

function digest(s: string): Buffer {
  return createHash('sha256').update(s).digest();
}

/**
 * The cache listener: GET /cache/object?domain=<name>&key=<key> answers the object stored under that key of that
 * domain's cache (the stored bytes, as they are: `x-cache-content-encoding` names their coding), 404 when absent.
 * Only with the node token; nothing else is served.
 */
function startCacheListener(
  cache: EdgeCache,
  token: string,
  host: string,
  port: number,
  span: number,
): Promise<Server> {
  const expected = digest(token);
  const server = createServer((req, res) => {
    const bearer = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '')?.[1];
    if (bearer === undefined || !timingSafeEqual(digest(bearer), expected)) {
      res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"invalid node token"}');
      return;
    }
    const url = new URL(req.url ?? '/', 'http://node');
    const domain = url.searchParams.get('domain');
    const key = url.searchParams.get('key');
    if (req.method !== 'GET' || url.pathname !== '/cache/object' || !domain || !key) {
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"not found"}');
      return;
    }
    const e = cache.peek(domain, key, Date.now());
    if (!e) {
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"not cached"}');
      return;
    }
    res.writeHead(200, {
      'content-type': headerOf(e, 'content-type') || 'application/octet-stream',
      'content-length': e.body.length,
      'x-cache-content-encoding': headerOf(e, 'content-encoding'),
      'x-cache-entry-status': e.status,
    });
    res.end(e.body);
  });
  server.headersTimeout = 10_000;
  server.requestTimeout = 30_000;
  return listenOwn(server, host, port, span);
}

/**
 * Listens on a port of this process's own (`exclusive`: a cluster worker's listen is otherwise shared through the
 * primary, and a request for one worker's object would reach another): `port`, or the first free of the `span`
 * ports from it; port 0, a free one.
 */
async function listenOwn(server: Server, host: string, port: number, span: number): Promise<Server> {
  for (let i = 0; ; i++) {
    try {
      return await new Promise<Server>((resolve, reject) => {
        server.once('error', reject);
        server.listen({ port: port === 0 ? 0 : port + i, host, exclusive: true }, () => {
          server.off('error', reject);
          resolve(server);
        });
      });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE' || port === 0 || i + 1 >= span) throw err;
    }
  }
}

export async function startCacheReporter(
  cache: EdgeCache,
  config: Pick<
    EdgeConfig,
    'controlPlaneUrl' | 'cacheReportMs' | 'dataDir' | 'nodeToken' | 'cacheHost' | 'cachePort' | 'cacheUrl' | 'workers'
  >,
  limits: InventoryLimits = INVENTORY_LIMITS,
  /** The origin address policy: the listener is added to its own endpoints (never an origin, whatever is allowed). */
  policy?: Pick<AddressPolicy, 'addOwn'>,
): Promise<CacheReporter> {
  if (!config.controlPlaneUrl)
    return { flush: async () => undefined, stop: async () => undefined, address: '', superseded: 0 };
  const url = `${config.controlPlaneUrl}/internal/cache-inventory`;
  const token = ensureNodeToken(config.dataDir, config.nodeToken);
  const listener =
    config.cachePort >= 0
      ? // With workers, a fixed port is the first of a range: each worker takes the first free one.
        await startCacheListener(cache, token, config.cacheHost, config.cachePort, config.workers * 2)
      : undefined;
  const port = listener ? (listener.address() as { port: number }).port : 0;
  if (listener) policy?.addOwn({ address: config.cacheHost, port });
  const host = config.cacheHost.includes(':') ? `[${config.cacheHost}]` : config.cacheHost;
  const address = !listener ? '' : (config.cacheUrl?.replace(/\/$/, '') ?? `http://${host}:${port}`);
  const node = nodeName();
  const incarnation = randomBytes(8).toString('hex');
  let sequence = 0;
  let pending: { body: Buffer; version: number } | undefined;
  /** The cache version of the last snapshot taken, and when. */
  let takenVersion = -1;
  let takenAt = 0;
  let failures = 0;
  let nextAttempt = 0;
  let stopped = false;
  const reporter: CacheReporter = {
    address,
    superseded: 0,
    flush: (force = false) => loop.run(() => step(true, force)),
    async stop() {
      if (stopped) return;
      stopped = true;
      loop.stop();
      await loop.idle();
      if (listener) await new Promise((r) => listener.close(r));
      // The cache goes with the process: say so (once, not retried; the control plane's horizon covers a failure).
      const empty = await packReport({ node, report: `${incarnation}-${++sequence}`, at: Date.now(), address }, []);
      await postReport(url, token, empty).catch(() => undefined);
    },
  };

  const take = async (force: boolean): Promise<void> => {
    const now = Date.now();
    if (!force && cache.version === takenVersion && now - takenAt < HEARTBEAT_MS) return;
    const version = cache.version;
    const domains = await takeInventory(cache, limits, now);
    const body = await packReport({ node, report: `${incarnation}-${++sequence}`, at: now, address }, domains);
    if (pending) reporter.superseded++;
    pending = { body, version };
    takenVersion = version;
    takenAt = now;
  };

  const send = async (): Promise<void> => {
    const head = pending;
    if (!head) return;
    try {
      await postReport(url, token, head.body);
    } catch (err) {
      if (failures++ % 30 === 0)
        log.warn({ err: (err as Error).message }, 'cache inventory report failed; it is sent again');
      nextAttempt = retryAt(failures);
      return;
    }
    if (pending === head) pending = undefined;
    failures = 0;
    nextAttempt = 0;
  };

  /** A snapshot (when due, or `force`) and a send (`now`: whatever the backoff). */
  const step = async (now: boolean, force: boolean): Promise<void> => {
    await take(force);
    if (now || Date.now() >= nextAttempt) return send();
  };
  const loop = reportLoop(
    config.cacheReportMs,
    () => step(false, false),
    (err) => log.warn({ err }, 'cache inventory report failed'),
  );
  return reporter;
}
