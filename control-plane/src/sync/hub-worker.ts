// The sync hub's worker thread: serves nodes over WebSocket (uWebSockets.js) from the log mirror, so that catch-up
// and fan-out never run on the API's event loop. The main thread feeds it committed entries (hub.ts).
import { parentPort, workerData } from 'node:worker_threads';
import uWS from 'uWebSockets.js';
import { componentLogger } from '@platform/shared';
import type { HubControl } from '@platform/shared/config';
import { framesOf } from './frames.js';
import { LogMirror } from './mirror.js';
import { nodeTokenChecker, presentedToken } from '../auth/node-token.js';
import { hubState, type FromWorker, type HubWorkerData, type ToWorker } from './protocol.js';

interface NodeConn {
  id: number;
  nodeId: string;
  from: number;
  /** The last version the node reported applying ({"type":"applied"} text frames), for its lag. */
  applied: number;
  closed: boolean;
  onDrain?: () => void;
}

const TOPIC = 'config';
const YIELD_AFTER_BYTES = 64 * 1024;
const log = componentLogger('control-plane.sync');

const port = parentPort!;
const data = workerData as HubWorkerData;
const post = (m: FromWorker, transfer: ArrayBuffer[] = []) => port.postMessage(m, transfer);

const mirror = new LogMirror({
  maxFrameBytes: data.maxFrameBytes,
  sendDeltas: data.sendDeltas,
  compactAfterDeltas: data.compactAfterDeltas,
  onCompact: (domain, version, payload) => post({ type: 'compact', domain, version, payload }),
  onError: (domain, version, err) =>
    log.error(
      { err, domain, version },
      'config entry cannot be read: domain withheld from nodes until its next snapshot',
    ),
  onWithheld: (domain, version, bytes, withheld) =>
    withheld
      ? log.error(
          { domain, version, bytes, limit: data.maxFrameBytes },
          'domain config larger than a node can take: withheld from nodes (they keep what they had) until it fits',
        )
      : log.warn({ domain, version, bytes }, 'domain config fits again: nodes receive it whole'),
});
const checkToken = nodeTokenChecker(data.token);
const sockets = new Set<uWS.WebSocket<NodeConn>>();
let published = 0;
let nextId = 1;
let closing = false;
/** Resolvers waiting for the mirror to move (a node slightly ahead of it). */
const headWaiters = new Set<() => void>();
const headRequests = new Map<number, (head: number) => void>();
let nextRequest = 1;

const state = hubState(data.state);
function reportState(): void {
  Atomics.store(state, 0, BigInt(published));
  Atomics.store(state, 1, BigInt(sockets.size));
}

const app = uWS.App();
app.ws<NodeConn>('/sync', {
  compression: uWS.DISABLED,
  maxPayloadLength: 4 * 1024,
  maxBackpressure: data.maxBackpressure,
  closeOnBackpressureLimit: 1,
  idleTimeout: 60,
  sendPingsAutomatically: true,
  upgrade(res, req, context) {
    const token = presentedToken(req.getHeader('authorization'), req.getHeader('x-node-token'), req.getQuery('token'));
    const fromRaw = req.getQuery('from') ?? '0';
    const nodeId = req.getHeader('x-node-id') || req.getQuery('node') || '';
    const key = req.getHeader('sec-websocket-key');
    const protocol = req.getHeader('sec-websocket-protocol');
    const extensions = req.getHeader('sec-websocket-extensions');
    if (!checkToken(token)) {
      res
        .writeStatus('401 Unauthorized')
        .writeHeader('content-type', 'application/json')
        .end('{"error":"invalid node token"}');
      return;
    }
    const from = Number(fromRaw === '' ? '0' : fromRaw);
    if (!Number.isSafeInteger(from) || from < 0) {
      res
        .writeStatus('400 Bad Request')
        .writeHeader('content-type', 'application/json')
        .end('{"error":"from must be a non-negative integer"}');
      return;
    }
    res.upgrade<NodeConn>(
      { id: nextId++, nodeId, from, applied: from, closed: false },
      key,
      protocol,
      extensions,
      context,
    );
  },
  open(ws) {
    sockets.add(ws);
    reportState();
    const conn = ws.getUserData();
    log.info({ node: conn.nodeId, conn: conn.id, from: conn.from }, 'node connected');
    catchUp(ws).catch((err: unknown) => {
      log.error({ err, node: conn.nodeId }, 'catch-up failed; dropping the node so it resumes');
      if (!conn.closed) ws.end(1011, 'catch-up failed');
    });
  },
  message(ws, message, isBinary) {
    // Nodes send only small JSON reports; anything else is ignored (older and newer nodes stay compatible).
    if (isBinary) return;
    try {
      const m = JSON.parse(Buffer.from(message).toString('utf8')) as { type?: unknown; version?: unknown };
      if (m.type === 'applied' && Number.isSafeInteger(m.version)) ws.getUserData().applied = m.version as number;
    } catch {
      // not JSON: ignored
    }
  },
  drain(ws) {
    const conn = ws.getUserData();
    if (conn.onDrain && ws.getBufferedAmount() < data.maxBackpressure / 4) {
      const f = conn.onDrain;
      conn.onDrain = undefined;
      f();
    }
  },
  close(ws, code) {
    sockets.delete(ws);
    reportState();
    const conn = ws.getUserData();
    conn.closed = true;
    conn.onDrain?.();
    log.info({ node: conn.nodeId, conn: conn.id, code }, 'node disconnected');
  },
});
app.any('/*', (res) => {
  res.writeStatus('404 Not Found').writeHeader('content-type', 'application/json').end('{"error":"not found"}');
});

function sendControl(ws: uWS.WebSocket<NodeConn>, msg: HubControl): void {
  ws.cork(() => ws.send(JSON.stringify(msg), false));
}

/**
 * Sends what the node lacks from the mirror (no database read), waiting for its socket to drain, until no entry was
 * ingested meanwhile; then subscribes it to live entries (synchronously with that check, so nothing falls between)
 * and tells it it is caught up. A node ahead of the log, or below the tombstone horizon, rebuilds from version 0.
 */
async function catchUp(ws: uWS.WebSocket<NodeConn>): Promise<void> {
  const conn = ws.getUserData();
  let cursor = conn.from;
  if (cursor > mirror.head) {
    // Ahead of the mirror: ahead of the database too (the log was restored or replaced), or just of our tail?
    const dbHead = await new Promise<number>((resolve) => {
      const id = nextRequest++;
      headRequests.set(id, resolve);
      post({ type: 'head-request', id });
    });
    if (conn.closed) return;
    if (cursor > dbHead) {
      log.warn(
        { node: conn.nodeId, from: cursor, head: dbHead },
        'node is ahead of the config log; telling it to rebuild',
      );
      sendControl(ws, { type: 'reset', version: dbHead });
      cursor = 0;
    } else {
      while (mirror.head < cursor && !conn.closed) await new Promise<void>((r) => headWaiters.add(r));
      if (conn.closed) return;
    }
  }
  if (cursor > 0 && cursor < mirror.horizon) {
    log.warn(
      { node: conn.nodeId, from: cursor, horizon: mirror.horizon },
      'node is older than the tombstone retention; telling it to rebuild',
    );
    sendControl(ws, { type: 'reset', version: mirror.head });
    cursor = 0;
  }
  for (;;) {
    const target = mirror.head;
    for (const frame of framesOf(mirror.catchUp(cursor))) {
      ws.cork(() => ws.send(frame, true));
      if (ws.getBufferedAmount() > data.maxBackpressure / 2) {
        await new Promise<void>((resolve) => {
          conn.onDrain = resolve;
        });
        if (conn.closed) return;
      }
    }
    cursor = target;
    if (mirror.head === target) break;
  }
  ws.subscribe(TOPIC);
  sendControl(ws, { type: 'caught-up', version: mirror.head });
}

/** Ingests entries in order; live ones are published once to the topic (uWS fans them out). */
async function ingest(msg: Extract<ToWorker, { type: 'entries' }>): Promise<void> {
  const out = mirror.ingest(msg.entries);
  if (msg.live) {
    for (const frame of framesOf(out)) {
      app.publish(TOPIC, frame, true);
      // Let the event loop flush sockets after a large frame, so that a burst of big entries does not pile up in
      // every node's queue at once (only nodes that do not read get dropped).
      if (frame.length >= YIELD_AFTER_BYTES) await new Promise((r) => setImmediate(r));
    }
  }
  published = mirror.head;
  for (const w of headWaiters) w();
  headWaiters.clear();
  reportState();
  compactWhenSent();
}

/** Longest wait for the nodes' sockets to take what was published before the mirror compacts anyway, in ms. */
const COMPACT_WAIT_MS = 30_000;
let compactionScheduled = false;

/**
 * Squashes the domains the mirror marked due, once every node's socket has handed what was published to the kernel:
 * the squash blocks this thread for seconds on a large zone, which must not hold up the delivery of the entry that
 * made it due (nor its flush while uWS still buffers it). Runs in the message queue, between two ingests.
 */
function compactWhenSent(): void {
  if (compactionScheduled || !mirror.compactionPending) return;
  compactionScheduled = true;
  const started = Date.now();
  const check = (): void => {
    const buffered = [...sockets].some((ws) => ws.getBufferedAmount() > 0);
    if (buffered && !closing && Date.now() - started < COMPACT_WAIT_MS) {
      setTimeout(check, 10);
      return;
    }
    compactionScheduled = false;
    queue = queue
      .then(() => {
        if (!closing) mirror.compactDue();
      })
      .catch((err: unknown) => log.error({ err }, 'sync hub compaction failed'));
  };
  setImmediate(check);
}

let listenSocket: uWS.us_listen_socket | undefined;
let queue = Promise.resolve();
port.on('message', (msg: ToWorker) => {
  queue = queue
    .then(async () => {
      switch (msg.type) {
        case 'entries':
          if (!closing) await ingest(msg);
          break;
        case 'horizon':
          mirror.setHorizon(msg.version);
          break;
        case 'nodes-request':
          post({
            type: 'nodes',
            id: msg.id,
            head: published,
            nodes: [...sockets].map((ws) => {
              const c = ws.getUserData();
              return { node: c.nodeId || `conn-${c.id}`, version: c.applied };
            }),
          });
          break;
        case 'db-head':
          headRequests.get(msg.id)?.(msg.head);
          headRequests.delete(msg.id);
          break;
        case 'loaded':
          app.listen(data.host, data.port, (ls) => {
            if (!ls) {
              post({ type: 'listen-failed', message: `sync hub cannot listen on ${data.host}:${data.port}` });
              return;
            }
            listenSocket = ls;
            const actual = uWS.us_socket_local_port(ls);
            log.info({ host: data.host, port: actual, head: mirror.head, entries: mirror.size }, 'sync hub listening');
            post({ type: 'listening', port: actual });
          });
          break;
        case 'close':
          closing = true;
          if (listenSocket) uWS.us_listen_socket_close(listenSocket);
          // Forced close: the worker exits only when uWS holds no socket (a worker ended with an open one aborts).
          for (const ws of [...sockets]) ws.close();
          post({ type: 'closed' });
          port.close();
          break;
      }
    })
    .catch((err: unknown) => log.error({ err, message: msg.type }, 'sync hub worker message failed'));
});
