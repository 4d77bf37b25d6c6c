// The request path's wall clock: a request reads performance.now() when it arrives (server.ts) and again when it is
// logged (its duration); the Unix time the cache and the request log need is derived from the first reading, not
// read again (a cache hit read the clock four times: ~1.7 % of its CPU, bench/RESULTS.md issue 12).
import { performance } from 'node:perf_hooks';

/** How old the offset between the two clocks may get before it is measured again. */
const RESYNC_MS = 1000;

/** Date.now() - performance.now() when last measured, and the performance.now() reading it was measured at. */
let offset = 0;
let measuredAt = Number.NEGATIVE_INFINITY;

/**
 * The Unix time in whole ms of the performance.now() reading `at` (a request's arrival): what Date.now() gave then,
 * or up to a millisecond less (Date.now() is whole ms), never more. The clocks' offset is measured again when `at` is
 * RESYNC_MS past the last measurement (a step of the system clock shows within a second of traffic); otherwise no
 * clock is read. A reading older than the last measurement uses the offset as it is.
 */
export function wallClockAt(at: number): number {
  if (at - measuredAt >= RESYNC_MS) {
    const perf = performance.now();
    offset = Date.now() - perf;
    measuredAt = perf;
  }
  return Math.floor(at + offset);
}
