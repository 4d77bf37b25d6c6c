// Generated request logs for the analytics tests: a deterministic generator and the record as an edge node ships it
// (POST /internal/request-logs).

/** A deterministic generator: the same log on every run. */
export function lcg(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}
export const pick = <T>(r: () => number, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)];

/** One shipped record (the fields the tests set). */
export interface Rec {
  t: number;
  host: string;
  path: string;
  method: string;
  status: number;
  bytes: number;
  cache: string;
  rules: [number, string, boolean][];
  ms: number;
  upstreamMs: number;
  peer: string;
}
