// Runs one benchmark row against two servers in turn, request by request (alternating which goes first), so a burst
// of load from other processes on a shared machine hits both; records wall time and the servers' CPU per operation.
import { performance } from 'node:perf_hooks';

export interface HttpResult {
  status: number;
  body: string;
}

/** One HTTP request; the timed span ends when the whole body has arrived (parsing it is the caller's, untimed). */
export async function request(
  url: string,
  method: string,
  headers: Record<string, string>,
  body?: unknown,
): Promise<HttpResult> {
  const res = await fetch(url, {
    method,
    headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
  });
  return { status: res.status, body: await res.text() };
}

export function expectStatus(what: string, r: HttpResult, status: number): HttpResult {
  if (r.status !== status) throw new Error(`${what}: ${r.status} ${r.body.slice(0, 300)}`);
  return r;
}

export interface Side {
  /** Sends operation i; resolves when the answer is complete. Throws on a wrong answer. */
  op(i: number): Promise<HttpResult>;
  /** Untimed, after op i: checks the answer and undoes the change so every operation starts from the same state. */
  after?(i: number, answer: HttpResult): Promise<void>;
}

export interface Server {
  name: string;
  /** CPU ms used so far by the server under test (and its database when that is a separate server). */
  cpuMs(): number;
  /** The database server's part of cpuMs, when it is a separate server. */
  databaseCpuMs?(): number;
}

export interface SideResult {
  ms: number[];
  cpuMsPerOp: number;
  databaseCpuMsPerOp?: number;
}

export interface RowOptions {
  /** Operations per side that are measured, after `warmup` that are not. */
  count: number;
  warmup: number;
  /** Pause after each operation before reading the CPU, so work the server does after answering is counted. */
  settleMs: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function runPairedRow(
  servers: [Server, Server],
  sides: [Side, Side],
  { count, warmup, settleMs }: RowOptions,
): Promise<[SideResult, SideResult]> {
  const ms: [number[], number[]] = [[], []];
  const cpu = [0, 0];
  const dbCpu = [0, 0];
  const dbCpuMs = (s: number) => servers[s]!.databaseCpuMs?.() ?? 0;
  for (let i = 0; i < warmup + count; i++) {
    for (const s of i % 2 === 0 ? [0, 1] : [1, 0]) {
      const c0 = servers[s]!.cpuMs();
      const d0 = dbCpuMs(s);
      const t0 = performance.now();
      const answer = await sides[s]!.op(i);
      const elapsed = performance.now() - t0;
      await sleep(settleMs);
      const used = servers[s]!.cpuMs() - c0;
      const usedByDb = dbCpuMs(s) - d0;
      if (i >= warmup) {
        ms[s]!.push(elapsed);
        cpu[s]! += used;
        dbCpu[s]! += usedByDb;
      }
      await sides[s]!.after?.(i, answer);
    }
  }
  return [0, 1].map((s) => ({
    ms: ms[s]!,
    cpuMsPerOp: cpu[s]! / count,
    ...(servers[s]!.databaseCpuMs ? { databaseCpuMsPerOp: dbCpu[s]! / count } : {}),
  })) as [SideResult, SideResult];
}

/** The value below which p percent of the samples fall (nearest rank). */
export function percentile(samples: number[], p: number): number {
  const s = [...samples].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
}

/** Milliseconds of each of `runs` sequential calls of `fn`, after one call not counted (warm-up). */
export async function timeRuns(fn: () => Promise<unknown>, runs: number): Promise<number[]> {
  await fn();
  const out: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    await fn();
    out.push(performance.now() - t0);
  }
  return out;
}
