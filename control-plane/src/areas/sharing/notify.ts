// The notifications sharing sends, each one call of the notification feed inside the change's transaction.
import type { Tx } from '../../db/index.js';
import { notify } from '../notifications/store.js';
import type { SharedDomain } from './service.js';

/**
 * The nominee of a payer nomination hears of it at once (spec "Billing member (payer)": no consent step), whatever
 * their notification choices: the notice is addressed to them, not fanned out over the domain.
 */
export async function notifyPayerNominated(
  tx: Tx,
  event: { domain: SharedDomain; nomineeId: number; byUserId: number },
): Promise<void> {
  await notify(tx, {
    userId: event.nomineeId,
    category: 'billing',
    kind: 'billing.payer_nominated',
    title: `You now pay for ${event.domain.name}`,
    body: `The owner of ${event.domain.name} chose your wallet to pay for its subscription and renewals, from now on.`,
    domain: event.domain.name,
    data: { domain_id: event.domain.id, nominated_by: event.byUserId },
  });
}
