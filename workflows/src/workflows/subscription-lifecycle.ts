// A subscription's lifecycle (id `subscription:<id>`): durable timers to each moment something is due (the term's
// end, the grace's end, a quota window's close), at which the control plane moves it along (trial → free, expiry →
// renewal from the wallet or grace → expired, period invoices for metered traffic). Signal `subscriptionChanged`
// asks it to judge again at once (auto-renew turned on, the wallet topped up during grace).
import { condition, continueAsNew, defineSignal, log, setHandler } from '@temporalio/workflow';
import { background } from './proxies.js';

export const subscriptionChangedSignal = defineSignal('subscriptionChanged');

/** Judgements before the history is cut with continue-as-new. */
const CYCLES_PER_RUN = 50;
/** A next moment the control plane names in the past is asked again after this (clocks of two machines). */
const MIN_WAIT_MS = 1000;

export async function subscriptionLifecycle(input: { subscriptionId: number }): Promise<string> {
  let changed = false;
  setHandler(subscriptionChangedSignal, () => {
    changed = true;
  });
  for (let cycle = 0; cycle < CYCLES_PER_RUN; cycle++) {
    changed = false;
    const reply = await background.advanceSubscription(input.subscriptionId);
    if (!reply) return 'gone';
    if (reply.next_at_ms === null) {
      log.info('subscription lifecycle ended', { subscriptionId: input.subscriptionId, status: reply.status });
      return reply.status;
    }
    await condition(() => changed, Math.max(reply.next_at_ms - Date.now(), MIN_WAIT_MS));
  }
  return continueAsNew<typeof subscriptionLifecycle>(input);
}
