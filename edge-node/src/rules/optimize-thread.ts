// The optimize rule's HTML thread (started by optimize-thread-client.ts): minifies or converts one body per message,
// in order, and sends the result back (transferred, not copied).
import { parentPort } from 'node:worker_threads';
import { htmlWork } from './optimize-html.js';

interface Job {
  id: number;
  kind: 'html' | 'markdown';
  body: Uint8Array;
  charset: string | undefined;
}

parentPort!.on('message', (m: Job) => {
  let out: Buffer | undefined;
  try {
    out = htmlWork(m.kind, m.body, m.charset);
  } catch {
    out = undefined; // the original is sent
  }
  // A fresh ArrayBuffer of exactly the result, so the transfer hands over nothing else.
  const copy = out === undefined ? null : new Uint8Array(out);
  parentPort!.postMessage({ id: m.id, out: copy }, copy ? [copy.buffer] : []);
});
