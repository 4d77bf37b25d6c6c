// An uptime incident (id `uptime-incident:<incident id>`), started by the control plane's detector when it opens an
// incident and signalled `resolveIncident` when it resolves it (both through the workflow outbox): announces
// `outage.opened`, waits, announces `outage.resolved`. Each announce records the event's delivery once (the control
// plane keeps one delivery per incident and event) and delivers it as the child workflow `uptime-webhook:<id>`, so
// each event reaches the receiver at most once per incident, across worker restarts.
import { condition, defineSignal, executeChild, proxyActivities, setHandler } from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';
import { deliverUptimeWebhook } from './deliver-webhook.js';

export const resolveIncidentSignal = defineSignal('resolveIncident');

const report = proxyActivities<Activities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
});

async function announce(incidentId: number, event: 'outage.opened' | 'outage.resolved'): Promise<string> {
  const deliveryId = await report.announceUptimeIncident(incidentId, event);
  if (deliveryId === null) return 'not notified';
  return executeChild(deliverUptimeWebhook, {
    workflowId: `uptime-webhook:${deliveryId}`,
    args: [{ deliveryId }],
  });
}

export async function uptimeIncident(input: { incidentId: number }): Promise<string> {
  let resolved = false;
  setHandler(resolveIncidentSignal, () => {
    resolved = true;
  });
  const opened = await announce(input.incidentId, 'outage.opened');
  await condition(() => resolved);
  const closed = await announce(input.incidentId, 'outage.resolved');
  return `opened: ${opened}; resolved: ${closed}`;
}
