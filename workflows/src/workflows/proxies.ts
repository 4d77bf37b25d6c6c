// Activity proxies shared by the workflows, with the timeouts and retry policies each kind of call needs.
import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';

/** DNS lookups and control-plane reports of background workflows: retried until they succeed. */
export const background = proxyActivities<Activities>({
  startToCloseTimeout: '2 minutes',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
});

/** Calls of a check a user is waiting for (check-ns, verify, ssl delegation check): fail fast. */
export const interactive = proxyActivities<Activities>({
  startToCloseTimeout: '20 seconds',
  retry: { initialInterval: '500 milliseconds', backoffCoefficient: 2, maximumAttempts: 3 },
});

/** Next interval of a doubling backoff. */
export function nextDelay(current: number, maxMs: number): number {
  return Math.min(current * 2, maxMs);
}
