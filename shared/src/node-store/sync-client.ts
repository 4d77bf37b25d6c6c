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
  /** First reconnect delay (ms), doubled after each failure up to maxBackoffMs, each delay jittered to 50–100 %. */
  minBackoffMs?: number;
  maxBackoffMs?: number;
  /** While the hub stays unreachable for the same reason, the warning is repeated this often (ms). */
  warnEveryMs?: number;
  /** Largest frame accepted (MAX_SYNC_FRAME_BYTES); a larger one closes the connection. */
  maxFrameBytes?: number;
}

export interface NodeSyncStatus {
  hubUrl: string;
  /** connecting: no connection (or not yet open); catching-up: receiving what it lacks; caught-up: live. */
  state: 'connecting' | 'catching-up' | 'caught-up';
  /** Why the last connection failed or dropped (cleared once caught up again). */
  lastError: string | undefined;
  /** Caught up at least once since start. */
  everCaughtUp: boolean;
  /** The latest version the hub announced (caught-up) or sent. */
  hubVersion: number;
  /** Connections that failed or dropped since start. */
  failures: number;
}

export interface NodeSync {
  /** Resolves once the node has caught up with the hub's head as of the first successful connection. */
  ready: Promise<void>;
  /** True while connected and caught up. */
  readonly connected: boolean;
  readonly status: Readonly<NodeSyncStatus>;
  stop(): Promise<void>;
}

const log = componentLogger('node-sync');
/** No frame nor ping from the hub for this long: the connection is dropped and re-established. */
const DEAD_AFTER_MS = 150_000;
/** Applied versions are reported to the hub (its per-node lag) at most this often. */
const REPORT_EVERY_MS = 200;

/** Connects to the hub, resumes from store.version, applies every entry, and reconnects with backoff when dropped. */
export function startNodeSync(store: NodeStore, opts: NodeSyncOptions): NodeSync {
  const minBackoff = opts.minBackoffMs ?? 100;
  const maxBackoff = opts.maxBackoffMs ?? 5000;
  const warnEvery = opts.warnEveryMs ?? 60_000;
  let backoff = minBackoff;
  let stopped = false;
  let ws: WebSocket | undefined;
  let timer: NodeJS.Timeout | undefined;
  const status: NodeSyncStatus = {
    hubUrl: opts.hubUrl,
    state: 'connecting',
    lastError: undefined,
    everCaughtUp: false,
    hubVersion: 0,
    failures: 0,
  };
  // A failing hub is logged when the reason changes and then once per warnEvery, not at every retry.
  let warned: { reason: string; at: number } | undefined;
  let attempts = 0;
  function failed(reason: string, retryInMs: number): void {
    status.failures++;
    status.lastError = reason;
    attempts++;
    const now = Date.now();
    if (warned && warned.reason === reason && now - warned.at < warnEvery) return;
    warned = { reason, at: now };
    log.warn(
      { hub: opts.hubUrl, reason, attempts, retryInMs },
      `cannot reach the sync hub at ${opts.hubUrl}: ${reason}; retrying`,
    );
  }
  let resolveReady!: () => void;
  const ready = new Promise<void>((resolve) => {
    resolveReady = resolve;
  });

  // A connection resumes from the store's version once every batch given to the store is written (or failed).
  function connect(): void {
    timer = undefined;
    if (stopped) return;
    void store.idle().then(open);
  }

  function open(): void {
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
    status.state = 'connecting';
    // Why this connection ended, when the hub or the network said so; a close without one gets its code.
    let reason: string | undefined;
    let wasCaughtUp = false;
    let report: NodeJS.Timeout | undefined;
    const reportApplied = () => {
      report = undefined;
      if (socket.readyState === WebSocket.OPEN)
        socket.send(JSON.stringify({ type: 'applied', version: store.version }));
    };
    socket.on('open', () => {
      status.state = 'catching-up';
    });
    // The hub pings an idle connection about once a minute; silence well beyond that means a dead peer (half-open TCP).
    let lastHeard = Date.now();
    const watchdog = setInterval(() => {
      if (Date.now() - lastHeard > DEAD_AFTER_MS) socket.terminate();
    }, DEAD_AFTER_MS / 5);
    watchdog.unref();
    socket.on('ping', () => {
      lastHeard = Date.now();
    });
    // A frame we cannot apply: drop the connection and resume from the last applied version.
    // Once one failed, no later frame of this connection is given to the store (it would apply after a gap).
    let failedFrame = false;
    const frameFailed = (err: unknown) => {
      log.error({ err }, 'sync frame failed; reconnecting');
      failedFrame = true;
      if (socket.readyState !== WebSocket.OPEN) return; // already dropped (a batch failed behind another)
      reason = `a sync frame could not be applied: ${(err as Error).message}`;
      socket.terminate();
    };
    const applied = () => {
      if (store.version > status.hubVersion) status.hubVersion = store.version;
      report ??= setTimeout(reportApplied, REPORT_EVERY_MS);
    };
    socket.on('message', (data: Buffer, isBinary: boolean) => {
      lastHeard = Date.now();
      if (failedFrame) return;
      try {
        if (isBinary) {
          // Written before this returns when small; a large batch is written on the store's writer thread while
          // this one goes on serving.
          store.applyEncoded(unpackEntries(data)).then(applied, frameFailed);
          return;
        }
        const msg = JSON.parse(data.toString('utf8')) as HubControl;
        if (msg.type === 'reset') {
          log.warn(
            { had: store.version, hubHead: msg.version },
            'hub log is behind this store; rebuilding it from the hub',
          );
          store.reset().catch(frameFailed);
          status.hubVersion = msg.version;
        } else if (msg.type === 'caught-up') {
          // Caught up once what the hub sent before is written.
          void store.idle().then(() => {
            if (ws === socket && socket.readyState === WebSocket.OPEN) caughtUp(msg.version);
          });
        }
      } catch (err) {
        frameFailed(err);
      }
    });
    const caughtUp = (hubVersion: number) => {
      status.state = 'caught-up';
      status.hubVersion = Math.max(status.hubVersion, hubVersion);
      if (!status.everCaughtUp || attempts > 0 || status.lastError)
        log.info(
          { hub: opts.hubUrl, version: store.version, failedAttempts: attempts },
          `caught up with the sync hub at ${opts.hubUrl} (version ${store.version})`,
        );
      status.everCaughtUp = true;
      status.lastError = undefined;
      wasCaughtUp = true;
      warned = undefined;
      attempts = 0;
      backoff = minBackoff;
      reportApplied();
      resolveReady();
    };
    socket.on('unexpected-response', (_req, res) => {
      reason =
        res.statusCode === 401
          ? "the hub refused the node token (401): NODE_TOKEN must match the control plane's"
          : `the hub answered HTTP ${res.statusCode} instead of a WebSocket`;
      socket.terminate();
    });
    socket.on('error', (err) => {
      reason ??= err.message || (err as NodeJS.ErrnoException).code || String(err);
    });
    socket.on('close', (code: number, why: Buffer) => {
      clearInterval(watchdog);
      clearTimeout(report);
      status.state = 'connecting';
      if (ws === socket) ws = undefined;
      if (stopped) return;
      const delay = Math.round(backoff * (0.5 + Math.random() / 2));
      backoff = Math.min(maxBackoff, backoff * 2);
      const cause = reason ?? `connection closed (code ${code}${why.length > 0 ? `: ${why.toString('utf8')}` : ''})`;
      if (wasCaughtUp) {
        status.failures++;
        status.lastError = cause;
        log.warn(
          { hub: opts.hubUrl, reason: cause, version: store.version },
          `lost the sync hub at ${opts.hubUrl}: ${cause}; serving version ${store.version} and reconnecting`,
        );
      } else failed(cause, delay);
      timer = setTimeout(connect, delay);
    });
  }

  connect();
  return {
    ready,
    get connected() {
      return status.state === 'caught-up';
    },
    status,
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
