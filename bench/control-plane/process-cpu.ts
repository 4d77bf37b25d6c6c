// CPU time of a server under test, read from /proc (Linux): a process with all its threads, or a process and all its
// children (a Postgres cluster: the postmaster forks one backend per connection plus its background workers).
import { readdirSync, readFileSync } from 'node:fs';

const TICK_MS = 10; // USER_HZ is 100 on every Linux we run on (`getconf CLK_TCK`)

interface Stat {
  ppid: number;
  /** utime + stime of the process (all its threads), ms. */
  own: number;
  /** cutime + cstime: children that have exited and been waited for, ms. */
  reaped: number;
  cmd: string;
}

function readStat(pid: number): Stat | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined; // exited meanwhile
  }
  // The command name is in parentheses and may contain spaces; the fields after it are space-separated.
  const close = text.lastIndexOf(')');
  const f = text.slice(close + 2).split(' ');
  // Fields after the name, 0-based: 1 ppid, 11 utime, 12 stime, 13 cutime, 14 cstime.
  return {
    ppid: Number(f[1]),
    own: (Number(f[11]) + Number(f[12])) * TICK_MS,
    reaped: (Number(f[13]) + Number(f[14])) * TICK_MS,
    cmd: text.slice(text.indexOf('(') + 1, close),
  };
}

function allPids(): number[] {
  return readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .map(Number);
}

/** CPU ms (user + system, every thread) the process has used so far. */
export function processCpuMs(pid: number): number {
  const s = readStat(pid);
  if (!s) throw new Error(`process ${pid} is gone`);
  return s.own;
}

/** CPU ms of a process, its live children and its reaped children (for a Postgres postmaster: the whole cluster). */
export function processTreeCpuMs(pid: number): number {
  const root = readStat(pid);
  if (!root) throw new Error(`process ${pid} is gone`);
  let total = root.own + root.reaped;
  for (const child of allPids()) {
    const s = child === pid ? undefined : readStat(child);
    if (s?.ppid === pid) total += s.own;
  }
  return total;
}

/** The pid of a direct child of `parent` whose command line contains `needle` (e.g. a script path). */
export function findChildPid(parent: number, needle: string): number {
  for (const pid of allPids()) {
    if (readStat(pid)?.ppid !== parent) continue;
    let cmdline = '';
    try {
      cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
    } catch {
      continue;
    }
    if (cmdline.includes(needle)) return pid;
  }
  throw new Error(`no child of ${parent} runs ${needle}`);
}
