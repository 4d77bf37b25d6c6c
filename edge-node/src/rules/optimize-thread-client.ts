// The edge side of the optimize rule's thread: HTML and CSS bodies of THREAD_MIN_BYTES and more, and every script,
// are transformed off the event loop (up to 30-110 ms for 1 MiB of HTML on the event loop otherwise:
// bench/RESULTS.md), in order. Bounded: at most MAX_QUEUED_BYTES waiting, and an answer waits at most JOB_TIMEOUT_MS
// (then the thread is ended and a new one started); past either, or if the thread died, the answer goes out unchanged.
import type { Worker } from 'node:worker_threads';
import { startModuleWorker } from '@platform/shared/worker-thread';
import type { WorkKind } from './optimize-work.js';

/** Smaller bodies are cheaper inline (about 0.3 ms for 20 KiB) than the copy and the hop to the thread. */
export const THREAD_MIN_BYTES = 64 * 1024;
/** Bytes of bodies queued for the thread at most (16 answers of the largest size). */
const MAX_QUEUED_BYTES = 16 * 1024 * 1024;
/** How long an answer waits for its transformation at most (a body a library is slow on cannot hold the others). */
const JOB_TIMEOUT_MS = 5000;

let worker: Worker | undefined;
let nextId = 0;
let queuedBytes = 0;
const pending = new Map<
  number,
  { bytes: number; timer: ReturnType<typeof setTimeout>; done: (out: Buffer | undefined) => void }
>();

function spawn(): Worker {
  return startModuleWorker(import.meta.url, 'optimize-thread');
}

function settle(id: number, out: Buffer | undefined): void {
  const p = pending.get(id);
  if (!p) return;
  pending.delete(id);
  clearTimeout(p.timer);
  queuedBytes -= p.bytes;
  if (pending.size === 0) worker?.unref(); // idle: the thread holds no process open
  p.done(out);
}

function thread(): Worker {
  if (!worker) {
    const w = spawn();
    w.on('message', (m: { id: number; out: Uint8Array | null }) =>
      settle(m.id, m.out ? Buffer.from(m.out.buffer, m.out.byteOffset, m.out.byteLength) : undefined),
    );
    w.on('error', () => undefined);
    w.on('exit', () => {
      // A dead thread sends its waiting answers unchanged; the next body starts a new one.
      for (const id of [...pending.keys()]) settle(id, undefined);
      if (worker === w) worker = undefined;
    });
    // After the listeners: a listener added later would hold the process open again.
    w.unref();
    worker = w;
  }
  return worker;
}

/** Ends a thread stuck on one body: its waiting answers go out unchanged (exit handler), the next body starts anew. */
function timedOut(): void {
  void worker?.terminate();
}

/** The transformed `body` from the thread, or undefined (send the original). */
export function onThread(kind: WorkKind, body: Buffer, charset: string | undefined): Promise<Buffer | undefined> {
  if (queuedBytes + body.length > MAX_QUEUED_BYTES) return Promise.resolve(undefined);
  const id = nextId++;
  queuedBytes += body.length;
  return new Promise((done) => {
    pending.set(id, { bytes: body.length, timer: setTimeout(timedOut, JOB_TIMEOUT_MS), done });
    const w = thread();
    if (pending.size === 1) w.ref(); // a job in flight keeps the process up until it is answered
    // Copied, not transferred: the body's memory may be shared with the HTTP client's buffers.
    w.postMessage({ id, kind, body, charset });
  });
}
