// Runs one function in several processes at the same moment, to test what processes started together (cluster
// workers) do to shared files.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Starts `processes` Node processes that each import `modulePath` and, once all have loaded (each marks itself ready
 * in a barrier directory and waits, at most 60 s, for the others), call its export `exportName` with `args`;
 * resolves with what each call returned (JSON).
 */
export async function callInProcessesAtOnce<T>(
  processes: number,
  modulePath: string,
  exportName: string,
  args: unknown[],
): Promise<T[]> {
  const barrier = mkdtempSync(join(tmpdir(), 'at-once-'));
  const script = (i: number) => `import { ${exportName} as call } from ${JSON.stringify(modulePath)};
import { readdirSync, writeFileSync } from 'node:fs';
writeFileSync(${JSON.stringify(join(barrier, String(i)))}, '');
const end = Date.now() + 60000;
while (readdirSync(${JSON.stringify(barrier)}).length < ${processes} && Date.now() < end)
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1);
process.stdout.write(JSON.stringify(call(...${JSON.stringify(args)}) ?? null));`;
  try {
    return await Promise.all(
      Array.from(
        { length: processes },
        (_, i) =>
          new Promise<T>((resolve, reject) => {
            const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script(i)], {
              stdio: ['ignore', 'pipe', 'inherit'],
            });
            let out = '';
            child.stdout.on('data', (d) => (out += d));
            child.on('error', reject);
            child.on('exit', (code) =>
              code === 0 ? resolve(JSON.parse(out) as T) : reject(new Error(`exit ${code}`)),
            );
          }),
      ),
    );
  } finally {
    rmSync(barrier, { recursive: true, force: true });
  }
}
