// Starting a worker thread from a module beside the caller, whether the process runs the TypeScript sources (tsx) or
// compiled JavaScript.
import { Worker, type WorkerOptions } from 'node:worker_threads';

/**
 * Starts `./<name>.ts` (under tsx, whose loader is registered in the thread first) or `./<name>.js` next to the module
 * whose `import.meta.url` is `callerUrl`.
 */
export function startModuleWorker(callerUrl: string, name: string, options?: WorkerOptions): Worker {
  const fromSource = callerUrl.endsWith('.ts');
  const entry = new URL(`./${name}${fromSource ? '.ts' : '.js'}`, callerUrl);
  if (!fromSource) return new Worker(entry, options);
  const code = `import { register } from ${JSON.stringify(import.meta.resolve('tsx/esm/api'))}; register();
    await import(${JSON.stringify(entry.href)});`;
  return new Worker(new URL(`data:text/javascript,${encodeURIComponent(code)}`), options);
}
