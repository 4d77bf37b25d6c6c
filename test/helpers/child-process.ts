// Stopping a child process that a test harness started.
import type { ChildProcess } from 'node:child_process';

/** Sends `signal` and resolves once the process has exited; at once if it has already exited. */
export async function stopProcess(proc: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  if (proc.exitCode !== null || proc.signalCode !== null) return;
  const exited = new Promise((r) => proc.once('exit', r));
  proc.kill(signal);
  await exited;
}
