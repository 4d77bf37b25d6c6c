// Background verification of an external domain (id `domain-verification:<domain>`): looks for the ssl_delegation
// CNAME or the verification TXT with a doubling backoff; when the token expires first, verification fails.
import { log, sleep } from '@temporalio/workflow';
import type { Backoff, SslDelegationBlock, VerificationBlock } from '../types.js';
import { background, nextDelay } from './proxies.js';

export interface AwaitVerificationInput {
  domain: string;
  verification: VerificationBlock | null;
  sslDelegation: SslDelegationBlock | null;
  /** When the TXT token expires (ms since epoch): the domain's verification becomes `failed` then. */
  expiresAtMs: number;
  backoff: Backoff;
}

export async function awaitVerification(input: AwaitVerificationInput): Promise<string> {
  const { domain, backoff } = input;
  let delay = backoff.initialMs;
  for (;;) {
    const remaining = input.expiresAtMs - Date.now();
    if (remaining <= 0) {
      const reply = await background.expireVerification(domain, input.verification?.value ?? '');
      log.info('verification token expired', { domain, verification_state: reply?.verification_state });
      return reply ? `expired:${reply.verification_state ?? ''}` : 'deleted';
    }
    await sleep(Math.min(delay, remaining));
    delay = nextDelay(delay, backoff.maxMs);
    if (input.expiresAtMs - Date.now() <= 0) continue;
    const seen = await background.lookupVerification({
      verification: input.verification,
      sslDelegation: input.sslDelegation,
    });
    if (seen.found) {
      const reply = await background.reportVerified(domain, seen.found);
      if (!reply) return 'deleted';
      return reply.state;
    }
  }
}
