// The http-front native module (src/http_front.c) for JavaScript: issue 12's ceiling of a front that accepts, parses
// and answers in C and hands JavaScript a batch of parsed requests per call. A measuring tool (bench/edge-node/
// native-front.ts, wrk-front.sh): the edge does not serve through it.
//
// Per batch, request i's fields are meta[i * FIELDS + M.*]; the bytes they point at are in rx (the Host value, the
// request target right after it, then the head as received). The handler answers request i by copying its bytes
// into tx and setting meta[i * FIELDS + M.TX_OFF] and M.TX_LEN; a length of 0 leaves it waiting for respond(), -1
// closes the connection. With M.ORIGIN set to an origin's index (addOrigin), tx[TX_OFF, +TX_LEN) is instead a request
// head to send to that origin: C writes it on a pooled keep-alive connection, reads the answer's framing and copies
// the answer to the client, never through JavaScript (502 with an x-edge-error field for what it does not relay), and
// leaves a completion record per forwarded request (D.*) for the next call (onBatch's second argument); with failToJs
// a forward that fails before any byte reached the client is handed back instead of answered (D.WAITING).
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

/** Field indices of one request in meta (the C module's M_* enum). */
export const M = {
  SLOT: 0,
  GEN: 1,
  FLAGS: 2,
  /** The peer's IPv4 address as an unsigned 32-bit number read as int32 (0 for IPv6: FLAG.V6). */
  PEER: 3,
  METHOD_OFF: 4,
  METHOD_LEN: 5,
  HOST_OFF: 6,
  HOST_LEN: 7,
  /** The target follows the Host value in rx: rx[HOST_OFF, TARGET_OFF + TARGET_LEN) is host + target. */
  TARGET_OFF: 8,
  TARGET_LEN: 9,
  /** The path's length in the target (up to `?`). */
  PATH_LEN: 10,
  HEAD_OFF: 11,
  HEAD_LEN: 12,
  UA_OFF: 13,
  UA_LEN: 14,
  AE_OFF: 15,
  AE_LEN: 16,
  COOKIE_OFF: 17,
  COOKIE_LEN: 18,
  TX_OFF: 19,
  TX_LEN: 20,
  /**
   * Set by the handler: >= 0 forwards the request to that origin (addOrigin's index) with tx[TX_OFF, +TX_LEN) as the
   * request head to send; the answer goes from the origin to the client in C. -1 (as C leaves it): TX_* is the answer.
   */
  ORIGIN: 21,
  /** Set by the handler with ORIGIN: tx[TX_OFF + TX_LEN, +ADD_LEN) are lines (`name: value` CRLF) added to the answer's head. */
  ADD_LEN: 22,
  /** Of those ADD_LEN bytes, the first DROP_LEN are names (each followed by LF) of the origin's fields to drop. */
  DROP_LEN: 23,
} as const;
export const FIELDS = 24;

/** Field indices of one completion record in `done` (the C module's D_* enum). */
export const D = {
  SLOT: 0,
  GEN: 1,
  /** The origin's status (0: no answer head came). */
  STATUS: 2,
  /** ERRORS' index; 0: the answer was relayed whole. */
  ERROR: 3,
  /** Body bytes relayed to the client (a chunked body's data, not its framing): BYTES_LO + BYTES_HI * 2^31. */
  BYTES_LO: 4,
  BYTES_HI: 5,
  /** Microseconds from the forward to the answer's head (-1: none came) and to the end. */
  HEAD_US: 6,
  TOTAL_US: 7,
  /** 1 when the request was sent a second time (a GET or HEAD after the keep-alive race). */
  RETRIED: 8,
  /** 1: nothing reached the client and the request waits for JavaScript's answer (respond()); failToJs only. */
  WAITING: 9,
} as const;
export const DONE_FIELDS = 10;
/** The error codes of D.ERROR, by index (the C module's E_*). */
export const ERRORS = [
  '',
  'origin-connect',
  'origin-closed',
  'origin-reset',
  'origin-write',
  'origin-head',
  'origin-interim',
  'origin-framing',
  'origin-chunked',
  'origin-busy',
  'forward-invalid',
  'forward-memory',
  'origin-timeout',
  'client-closed',
] as const;
export type ForwardError = (typeof ERRORS)[number];
export const FLAG = { KEEP_ALIVE: 1, HTTP10: 2, HEAD: 4, V6: 8 } as const;

interface Binding {
  listen(
    options: {
      host: string;
      port: number;
      reusePort: boolean;
      batch: number;
      maxConnections: number;
      maxOriginConnections: number;
      peekEveryReuse: boolean;
      rx: Buffer;
      meta: Int32Array;
      tx: Buffer;
      done: Int32Array | undefined;
      failToJs: boolean;
    },
    onBatch: (count: number, done: number) => void,
  ): { handle: object; port: number };
  respond(handle: object, slot: number, gen: number, bytes: Uint8Array, close?: boolean): boolean;
  addOrigin(handle: object, host: string, port: number, poolSize: number): number;
  forward(
    handle: object,
    slot: number,
    gen: number,
    origin: number,
    head: Uint8Array,
    add?: Uint8Array,
    dropLen?: number,
  ): boolean;
  cancel(handle: object, slot: number, gen: number): boolean;
  close(handle: object): void;
  META_FIELDS: number;
  DONE_FIELDS: number;
  MAX_HEAD: number;
  MAX_FIELDS: number;
}

/** Where scripts/setup.mjs builds the module (node-gyp), when it can. */
export const HTTP_FRONT_MODULE = fileURLToPath(new URL('./build/Release/http_front.node', import.meta.url));

let binding: Binding | null | undefined;

/** The module, or null when it has not been built (it is optional: a failed build does not fail setup). */
export function loadHttpFront(): Binding | null {
  if (binding !== undefined) return binding;
  try {
    binding = createRequire(import.meta.url)(HTTP_FRONT_MODULE) as Binding;
  } catch {
    binding = null;
    return null;
  }
  if (binding.META_FIELDS !== FIELDS) throw new Error(`http-front: META_FIELDS ${binding.META_FIELDS}, not ${FIELDS}`);
  if (binding.DONE_FIELDS !== DONE_FIELDS)
    throw new Error(`http-front: DONE_FIELDS ${binding.DONE_FIELDS}, not ${DONE_FIELDS}`);
  return binding;
}

export interface FrontOptions {
  host: string;
  /** 0: any free port. */
  port: number;
  /** SO_REUSEPORT: several processes on one port. */
  reusePort?: boolean;
  /** Requests per call into JavaScript (default 64). */
  batch?: number;
  maxConnections?: number;
  /** Open connections to origins, all origins together (default 1024). */
  maxOriginConnections?: number;
  /**
   * Peek at every pooled origin connection when it is taken (a syscall per request). Default false: only a request
   * other than GET and HEAD, or a connection no complete epoll_wait has seen since it went idle, is peeked.
   */
  peekEveryReuse?: boolean;
  /** Bytes of answers one batch may leave in tx (default: 2 KiB per request of a batch, at least 64 KiB). */
  txSize?: number;
  /**
   * Keep a completion record per forwarded request (Front.done, onBatch's second argument). Its capacity is
   * maxConnections + batch records: each connection has one forwarded request at a time, and every call hands over
   * what was recorded.
   */
  records?: boolean;
  /** With records: a forward failing before any byte reached the client waits for respond() (D.WAITING), no 502. */
  failToJs?: boolean;
}

export interface Front {
  readonly port: number;
  readonly rx: Buffer;
  readonly meta: Int32Array;
  readonly tx: Buffer;
  /** Completion records (DONE_FIELDS each; empty without `records`). */
  readonly done: Int32Array;
  /**
   * Answers a request left waiting (`close`: then closes the connection; no bytes: closes it now); false when its
   * connection is gone or holds no waiting request.
   */
  respond(slot: number, gen: number, bytes: Uint8Array, close?: boolean): boolean;
  /**
   * An origin (IPv4 or IPv6 address and port) with a pool of at most poolSize open keep-alive connections; returns
   * its index for M.ORIGIN and forward().
   */
  addOrigin(host: string, port: number, poolSize: number): number;
  /** Forwards a request left waiting to an origin with this request head; false when its connection is gone. */
  /** `add`: lines added to the answer's head, after `dropLen` bytes of names to drop from it (as M.DROP_LEN). */
  forward(slot: number, gen: number, origin: number, head: Uint8Array, add?: Uint8Array, dropLen?: number): boolean;
  /** Ends a forwarded request whose answer's head has not come as origin-timeout; false when there is none. */
  cancel(slot: number, gen: number): boolean;
  close(): void;
}

/** Listens; onBatch(n) is called with n parsed requests and answers them in tx and meta (see the top). */
export function listenFront(o: FrontOptions, onBatch: (count: number, done: number) => void): Front {
  const b = loadHttpFront();
  if (b === null)
    throw new Error(
      `the http-front module is not built (${HTTP_FRONT_MODULE}): run \`npm run setup\` (needs a C compiler, make and python3)`,
    );
  const batch = o.batch ?? 64;
  const rx = Buffer.allocUnsafeSlow(Math.max(3, batch) * b.MAX_HEAD);
  const meta = new Int32Array(batch * FIELDS);
  const tx = Buffer.allocUnsafeSlow(o.txSize ?? Math.max(64 * 1024, batch * 2048));
  const maxConnections = o.maxConnections ?? 16384;
  const done = new Int32Array(o.records ? (maxConnections + batch) * DONE_FIELDS : 0);
  const { handle, port } = b.listen(
    {
      host: o.host,
      port: o.port,
      reusePort: o.reusePort ?? false,
      batch,
      maxConnections,
      maxOriginConnections: o.maxOriginConnections ?? 1024,
      peekEveryReuse: o.peekEveryReuse ?? false,
      rx,
      meta,
      tx,
      done: o.records ? done : undefined,
      failToJs: o.failToJs ?? false,
    },
    onBatch,
  );
  let open = true;
  return {
    port,
    rx,
    meta,
    tx,
    done,
    respond: (slot, gen, bytes, close) =>
      open && (close === undefined ? b.respond(handle, slot, gen, bytes) : b.respond(handle, slot, gen, bytes, close)),
    addOrigin: (host, port, poolSize) => b.addOrigin(handle, host, port, poolSize),
    forward: (slot, gen, origin, head, add, dropLen) =>
      open &&
      (add === undefined
        ? b.forward(handle, slot, gen, origin, head)
        : b.forward(handle, slot, gen, origin, head, add, dropLen ?? 0)),
    cancel: (slot, gen) => open && b.cancel(handle, slot, gen),
    close() {
      if (!open) return;
      open = false;
      b.close(handle);
    },
  };
}
