// Email routing's held messages: one delivery attempt, made by the control plane (it holds the sealed message and
// the domain's DKIM key; the worker never sees the content).
import { controlPlanePost, type ControlPlaneDeps } from './control-plane.js';

export type HeldAttemptOutcome = 'delivered' | 'bounced' | 'temporary' | 'gone';

/** One attempt may try up to 10 MX addresses with their timeouts: longer than the usual internal call. */
const ATTEMPT_TIMEOUT_MS = 4 * 60_000;

export function createEmailActivities(deps: ControlPlaneDeps) {
  const post = controlPlanePost(deps, ATTEMPT_TIMEOUT_MS);
  return {
    /** Attempt `attempt` of held message `id`; `final`: a temporary failure now bounces it. Gone: nothing held. */
    async attemptHeldEmail(id: string, attempt: number, final: boolean): Promise<HeldAttemptOutcome> {
      const r = await post<{ outcome: HeldAttemptOutcome }>(`/internal/email/held/${id}/attempt`, { attempt, final });
      return r?.outcome ?? 'gone';
    },
  };
}
