// The subscription lifecycle's workflow starts and signals, recorded in the outbox by the write that needs them
// (workflows/src/workflows/subscription-lifecycle.ts; id `subscription:<id>`).
import type { WorkflowStart } from '../../workflow-outbox/outbox.js';
import type { PlanRow, SubscriptionRow } from './service.js';

export const lifecycleWorkflowId = (subscriptionId: number) => `subscription:${subscriptionId}`;

/** Starts (or finds running) the lifecycle of a subscription. */
export function lifecycleStart(subscriptionId: number): WorkflowStart {
  return {
    kind: 'start',
    workflowType: 'subscriptionLifecycle',
    workflowId: lifecycleWorkflowId(subscriptionId),
    args: [{ subscriptionId }],
    conflictPolicy: 'use-existing',
  };
}

/** A subscription with a term end or metered traffic has a lifecycle; a free one without either has none. */
export function lifecycleStarts(sub: SubscriptionRow, plan: PlanRow): WorkflowStart[] {
  return sub.expiresAt !== null || plan.trafficPriceRialsPerGb > 0 ? [lifecycleStart(sub.id)] : [];
}

/** Asks a running lifecycle to judge again now (auto-renew turned on, the wallet topped up during grace). */
export function lifecycleNudge(subscriptionId: number): WorkflowStart {
  return {
    kind: 'signal',
    workflowType: 'subscriptionLifecycle',
    workflowId: lifecycleWorkflowId(subscriptionId),
    args: [],
    signal: 'subscriptionChanged',
  };
}
