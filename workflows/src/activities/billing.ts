// The subscription lifecycle's activity: the control plane judges what is due and names the next moment.
import { controlPlanePost, type ControlPlaneDeps } from './control-plane.js';

/** What the control plane answers after moving a subscription along (see control-plane areas/billing/lifecycle.ts). */
export interface AdvanceReply {
  status: string;
  /** When to ask again (ms since the epoch); null: nothing more is due, the workflow ends. */
  next_at_ms: number | null;
}

export function createBillingActivities(deps: ControlPlaneDeps) {
  const post = controlPlanePost(deps);
  return {
    /** Moves the subscription as far as the control plane's clock says; null when it no longer exists. */
    async advanceSubscription(subscriptionId: number): Promise<AdvanceReply | null> {
      return post<AdvanceReply>(`/internal/subscriptions/${subscriptionId}/advance`, {});
    },
  };
}
