// The sync hub: streams the config log to nodes over WebSocket (uWebSockets.js), catch-up from the database then live pub/sub.
import uWS from 'uWebSockets.js';
import { componentLogger } from '@platform/shared';
import { encodeConfigEntry, packEntries, type HubControl } from '@platform/shared/config';
import type { Db } from '../db/index.js';
import type { ConfigLog, StoredEntry } from '../config-log/index.js';
import { nodeTokenChecker, presentedToken } from '../auth/node-token.js';

export interface SyncHubOptions {
  host: string;
  /** 0 picks a free port (see SyncHub.port). */
  port: number;
  token: string;
  db: Db;
  configLog: ConfigLog;
  /** Safety-net poll of the config log (ms); nudges stream new entries at once. */
  pollMs?: number;
  /** Bytes queued for one node before it is dropped (it reconnects and resumes). */
  maxBackpressure?: number;
}

export interface SyncHub {
  readonly port: number;
  /** The highest version published to live nodes. */
  readonly head: number;
  /** Nodes connected now (catching up or live). */
  readonly nodes: number;
  close(): Promise<void>;
}

interface NodeConn {
  id: number;
  nodeId: string;
  from: number;
  closed: boolean;
  onDrain?: () => void;
}

const TOPIC = 'config';
/** Upper bound of one frame; a snapshot larger than this still goes alone in its own frame. */
const MAX_FRAME_BYTES = 1 << 20;
const CATCH_UP_PAGE = 256;
const YIELD_AFTER_BYTES = 64 * 1024;
const TAIL_PAGE = 500;
const log = componentLogger('control-plane.sync');

/** Encodes stored rows into frames of at most MAX_FRAME_BYTES (one row alone may exceed it), each with its last version. */
export function framesOf(rows: readonly StoredEntry[]): Array<{ frame: Uint8Array; lastVersion: number }> {
  const frames: Array<{ frame: Uint8Array; lastVersion: number }> = [];
  let batch: Uint8Array[] = [];
  let size = 0;
  let lastVersion = 0;
  for (const r of rows) {
    const bytes = encodeConfigEntry({
      version: r.version,
      domain: r.domainName,
      deleted: r.deleted,
      snapshotBytes: r.payload,
    });
    if (batch.length > 0 && size + bytes.length > MAX_FRAME_BYTES) {
      frames.push({ frame: packEntries(batch), lastVersion });
      batch = [];
      size = 0;
    }
    batch.push(bytes);
    size += bytes.length + 5;
    lastVersion = r.version;
  }
  if (batch.length > 0) frames.push({ frame: packEntries(batch), lastVersion });
  return frames;
}

export async function startSyncHub(opts: SyncHubOptions): Promise<SyncHub> {
  const { db, configLog } = opts;
  const maxBackpressure = opts.maxBackpressure ?? 16 * 1024 * 1024;
  const checkToken = nodeTokenChecker(opts.token);
  const sockets = new Set<uWS.WebSocket<NodeConn>>();
  let head = await configLog.head(db);
  let nextId = 1;
  let closing = false;

  const app = uWS.App();
  app.ws<NodeConn>('/sync', {
    compression: uWS.DISABLED,
    maxPayloadLength: 4 * 1024,
    maxBackpressure,
    closeOnBackpressureLimit: 1,
    idleTimeout: 60,
    sendPingsAutomatically: true,
    upgrade(res, req, context) {
      const token = presentedToken(
        req.getHeader('authorization'),
        req.getHeader('x-node-token'),
        req.getQuery('token'),
      );
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
      res.upgrade<NodeConn>({ id: nextId++, nodeId, from, closed: false }, key, protocol, extensions, context);
    },
    open(ws) {
      sockets.add(ws);
      const conn = ws.getUserData();
      log.info({ node: conn.nodeId, conn: conn.id, from: conn.from }, 'node connected');
      catchUp(ws).catch((err) => {
        log.error({ err, node: conn.nodeId }, 'catch-up failed; dropping the node so it resumes');
        if (!conn.closed) ws.end(1011, 'catch-up failed');
      });
    },
    drain(ws) {
      const conn = ws.getUserData();
      if (conn.onDrain && ws.getBufferedAmount() < maxBackpressure / 4) {
        const f = conn.onDrain;
        conn.onDrain = undefined;
        f();
      }
    },
    close(ws, code) {
      sockets.delete(ws);
      const conn = ws.getUserData();
      conn.closed = true;
      conn.onDrain?.();
      log.info({ node: conn.nodeId, conn: conn.id, code }, 'node disconnected');
    },
  });
  app.any('/*', (res) => {
    res.writeStatus('404 Not Found').writeHeader('content-type', 'application/json').end('{"error":"not found"}');
  });

  /**
   * Sends the latest entry of each domain in (from, head], paging through the log and waiting for the socket to drain,
   * until no entry was published meanwhile; then subscribes the node to live entries (synchronously with that check, so
   * nothing falls between) and tells it it is caught up.
   */
  async function catchUp(ws: uWS.WebSocket<NodeConn>): Promise<void> {
    const conn = ws.getUserData();
    let cursor = conn.from;
    if (cursor > head) {
      // Ahead of our published head: ahead of the database too (the log was restored or replaced), or just of our tail?
      const logHead = await configLog.head(db);
      if (conn.closed) return;
      if (cursor > logHead) {
        log.warn(
          { node: conn.nodeId, from: cursor, head: logHead },
          'node is ahead of the config log; telling it to rebuild',
        );
        const reset: HubControl = { type: 'reset', version: logHead };
        ws.cork(() => ws.send(JSON.stringify(reset), false));
        cursor = 0;
      } else {
        await tail();
        if (conn.closed) return;
      }
    }
    for (;;) {
      const target = head;
      for (;;) {
        const rows = cursor < target ? await configLog.readLatestAfter(db, cursor, target, CATCH_UP_PAGE) : [];
        if (conn.closed) return;
        for (const { frame } of framesOf(rows)) {
          ws.cork(() => ws.send(frame, true));
          if (ws.getBufferedAmount() > maxBackpressure / 2) {
            await new Promise<void>((resolve) => {
              conn.onDrain = resolve;
            });
            if (conn.closed) return;
          }
        }
        if (rows.length < CATCH_UP_PAGE) break;
        cursor = rows[rows.length - 1]!.version;
      }
      cursor = target;
      if (head === target) break;
    }
    ws.subscribe(TOPIC);
    const done: HubControl = { type: 'caught-up', version: head };
    ws.cork(() => ws.send(JSON.stringify(done), false));
  }

  // Tail: publish every entry after `head` to live nodes, in version order. Appends commit in version order
  // (ConfigLog's advisory lock), so reading `version > head` never skips an entry that commits later.
  let tailing = false;
  let again = false;
  async function tail(): Promise<void> {
    if (tailing) {
      again = true;
      return;
    }
    tailing = true;
    try {
      do {
        again = false;
        for (;;) {
          const rows = await configLog.readAfter(db, head, TAIL_PAGE);
          if (rows.length === 0 || closing) break;
          for (const { frame, lastVersion } of framesOf(rows)) {
            app.publish(TOPIC, frame, true);
            // `head` moves with each publish: a node whose catch-up ends during the yield below reads up to it.
            head = lastVersion;
            // After a large frame, let the event loop flush sockets before the next one, so that a burst of big
            // snapshots does not pile up in every node's queue at once (only nodes that do not read get dropped).
            if (frame.length >= YIELD_AFTER_BYTES) await new Promise((r) => setImmediate(r));
          }
          if (rows.length < TAIL_PAGE) break;
        }
      } while (again && !closing);
    } catch (err) {
      log.error({ err }, 'config log tail failed; retrying at the next nudge or poll');
    } finally {
      tailing = false;
    }
  }

  const offNudge = configLog.onNudge(() => {
    void tail();
  });
  const poll = setInterval(() => {
    void tail();
  }, opts.pollMs ?? 1000);

  const listenSocket = await new Promise<uWS.us_listen_socket>((resolve, reject) => {
    app.listen(opts.host, opts.port, (ls) =>
      ls ? resolve(ls) : reject(new Error(`sync hub cannot listen on ${opts.host}:${opts.port}`)),
    );
  });
  const port = uWS.us_socket_local_port(listenSocket);
  log.info({ host: opts.host, port, head }, 'sync hub listening');

  return {
    port,
    get head() {
      return head;
    },
    get nodes() {
      return sockets.size;
    },
    async close() {
      closing = true;
      offNudge();
      clearInterval(poll);
      uWS.us_listen_socket_close(listenSocket);
      for (const ws of [...sockets]) ws.end(1001, 'hub shutting down');
      while (tailing) await new Promise((r) => setTimeout(r, 5));
    },
  };
}
