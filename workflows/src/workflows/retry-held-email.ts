// Email routing's hold and retry (id `email-retry:<held id>`, started through the control plane's workflow outbox
// when the mail node hands over a message the destination deferred): attempts 2…N after the delays the control
// plane passes (MAIL_RETRY_DELAYS_SECONDS), as durable timers, so a restart of any process keeps the schedule. The
// control plane makes each attempt and writes the activity log (each attempt, then delivered or bounced); the
// history holds only the held message's id, never its content.
import { proxyActivities, sleep } from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';

/**
 * One attempt: retried only while the control plane cannot be reached (an attempt is claimed once on its side, so a
 * retry after a lost answer does not deliver twice). Never retried past the message's hold.
 */
const attempts = proxyActivities<Activities>({
  startToCloseTimeout: '5 minutes',
  retry: { initialInterval: '5 seconds', backoffCoefficient: 2, maximumInterval: '5 minutes', maximumAttempts: 10 },
});

export async function retryHeldEmail(input: { id: string; delaysMs: number[] }): Promise<string> {
  const last = input.delaysMs.length + 1;
  for (let attempt = 2; attempt <= last; attempt++) {
    await sleep(input.delaysMs[attempt - 2]!);
    const outcome = await attempts.attemptHeldEmail(input.id, attempt, attempt === last);
    if (outcome !== 'temporary') return outcome;
  }
  return 'bounced';
}
