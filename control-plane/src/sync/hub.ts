// The sync hub: streams the config log to nodes. The WebSocket server, the log mirror and every catch-up run in a
// worker thread (hub-worker.ts); this side, on the thread that owns the database, reads each committed entry once and
// hands it over, stores the compactions the worker asks for, and prunes old tombstones.
import type { Worker } from 'node:worker_threads';
import { componentLogger } from '@platform/shared';
import { startModuleWorker } from '@platform/shared/worker-thread';
import { MAX_SYNC_FRAME_BYTES } from '@platform/shared/config';
import type { Db } from '../db/index.js';
import type { ConfigLog, StoredEntry } from '../config-log/index.js';
import type { Compacted } from '../config-log/compacted.js';
import {
  HUB_STATE_BYTES,
  hubState,
  type ConnectedNode,
  type FromWorker,
  type HubWorkerData,
  type ToWorker,
} from './protocol.js';

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
  /** The largest frame sent to a node (MAX_SYNC_FRAME_BYTES); a domain whose config is larger is withheld. */
  maxFrameBytes?: number;
  /** Send deltas to nodes (true, the default), or squash each into its domain's whole snapshot first (false). */
  sendDeltas?: boolean;
  /** Squash a domain's deltas into a snapshot after this many. */
  compactAfterDeltas?: number;
  /** Tombstones are kept this long (ms), then deleted; nodes older than the newest deleted one rebuild. */
  tombstoneRetentionMs?: number;
  /** How often old tombstones are pruned (ms). */
  pruneEveryMs?: number;
}

export interface SyncHub {
  readonly port: number;
  /** The highest version handed to live nodes. */
  readonly head: number;
  /** Nodes connected now (catching up or live). */
  readonly nodes: number;
  /** The connected nodes and the versions they last reported applying, with the head published to them. */
  connectedNodes(): Promise<{ head: number; nodes: ConnectedNode[] }>;
  /** Prunes tombstones past their retention now; resolves to the new horizon. */
  pruneTombstones(): Promise<number>;
  /** Resolves once every compaction asked for so far is stored. */
  settled(): Promise<void>;
  close(): Promise<void>;
}

const TAIL_PAGE = 500;
const log = componentLogger('control-plane.sync');

function spawnWorker(data: HubWorkerData): Worker {
  return startModuleWorker(import.meta.url, 'hub-worker', { workerData: data });
}

export async function startSyncHub(opts: SyncHubOptions): Promise<SyncHub> {
  const { db, configLog } = opts;
  const retentionMs = opts.tombstoneRetentionMs ?? 7 * 24 * 3_600_000;
  const sharedState = new SharedArrayBuffer(HUB_STATE_BYTES);
  const state = hubState(sharedState);
  const worker = spawnWorker({
    state: sharedState,
    host: opts.host,
    port: opts.port,
    token: opts.token,
    maxBackpressure: opts.maxBackpressure ?? 16 * 1024 * 1024,
    maxFrameBytes: opts.maxFrameBytes ?? MAX_SYNC_FRAME_BYTES,
    sendDeltas: opts.sendDeltas ?? true,
    compactAfterDeltas: opts.compactAfterDeltas,
  });
  const send = (m: ToWorker) => worker.postMessage(m);
  const head = () => Number(Atomics.load(state, 0));
  let tailed = 0;
  let closing = false;
  let resolveClosed!: () => void;
  const closed = new Promise<void>((r) => {
    resolveClosed = r;
  });
  const nodesRequests = new Map<number, (r: { head: number; nodes: ConnectedNode[] }) => void>();
  let nextRequest = 1;
  let listening!: (port: number) => void;
  let failed!: (err: Error) => void;
  const ready = new Promise<number>((resolve, reject) => {
    listening = resolve;
    failed = reject;
  });

  // Compactions asked for by the worker, latest per domain, stored one at a time.
  const compactions = new Map<string, { version: number; payload?: Compacted }>();
  let compacting: Promise<void> | undefined;
  function compactLater(domain: string, version: number, payload?: Compacted): void {
    const prev = compactions.get(domain);
    // A later squash without payload (a snapshot or tombstone) still needs no earlier payload stored.
    compactions.set(domain, {
      version,
      payload: payload ?? (prev && prev.version === version ? prev.payload : undefined),
    });
    compacting ??= (async () => {
      while (compactions.size > 0 && !closing) {
        const [name, c] = compactions.entries().next().value!;
        compactions.delete(name);
        await configLog
          .compact(db, name, c.version, c.payload)
          .catch((err: unknown) => log.error({ err, domain: name }, 'config log compaction failed'));
      }
      compacting = undefined;
    })();
  }

  worker.on('message', (m: FromWorker) => {
    switch (m.type) {
      case 'listening':
        listening(m.port);
        break;
      case 'listen-failed':
        failed(new Error(m.message));
        break;
      case 'compact':
        compactLater(m.domain, m.version, m.payload);
        break;
      case 'head-request':
        void tail().then(async () => send({ type: 'db-head', id: m.id, head: await configLog.head(db) }));
        break;
      case 'nodes':
        nodesRequests.get(m.id)?.({ head: m.head, nodes: m.nodes });
        nodesRequests.delete(m.id);
        break;
      case 'closed':
        resolveClosed();
        for (const r of nodesRequests.values()) r({ head: head(), nodes: [] });
        nodesRequests.clear();
        break;
    }
  });
  worker.on('error', (err) => {
    log.error({ err }, 'sync hub worker failed: nodes receive nothing until the control plane restarts');
    failed(err);
    resolveClosed();
  });

  function hand(entries: StoredEntry[], live: boolean): void {
    // A payload is often a view on a larger pooled buffer (protobufjs allocates small ones from Node's 8 KiB pool):
    // cloned as it is, the whole buffer would be copied, and kept by the worker's mirror for every entry. Each is
    // copied onto a buffer of its own size and moved to the worker (transferred, not copied again).
    const transfer: ArrayBuffer[] = [];
    const own = entries.map((e) => {
      const payload = new Uint8Array(e.payload);
      transfer.push(payload.buffer);
      return { ...e, payload };
    });
    worker.postMessage({ type: 'entries', entries: own, live } satisfies ToWorker, transfer);
    tailed = entries[entries.length - 1]!.version;
  }

  // Tail: hand every entry after `tailed` to the worker, in version order. Appends commit in version order
  // (ConfigLog's advisory lock), so reading `version > tailed` never skips an entry that commits later.
  let tailing: Promise<void> | undefined;
  let again = false;
  async function tail(): Promise<void> {
    if (tailing) {
      again = true;
      return tailing;
    }
    tailing = (async () => {
      try {
        do {
          again = false;
          for (;;) {
            const rows = await configLog.readAfter(db, tailed, TAIL_PAGE);
            if (rows.length === 0 || closing) break;
            hand(rows, true);
            if (rows.length < TAIL_PAGE) break;
          }
        } while (again && !closing);
      } catch (err) {
        log.error({ err }, 'config log tail failed; retrying at the next nudge or poll');
      } finally {
        tailing = undefined;
      }
    })();
    return tailing;
  }

  async function pruneTombstones(): Promise<number> {
    const horizon = await configLog.pruneTombstones(db, retentionMs);
    send({ type: 'horizon', version: horizon });
    return horizon;
  }

  try {
    // Load the (compacted) log once; the worker listens only when it holds all of it.
    await pruneTombstones();
    for (;;) {
      const rows = await configLog.readAfter(db, tailed, TAIL_PAGE * 4);
      if (rows.length === 0) break;
      hand(rows, false);
    }
    send({ type: 'loaded' });
    await ready;
  } catch (err) {
    await worker.terminate();
    throw err;
  }
  const port = await ready;
  // A nudge comes right after a write's commit, before its answer is sent: the tail runs after that (setImmediate),
  // once for every nudge of the same turn, and hands this process's committed entries from memory (readAfter).
  let nudged = false;
  const offNudge = configLog.onNudge(() => {
    if (nudged) return;
    nudged = true;
    setImmediate(() => {
      nudged = false;
      if (!closing) void tail();
    });
  });
  const poll = setInterval(() => {
    void tail();
  }, opts.pollMs ?? 1000);
  const prune = setInterval(() => {
    pruneTombstones().catch((err: unknown) => log.error({ err }, 'tombstone pruning failed'));
  }, opts.pruneEveryMs ?? 3_600_000);
  prune.unref();
  void tail();

  return {
    port,
    get head() {
      return head();
    },
    get nodes() {
      return Number(Atomics.load(state, 1));
    },
    connectedNodes() {
      if (closing) return Promise.resolve({ head: head(), nodes: [] });
      return new Promise((resolve) => {
        const id = nextRequest++;
        // A worker that died answers nothing: the scrape still completes, without nodes.
        const late = setTimeout(() => {
          nodesRequests.delete(id);
          resolve({ head: head(), nodes: [] });
        }, 2000);
        nodesRequests.set(id, (r) => {
          clearTimeout(late);
          resolve(r);
        });
        send({ type: 'nodes-request', id });
      });
    },
    pruneTombstones,
    async settled() {
      while (compacting) await compacting;
    },
    async close() {
      closing = true;
      offNudge();
      clearInterval(poll);
      clearInterval(prune);
      await tailing;
      await compacting;
      const exited = new Promise((r) => worker.once('exit', r));
      send({ type: 'close' });
      await closed;
      // The worker ends by itself once its sockets are closed (terminate() with uWS sockets open aborts the process).
      const late = setTimeout(() => void worker.terminate(), 5_000);
      await exited;
      clearTimeout(late);
    },
  };
}
