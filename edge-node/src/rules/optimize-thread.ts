// The optimize rule's thread (started by optimize-thread-client.ts): transforms one body per message and sends the
// result back (transferred, not copied).
import { parentPort } from 'node:worker_threads';
import { work, type WorkKind } from './optimize-work.js';

interface Job {
  id: number;
  kind: WorkKind;
  body: Uint8Array;
  charset: string | undefined;
}

parentPort!.on('message', (m: Job) => {
  work(m.kind, m.body, m.charset).then(
    (out) => {
      // A fresh ArrayBuffer of exactly the result, so the transfer hands over nothing else.
      const copy = out === undefined ? null : new Uint8Array(out);
      parentPort!.postMessage({ id: m.id, out: copy }, copy ? [copy.buffer] : []);
    },
    () => parentPort!.postMessage({ id: m.id, out: null }), // the original is sent
  );
});
