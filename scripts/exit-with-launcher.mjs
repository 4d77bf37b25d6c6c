// Preloaded into every process `npm start` runs (node --import). The launcher holds the write end of this
// process's stdin; when the launcher dies, even by SIGKILL, the pipe closes and this process stops itself.
// Worker threads load preloads too: only the main thread watches.
import { isMainThread } from 'node:worker_threads';

const stdin = isMainThread ? process.stdin : undefined;
if (stdin && typeof stdin.unref === 'function') {
  stdin.on('error', () => undefined);
  stdin.on('data', () => undefined);
  stdin.once('close', () => process.kill(process.pid, 'SIGTERM'));
  stdin.unref();
}
