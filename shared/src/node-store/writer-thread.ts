// The node store's writer thread: large batches (a zone import, a late node's snapshot) are split and written here in
// one LMDB transaction, so that the thread that serves keeps answering from the last committed state meanwhile.
// It opens the same LMDB environment as the store (lmdb-js shares one environment per path within a process).
import { parentPort, workerData } from 'node:worker_threads';
import { open } from 'lmdb';
import { componentLogger } from '../logger.js';
import { openDatabases, storeWriter } from './writer.js';
import type { ToWriter, FromWriter, WriterData } from './writer-protocol.js';

const data = workerData as WriterData;
const root = open({ path: data.path, noMetaSync: data.durability !== 'full', noSync: data.durability === 'none' });
const writer = storeWriter(root, openDatabases(root), componentLogger('node-store'));
const port = parentPort!;

port.on('message', (msg: ToWriter) => {
  if (msg.type === 'close') {
    void root.close().then(() => port.postMessage({ type: 'closed' } satisfies FromWriter));
    return;
  }
  try {
    const bytes = new Uint8Array(msg.buffer);
    const entries: Uint8Array[] = [];
    for (let i = 0; i < msg.ends.length; i++) entries.push(bytes.subarray(i === 0 ? 0 : msg.ends[i - 1]!, msg.ends[i]));
    const written = writer.applyBatch(entries).map((w) => ({ ...w, recordIds: Float64Array.from(w.recordIds) }));
    const reply: FromWriter = { type: 'written', id: msg.id, written };
    port.postMessage(
      reply,
      written.map((w) => w.recordIds.buffer),
    );
  } catch (err) {
    const e = err as Error;
    port.postMessage({ type: 'failed', id: msg.id, message: e.message, stack: e.stack } satisfies FromWriter);
  }
});
