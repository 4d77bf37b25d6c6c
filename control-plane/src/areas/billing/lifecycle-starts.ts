// The subscription lifecycle's workflow starts, recorded in the outbox by the write that creates a subscription.
import type { WorkflowStart } from '../../workflow-outbox/outbox.js';
import type { PlanRow, SubscriptionRow } from './service.js';

/** None yet: the lifecycle workflow lands with the workflows package's subscription lifecycle. */
export function lifecycleStarts(_sub: SubscriptionRow, _plan: PlanRow): WorkflowStart[] {
  return [];
}
