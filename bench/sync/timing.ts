// Timing helpers of the sync benchmarks: percentiles of a sample, and waiting for a DNS node's new answer.
import { performance } from 'node:perf_hooks';
import type { DnsProbe } from './dns-probe.js';

/** How long a benchmark waits for one answer before it gives up. */
export const POLL_LIMIT_MS = Number(process.env.POLL_LIMIT_MS ?? 10_000);

export function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

export function summary(label: string, ms: number[]) {
  const s = [...ms].sort((a, b) => a - b);
  return {
    case: label,
    n: s.length,
    p50_ms: +percentile(s, 50).toFixed(2),
    p90_ms: +percentile(s, 90).toFixed(2),
    p99_ms: +percentile(s, 99).toFixed(2),
    max_ms: +s[s.length - 1]!.toFixed(2),
  };
}

/** Polls the DNS node (back to back, 1 ms apart) until `name` answers `address`; returns the time of that answer. */
export async function waitForAnswer(
  probe: DnsProbe,
  name: string,
  address: string,
  limitMs = POLL_LIMIT_MS,
): Promise<number> {
  const end = performance.now() + limitMs;
  while (performance.now() < end) {
    if (await probe.answers(name, address)) return performance.now();
    await new Promise((r) => setTimeout(r, 1));
  }
  throw new Error(`${name} never answered ${address}`);
}
