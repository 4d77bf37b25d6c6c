// Child processes of the test harnesses: project scripts started as a user starts them, and stopping them.
import { spawn, type ChildProcess } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** Sends `signal` and resolves once the process has exited; at once if it has already exited. */
export async function stopProcess(proc: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  if (proc.exitCode !== null || proc.signalCode !== null) return;
  const exited = new Promise((r) => proc.once('exit', r));
  proc.kill(signal);
  await exited;
}

/** A project script (`node --import tsx <script>`) started, stopped and started again as a user does; output kept. */
export class ScriptProcess {
  proc?: ChildProcess;
  out = '';
  constructor(
    private readonly script: string,
    private readonly env: () => Record<string, string>,
  ) {}
  start(): ChildProcess {
    this.out = '';
    const p = spawn(process.execPath, ['--import', 'tsx', join(ROOT, this.script)], {
      cwd: ROOT,
      env: { ...process.env, NODE_ENV: 'test', LOG_LEVEL: 'warn', ...this.env() },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    p.stdout!.on('data', (d) => {
      this.out = (this.out + d).slice(-20_000);
    });
    p.stderr!.on('data', (d) => {
      this.out = (this.out + d).slice(-20_000);
    });
    this.proc = p;
    return p;
  }
  get running(): boolean {
    return !!this.proc && this.proc.exitCode === null && this.proc.signalCode === null;
  }
  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    const p = this.proc;
    if (!p || p.exitCode !== null || p.signalCode !== null) return;
    const exited = new Promise((r) => p.once('exit', r));
    p.kill(signal);
    const timer = setTimeout(() => p.kill('SIGKILL'), 15_000);
    await exited;
    clearTimeout(timer);
  }
}
