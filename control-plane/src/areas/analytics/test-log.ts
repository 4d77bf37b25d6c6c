// Generated request logs for the analytics tests: a deterministic generator and the record as an edge node ships it
// (POST /internal/request-logs).
import type { ShippedRecord } from '../../internal/request-logs.js';

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
export type Rec = Omit<ShippedRecord, 'waf' | 'fp' | 'bot' | 'botClass'>;
