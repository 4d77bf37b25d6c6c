// DNSSEC key rollovers of one zone (id `dnssec-rollover:<domain>`, started when DNSSEC is turned on): a durable
// timer that asks the control plane to do what is due (control-plane/src/areas/dnssec/rollover.ts: publish a new key,
// switch signing to it, retire and remove the old one) and sleeps until the step it names. Ends when DNSSEC is off
// or the domain is gone.
import { continueAsNew, log, sleep } from '@temporalio/workflow';
import { background } from './proxies.js';

/** Steps of one run before its history is carried into a fresh one. */
const STEPS_PER_RUN = 50;
/** The longest sleep between two looks (a clock or schedule change on the control plane is seen within it). */
const MAX_SLEEP_MS = 7 * 86_400_000;

export async function rollDnssecKeys(input: { domain: string }): Promise<string> {
  for (let step = 0; step < STEPS_PER_RUN; step++) {
    const reply = await background.rollDnssecKeys(input.domain);
    if (!reply) return 'deleted';
    if (!reply.enabled || reply.next_at_ms === null) return 'disabled';
    const wait = Math.min(Math.max(reply.next_at_ms - Date.now(), 1000), MAX_SLEEP_MS);
    log.info('dnssec rollover step', { domain: input.domain, nextAtMs: reply.next_at_ms });
    await sleep(wait);
  }
  return continueAsNew<typeof rollDnssecKeys>(input);
}
