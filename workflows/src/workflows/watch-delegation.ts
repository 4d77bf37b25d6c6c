// Background delegation check of a new managed domain (id `domain-delegation:<domain>`): asks the resolvers for
// the domain's NS set with a doubling backoff until the control plane reports it active (or no longer pending).
import { log, sleep } from '@temporalio/workflow';
import type { Backoff } from '../types.js';
import { background, nextDelay } from './proxies.js';

export interface WatchDelegationInput {
  domain: string;
  backoff: Backoff;
}

/** Returns the state the domain ended in: `active`, another non-pending state, `deleted`, or `gave-up`. */
export async function watchDelegation(input: WatchDelegationInput): Promise<string> {
  const { domain, backoff } = input;
  const started = Date.now();
  let delay = backoff.initialMs;
  for (;;) {
    const observations = await background.lookupNameservers(domain);
    const result = await background.reportDelegation(domain, observations, false);
    if (!result) return 'deleted';
    if (result.state !== 'pending') {
      log.info('delegation watch finished', { domain, state: result.state });
      return result.state;
    }
    if (Date.now() - started + delay > backoff.giveUpAfterMs) {
      log.info('delegation watch gave up; POST check-ns still activates the domain', { domain });
      return 'gave-up';
    }
    await sleep(delay);
    delay = nextDelay(delay, backoff.maxMs);
  }
}
