// The edge side of the optimize rule's HTML thread: bodies of THREAD_MIN_BYTES and more are minified or converted off
// the event loop (up to 32-93 ms for 1 MiB on the event loop otherwise: bench/RESULTS.md), one at a time, in order.
// Bounded: at most MAX_QUEUED_BYTES waiting; past that, or if the thread died, the answer goes out unchanged.
import { Worker } from 'node:worker_threads';

/** Smaller bodies are cheaper inline (about 0.3 ms for 20 KiB) than the copy and the hop to the thread. */
export const THREAD_MIN_BYTES = 64 * 1024;
/** Bytes of bodies queued for the thread at most (16 answers of the largest size). */
const MAX_QUEUED_BYTES = 16 * 1024 * 1024;

let worker: Worker | undefined;
let nextId = 0;
let queuedBytes = 0;
const pending = new Map<number, { bytes: number; done: (out: Buffer | undefined) => void }>();

/** Starts the thread; under tsx (TypeScript sources) it registers tsx's loader in the thread first. */
function spawn(): Worker {
  const fromSource = import.meta.url.endsWith('.ts');
  const entry = new URL(fromSource ? './optimize-thread.ts' : './optimize-thread.js', import.meta.url);
  if (!fromSource) return new Worker(entry);
  const code = `import { register } from ${JSON.stringify(import.meta.resolve('tsx/esm/api'))}; register();
    await import(${JSON.stringify(entry.href)});`;
  return new Worker(new URL(`data:text/javascript,${encodeURIComponent(code)}`));
}

function settle(id: number, out: Buffer | undefined): void {
  const p = pending.get(id);
  if (!p) return;
  pending.delete(id);
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

/** The minified HTML or Markdown of `body` from the thread, or undefined (send the original). */
export function onHtmlThread(
  kind: 'html' | 'markdown',
  body: Buffer,
  charset: string | undefined,
): Promise<Buffer | undefined> {
  if (queuedBytes + body.length > MAX_QUEUED_BYTES) return Promise.resolve(undefined);
  const id = nextId++;
  queuedBytes += body.length;
  return new Promise((done) => {
    pending.set(id, { bytes: body.length, done });
    const w = thread();
    if (pending.size === 1) w.ref(); // a job in flight keeps the process up until it is answered
    // Copied, not transferred: the body's memory may be shared with the HTTP client's buffers.
    w.postMessage({ id, kind, body, charset });
  });
}
