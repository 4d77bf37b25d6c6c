// Messages between the sync hub's worker thread and the main thread that owns the database.
import type { LogEntry } from './mirror.js';
import type { Compacted } from '../config-log/compacted.js';

/** What the worker starts with (workerData). */
export interface HubWorkerData {
  host: string;
  port: number;
  token: string;
  maxBackpressure: number;
  maxFrameBytes: number;
  sendDeltas: boolean;
  compactAfterDeltas?: number;
  /**
   * The published head and the number of connected nodes, written by the worker after each change and read by the
   * main thread when asked (hubState): no message, and no wake-up of the main thread, per write.
   */
  state: SharedArrayBuffer;
}

/** The shared state's view: [published head, connected nodes]. */
export const hubState = (buffer: SharedArrayBuffer) => new BigInt64Array(buffer, 0, 2);
/** Bytes of the shared state. */
export const HUB_STATE_BYTES = 16;

export type ToWorker =
  /** Committed entries after the last ones sent, in version order. `live`: publish them to connected nodes. */
  | { type: 'entries'; entries: LogEntry[]; live: boolean }
  /** The whole log is loaded: start listening. */
  | { type: 'loaded' }
  | { type: 'horizon'; version: number }
  /** Answer to a head request: the database's head after the tail caught up with it. */
  | { type: 'db-head'; id: number; head: number }
  /** Asks for the connected nodes and the versions they reported applying (metrics). */
  | { type: 'nodes-request'; id: number }
  | { type: 'close' };

export type FromWorker =
  | { type: 'listening'; port: number }
  | { type: 'listen-failed'; message: string }
  /** Entries of `domain` before `version` are superseded; `payload`: the squashed snapshot to store at `version`. */
  | { type: 'compact'; domain: string; version: number; payload?: Compacted }
  /** A node is ahead of the mirror: tail the log and report the database's head. */
  | { type: 'head-request'; id: number }
  | { type: 'nodes'; id: number; head: number; nodes: ConnectedNode[] }
  | { type: 'closed' };

/** A connected node as the hub sees it: its id (x-node-id, or conn-<n>) and the last version it reported applied. */
export interface ConnectedNode {
  node: string;
  version: number;
}
