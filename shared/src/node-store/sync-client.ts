// The node side of config sync: a WebSocket client that resumes from the store's version and applies what the hub sends.
import WebSocket from 'ws';
import { componentLogger } from '../logger.js';
import { MAX_SYNC_FRAME_BYTES, unpackEntries, type HubControl } from '../config/frames.js';
import type { NodeStore } from './store.js';

export interface NodeSyncOptions {
  /** Hub address, e.g. ws://127.0.0.1:8090 (SYNC_URL). */
  hubUrl: string;
  /** Node token (NODE_TOKEN, or DATA_DIR/node-token). */
  token: string;
  /** Shown in the hub's logs. */
  nodeId?: string;
  /** First reconnect delay (ms), doubled up to maxBackoffMs. */
  minBackoffMs?: number;
  maxBackoffMs?: number;
  /** Largest frame accepted (MAX_SYNC_FRAME_BYTES); a larger one closes the connection. */
  maxFrameBytes?: number;
}

export interface NodeSync {
  /** Resolves once the node has caught up with the hub's head as of the first successful connection. */
  ready: Promise<void>;
  /** True while connected and caught up. */
  readonly connected: boolean;
  stop(): Promise<void>;
}

const log = componentLogger('node-sync');
/** No frame nor ping from the hub for this long: the connection is dropped and re-established. */
const DEAD_AFTER_MS = 150_000;

/** Connects to the hub, resumes from store.version, applies every entry, and reconnects with backoff when dropped. */
export function startNodeSync(store: NodeStore, opts: NodeSyncOptions): NodeSync {
  const minBackoff = opts.minBackoffMs ?? 100;
  const maxBackoff = opts.maxBackoffMs ?? 5000;
  let backoff = minBackoff;
  let stopped = false;
  let caughtUp = false;
  let ws: WebSocket | undefined;
  let timer: NodeJS.Timeout | undefined;
  let resolveReady!: () => void;
  const ready = new Promise<void>((resolve) => {
    resolveReady = resolve;
  });

  function connect(): void {
    timer = undefined;
    if (stopped) return;
    const url = new URL('/sync', opts.hubUrl);
    url.searchParams.set('from', String(store.version));
    const socket = new WebSocket(url, {
      headers: { authorization: `Bearer ${opts.token}`, ...(opts.nodeId ? { 'x-node-id': opts.nodeId } : {}) },
      perMessageDeflate: false,
      maxPayload: opts.maxFrameBytes ?? MAX_SYNC_FRAME_BYTES,
    });
    ws = socket;
    socket.binaryType = 'nodebuffer';
    // The hub pings an idle connection about once a minute; silence well beyond that means a dead peer (half-open TCP).
    let lastHeard = Date.now();
    const watchdog = setInterval(() => {
      if (Date.now() - lastHeard > DEAD_AFTER_MS) socket.terminate();
    }, DEAD_AFTER_MS / 5);
    watchdog.unref();
    socket.on('ping', () => {
      lastHeard = Date.now();
    });
    socket.on('message', (data: Buffer, isBinary: boolean) => {
      lastHeard = Date.now();
      try {
        if (isBinary) {
          store.applyEncoded(unpackEntries(data));
          return;
        }
        const msg = JSON.parse(data.toString('utf8')) as HubControl;
        if (msg.type === 'reset') {
          log.warn(
            { had: store.version, hubHead: msg.version },
            'hub log is behind this store; rebuilding it from the hub',
          );
          store.reset();
        } else if (msg.type === 'caught-up') {
          caughtUp = true;
          backoff = minBackoff;
          resolveReady();
        }
      } catch (err) {
        // A frame we cannot apply: drop the connection and resume from the last applied version.
        log.error({ err }, 'sync frame failed; reconnecting');
        socket.terminate();
      }
    });
    socket.on('unexpected-response', (_req, res) => {
      log.error(
        { status: res.statusCode, hub: opts.hubUrl },
        res.statusCode === 401 ? 'hub refused the node token' : 'hub refused the connection',
      );
      socket.terminate();
    });
    socket.on('error', (err) => {
      log.debug({ err: err.message }, 'sync connection error');
    });
    socket.on('close', () => {
      clearInterval(watchdog);
      caughtUp = false;
      if (ws === socket) ws = undefined;
      if (stopped) return;
      const delay = Math.round(backoff * (0.5 + Math.random() / 2));
      backoff = Math.min(maxBackoff, backoff * 2);
      timer = setTimeout(connect, delay);
    });
  }

  connect();
  return {
    ready,
    get connected() {
      return caughtUp;
    },
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      const socket = ws;
      if (!socket || socket.readyState === WebSocket.CLOSED) return;
      await new Promise<void>((resolve) => {
        socket.once('close', () => resolve());
        socket.terminate();
      });
    },
  };
}
