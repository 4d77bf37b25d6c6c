// Uptime webhook delivery (id `uptime-webhook:<delivery id>`, started through the control plane's workflow outbox):
// the first attempt at once, then at most two retries after 5 and 30 seconds as durable timers, so a worker that
// stops between two attempts resumes the schedule when it starts again. Activities do the HTTP and report each
// attempt to the control plane's deliveries log. The delays are the worker's (UPTIME_WEBHOOK_RETRY_DELAYS_MS, the
// spec's 5 s and 30 s unless set; tests shorten them): each attempt's result carries them into the history.
import { proxyActivities, sleep } from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';
import { WEBHOOK_RETRY_DELAYS_MS } from './retry-schedule.js';

/**
 * One attempt. Retried by Temporal only while the delivery cannot be read from the control plane (nothing was sent
 * yet); once the request went out the activity returns its outcome instead of throwing.
 */
const send = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '10 seconds', maximumAttempts: 5 },
});

/** The attempt's report to the deliveries log: retried until the control plane takes it. */
const report = proxyActivities<Activities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
});

export async function deliverUptimeWebhook(input: { deliveryId: number }): Promise<string> {
  const attempts = WEBHOOK_RETRY_DELAYS_MS.length + 1;
  // A result recorded before attempts carried the worker's schedule (an older history) keeps the spec's.
  let delays: readonly number[] = WEBHOOK_RETRY_DELAYS_MS;
  for (let attempt = 1; attempt <= attempts; attempt++) {
    if (attempt > 1) await sleep(delays[attempt - 2]!);
    const sent = await send.sendUptimeWebhook(input.deliveryId, attempt);
    // The delivery is gone (domain deleted) or already settled: nothing to send.
    if (sent === null) return 'gone';
    const { retryDelaysMs, ...result } = sent;
    if (retryDelaysMs?.length === WEBHOOK_RETRY_DELAYS_MS.length) delays = retryDelaysMs;
    const final = result.outcome !== 'failure' || attempt === attempts;
    await report.recordUptimeWebhookAttempt(input.deliveryId, { ...result, final });
    if (final) return result.outcome === 'success' ? 'delivered' : result.outcome === 'refused' ? 'refused' : 'failed';
  }
  return 'failed';
}
