// The saved-query alert's activity: the control plane runs the query when its evaluation is due, records the value
// and notifies a crossing, and names the next moment (control-plane areas/analytics/saved-queries.ts).
import { controlPlanePost, type ControlPlaneDeps } from './control-plane.js';

/** When to ask again (ms since the epoch); null: the saved query has no alert any more, the workflow ends. */
export interface EvaluateReply {
  next_at_ms: number | null;
}

/** The query runs within the control plane's ANALYTICS_QUERY_TIMEOUT_MS (10 s by default, at most 600 s). */
const EVALUATE_TIMEOUT_MS = 100_000;

export function createAnalyticsActivities(deps: ControlPlaneDeps) {
  const post = controlPlanePost(deps, EVALUATE_TIMEOUT_MS);
  return {
    /** Evaluates the saved query's alert if it is due; null when the saved query no longer exists. */
    async evaluateSavedQuery(savedQueryId: number): Promise<EvaluateReply | null> {
      return post<EvaluateReply>(`/internal/analytics/saved-queries/${savedQueryId}/evaluate`, {});
    },
  };
}
