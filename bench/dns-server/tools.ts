// Shared by the DNS load benchmarks (dnsperf.ts, dnssec-dnsperf.ts, amplification.ts): Debian tools installed on
// demand, free ports, NSD's configuration, stopping child processes, and a server's CPU time from /proc.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export function ensureTools(tools = ['nsd', 'dnsperf', 'taskset']): void {
  const missing = tools.filter((t) => spawnSync('sh', ['-c', `command -v ${t}`]).status !== 0);
  if (missing.length === 0) return;
  const pkgs = missing.map((t) => (t === 'taskset' ? 'util-linux' : t === 'knotd' ? 'knot' : t));
  console.log(`installing ${pkgs.join(' ')} with apt-get`);
  const sudo = process.getuid?.() === 0 ? [] : ['sudo'];
  spawnSync([...sudo, 'apt-get', 'update'].join(' '), { shell: true, stdio: 'inherit' });
  const r = spawnSync(
    [...sudo, 'env', 'DEBIAN_FRONTEND=noninteractive', 'apt-get', 'install', '-y', ...pkgs].join(' '),
    { shell: true, stdio: 'inherit' },
  );
  if (r.status !== 0) throw new Error(`could not install ${pkgs.join(' ')}`);
}

export async function freePort(): Promise<number> {
  for (;;) {
    const port = await new Promise<number>((resolve) => {
      const s = createServer().listen(0, '127.0.0.1', () => {
        const p = (s.address() as { port: number }).port;
        s.close(() => resolve(p));
      });
    });
    const udpFree = await new Promise<boolean>((resolve) => {
      const u = createSocket('udp4');
      u.once('error', () => resolve(false));
      u.bind(port, '127.0.0.1', () => u.close(() => resolve(true)));
    });
    if (udpFree) return port;
  }
}

export async function stop(proc: ChildProcess): Promise<void> {
  if (proc.exitCode !== null || proc.signalCode !== null) return;
  const exited = new Promise((r) => proc.once('exit', r));
  proc.kill('SIGTERM');
  await exited;
}

/** nsd.conf for one zone served from `dir` on 127.0.0.1:`port`; rrl = rrl-ratelimit (0: off), slip 2, /24. */
export function nsdConfig(dir: string, tag: string, port: number, zone: string, servers: number, rrl: number): string {
  return [
    'server:',
    `  ip-address: 127.0.0.1@${port}`,
    `  port: ${port}`,
    '  username: ""',
    '  chroot: ""',
    `  zonesdir: "${dir}"`,
    `  pidfile: "${dir}/nsd-${tag}.pid"`,
    `  zonelistfile: "${dir}/zone-${tag}.list"`,
    `  xfrdfile: "${dir}/xfrd-${tag}.state"`,
    `  xfrdir: "${dir}"`,
    '  database: ""',
    `  server-count: ${servers}`,
    '  verbosity: 0',
    `  logfile: "${dir}/nsd.log"`,
    '  hide-version: yes',
    '  reuseport: yes',
    '  minimal-responses: yes',
    // Response rate limiting is on by default in Debian's build (200 qps per /24, slip 2); 0 turns it off.
    `  rrl-ratelimit: ${rrl}`,
    '  rrl-slip: 2',
    '  rrl-ipv4-prefix-length: 24',
    `  rrl-whitelist-ratelimit: ${rrl}`,
    '  receive-buffer-size: 4194304',
    'remote-control:',
    '  control-enable: no',
    'zone:',
    `  name: ${zone}`,
    `  zonefile: ${zone}.zone`,
    '',
  ].join('\n');
}

/** Runs a benchmark with a fresh temp dir and a list of the child processes it starts; afterwards every process is
 *  stopped and the dir removed, and an error exits 1. */
export function runBench(prefix: string, body: (dir: string, procs: ChildProcess[]) => Promise<void>): void {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const procs: ChildProcess[] = [];
  body(dir, procs)
    .finally(async () => {
      for (const p of procs) await stop(p);
      rmSync(dir, { recursive: true, force: true });
    })
    .catch((err) => {
      console.error(err);
      process.exit(1);
    });
}

/**
 * CPU time (ms, user + system) used so far by `pid` and every process below it, from /proc (Linux; children already
 * reaped count through cutime/cstime). Whatever the machine's load, this is what the server spent.
 */
export function cpuMs(pid: number): number {
  const t = cpuTimesMs(pid);
  return t.user + t.system;
}

/** cpuMs split into user and system (kernel) time, ms. */
export function cpuTimesMs(pid: number): { user: number; system: number } {
  let user = 0;
  let system = 0;
  for (const p of processTree(pid)) {
    user += p.user;
    system += p.system;
  }
  return { user: user * 10, system: system * 10 }; // USER_HZ = 100
}

/** `pid` and every process below it, with their CPU ticks (utime + cutime, stime + cstime), from /proc. */
function processTree(pid: number): Array<{ pid: number; user: number; system: number }> {
  const stats = new Map<number, { ppid: number; user: number; system: number }>();
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const st = readFileSync(`/proc/${d}/stat`, 'utf8');
      const f = st.slice(st.lastIndexOf(')') + 2).split(' '); // f[0] is field 3 (state)
      stats.set(Number(d), {
        ppid: Number(f[1]),
        user: Number(f[11]) + Number(f[13]),
        system: Number(f[12]) + Number(f[14]),
      });
    } catch {
      // gone meanwhile
    }
  }
  const out: Array<{ pid: number; user: number; system: number }> = [];
  const todo = [pid];
  while (todo.length > 0) {
    const p = todo.pop()!;
    const st = stats.get(p);
    if (st) out.push({ pid: p, user: st.user, system: st.system });
    for (const [child, v] of stats) if (v.ppid === p) todo.push(child);
  }
  return out;
}

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
}

/** Runs `cmd` in the background (a load generator beside another); its stdout and the CPU time (ms) `server` used
 *  meanwhile. */
export function runBeside(cmd: string[], server: number): Promise<{ out: string; serverCpuMs: number }> {
  const cpu0 = cpuMs(server);
  const p = spawn(cmd[0], cmd.slice(1), { stdio: ['ignore', 'pipe', 'ignore'] });
  let out = '';
  p.stdout.on('data', (d) => (out += d));
  return new Promise((resolve) => p.once('close', () => resolve({ out, serverCpuMs: cpuMs(server) - cpu0 })));
}

/** What perf saw of one server while a load ran (perfWhile). */
export interface PerfProfile {
  /** perf stat counts by event name. */
  counts: Map<string, number>;
  /** perf report's top entries by self time, "percent dso symbol" lines. */
  top: string[];
  /** Self time by binary ("percent dso" lines): the kernel, the program, libc, a JIT's code. */
  byDso: string[];
}

/**
 * `perf stat` (`events`) and `perf record -g` attached to `pid` and the processes below it (NSD answers from a
 * child) for `seconds`, in the background (root, or
 * perf_event_paranoid low enough; tracepoint events need tracefs). For a JIT's symbols the process writes its own
 * /tmp/perf-PID.map (node --perf-basic-prof).
 */
export function perfWhile(pid: number, seconds: number, events: string[], dir: string): Promise<PerfProfile> {
  const stat = join(dir, `perf-stat-${pid}.csv`);
  const data = join(dir, `perf-${pid}.data`);
  const run = (args: string[]) =>
    new Promise<void>((resolve) => spawn('perf', args, { stdio: 'ignore' }).once('close', () => resolve()));
  const sleep = ['--', 'sleep', String(seconds)];
  const pids = processTree(pid)
    .map((p) => p.pid)
    .join(',');
  return Promise.all([
    run(['stat', '-x', ',', '-o', stat, '-e', events.join(','), '-p', pids, ...sleep]),
    run(['record', '-F', '499', '-g', '-q', '-o', data, '-p', pids, ...sleep]),
  ]).then(() => {
    const counts = new Map<string, number>();
    for (const line of readFileSync(stat, 'utf8').split('\n')) {
      const f = line.split(',');
      if (f.length > 3 && f[0] !== '' && !line.startsWith('#')) counts.set(f[2], Number(f[0]));
    }
    const report = spawnSync(
      'perf',
      ['report', '-i', data, '--no-children', '--sort', 'dso,sym', '--stdio', '-g', 'none', '--percent-limit', '0.5'],
      { encoding: 'utf8', maxBuffer: 1 << 26 },
    ).stdout;
    const top = report
      .split('\n')
      .filter((l) => l.trim() !== '' && !l.startsWith('#'))
      .map((l) => l.trim().replace(/\s+/g, ' '));
    const byDso = spawnSync('perf', ['report', '-i', data, '--no-children', '--sort', 'dso', '--stdio', '-g', 'none'], {
      encoding: 'utf8',
      maxBuffer: 1 << 26,
    })
      .stdout.split('\n')
      .filter((l) => l.trim() !== '' && !l.startsWith('#'))
      .map((l) => l.trim().replace(/\s+/g, ' '));
    return { counts, top, byDso };
  });
}
