// A saved analytics query's alert (id `analytics-alert:<saved query id>`, started through the control plane's
// outbox when the alert is set, ensured for every alert when the control plane starts): asks the control plane to
// evaluate it (it runs the query when due, records the value, notifies a crossing once) and sleeps on a durable
// timer until the next evaluation it names, so restarts of the control plane, the worker or both lose no evaluation.
// Signal `savedQueryChanged` (the alert changed or was removed, the query deleted) asks again at once. Ends when the
// saved query or its alert is gone.
import { condition, continueAsNew, defineSignal, setHandler } from '@temporalio/workflow';
import { background } from './proxies.js';

export const savedQueryChangedSignal = defineSignal('savedQueryChanged');

/** Evaluations of one run before its history is carried into a fresh one. */
const EVALUATIONS_PER_RUN = 100;
/** A next moment the control plane names in the past is asked again after this (clocks of two machines). */
const MIN_WAIT_MS = 1000;

export async function savedQueryAlert(input: { savedQueryId: number }): Promise<string> {
  let changed = false;
  setHandler(savedQueryChangedSignal, () => {
    changed = true;
  });
  for (let i = 0; i < EVALUATIONS_PER_RUN; i++) {
    changed = false;
    const reply = await background.evaluateSavedQuery(input.savedQueryId);
    if (!reply) return 'deleted';
    if (reply.next_at_ms === null) return 'no alert';
    await condition(() => changed, Math.max(reply.next_at_ms - Date.now(), MIN_WAIT_MS));
  }
  return continueAsNew<typeof savedQueryAlert>(input);
}
