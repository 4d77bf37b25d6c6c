// Uptime logic: monitors (validation, cap, plan), settings and the webhook target, the signing secret, webhook
// deliveries (recorded with their workflow start in one transaction; the workflow does the HTTP), incidents.
import type { FastifyInstance } from 'fastify';
import { and, eq, isNull, sql } from 'drizzle-orm';
import { describeProblems, type Problem } from '@platform/shared/match';
import type { Tx } from '../../db/index.js';
import type { AttemptResult } from '../../../../workflows/src/uptime/webhook-activities.js';
import {
  dnsRecords,
  domains,
  uptimeIncidents,
  uptimeMonitors,
  uptimeSettings,
  uptimeWebhookAttempts,
  uptimeWebhookDeliveries,
} from '../../db/schema.js';
import { ApiError } from '../../errors.js';
import { changeDomain } from '../../config-log/index.js';
import { effectiveFeatures, requireFeature } from '../../plans/entitlements.js';
import { enqueueWorkflows, type WorkflowStart } from '../../workflow-outbox/outbox.js';
import { MAX_MONITORS_PER_DOMAIN, mergeMonitorBody, validateMonitor } from './monitor.js';
import {
  presentDelivery,
  presentIncident,
  presentMonitor,
  presentSettings,
  presentWebhook,
  storedMonitor,
} from './present.js';
import {
  countMonitors,
  countPendingDeliveries,
  deliveriesWithAttempts,
  DELIVERIES_LISTED,
  ensureSettings,
  findMonitor,
  incidentsOf,
  lockDomain,
  monitorsOf,
  newSigningSecret,
  pruneDeliveries,
} from './store.js';

type DomainRow = typeof domains.$inferSelect;
type Event = 'outage.opened' | 'outage.resolved' | 'test';

export const MONITOR_NOT_FOUND = 'monitor not found';
export const DELIVERY_NOT_FOUND = 'delivery not found';
/** Deliveries of one domain waiting for their workflow at once; a test or redelivery beyond is 429. */
export const MAX_PENDING_DELIVERIES = 20;

function invalid(problems: Problem[]): never {
  throw new ApiError('CP_ERR_MONITOR_INVALID', describeProblems(problems), { problems });
}

async function requireMonitoring(app: FastifyInstance | { db: Tx }, domainId: number): Promise<void> {
  requireFeature(await effectiveFeatures(app.db, domainId), 'monitoring_enabled');
}

/** Runs `fn` in a transaction holding the domain row's lock; 404 when the domain was deleted meanwhile. */
async function underDomainLock<T>(app: FastifyInstance, domainId: number, fn: (tx: Tx) => Promise<T>): Promise<T> {
  return app.db.transaction(async (tx) => {
    if (!(await lockDomain(tx, domainId))) throw new ApiError('CP_ERR_NOT_FOUND', 'domain not found');
    return fn(tx);
  });
}

/**
 * Like underDomainLock, for a change of what the edge watches (enabled monitors' scopes, min_requests_per_minute):
 * through changeDomain, so the domain's next config entry carries it to the nodes (settings.uptime).
 */
async function changeWatch<T>(app: FastifyInstance, domainId: number, fn: (tx: Tx) => Promise<T>): Promise<T> {
  return changeDomain(app, domainId, async (tx) => ({ value: await fn(tx), change: { domain: true } }));
}

// ---- Monitors ----

export async function listMonitors(app: FastifyInstance, domainId: number) {
  const rows = await monitorsOf(app.db, domainId);
  return { monitors: rows.map(presentMonitor), max_monitors: MAX_MONITORS_PER_DOMAIN };
}

export async function createMonitor(app: FastifyInstance, domain: DomainRow, body: Record<string, unknown>) {
  const v = validateMonitor(body);
  if (!v.ok) invalid(v.problems);
  await requireMonitoring(app, domain.id);
  const row = await changeWatch(app, domain.id, async (tx) => {
    const n = await countMonitors(tx, domain.id);
    if (n >= MAX_MONITORS_PER_DOMAIN)
      throw new ApiError(
        'CP_ERR_MONITOR_CAP',
        `the domain already has ${n} monitors, the most a domain may have (${MAX_MONITORS_PER_DOMAIN})`,
        { max_monitors: MAX_MONITORS_PER_DOMAIN },
      );
    const [created] = await tx
      .insert(uptimeMonitors)
      .values({
        domainId: domain.id,
        name: v.value.name,
        enabled: v.value.enabled,
        scope: { ...v.value.scope },
      })
      .returning();
    return created;
  });
  return presentMonitor(row);
}

export async function getMonitor(app: FastifyInstance, domainId: number, id: number) {
  const row = await findMonitor(app.db, domainId, id);
  if (!row) throw new ApiError('CP_ERR_NOT_FOUND', MONITOR_NOT_FOUND);
  return presentMonitor(row);
}

export async function updateMonitor(
  app: FastifyInstance,
  domain: DomainRow,
  id: number,
  body: Record<string, unknown>,
) {
  const row = await changeWatch(app, domain.id, async (tx) => {
    const stored = await findMonitor(tx, domain.id, id);
    if (!stored) throw new ApiError('CP_ERR_NOT_FOUND', MONITOR_NOT_FOUND);
    const v = validateMonitor(mergeMonitorBody(storedMonitor(stored), body));
    if (!v.ok) invalid(v.problems);
    await requireMonitoring({ db: tx }, domain.id);
    const [updated] = await tx
      .update(uptimeMonitors)
      .set({ name: v.value.name, enabled: v.value.enabled, scope: { ...v.value.scope }, updatedAt: new Date() })
      .where(eq(uptimeMonitors.id, id))
      .returning();
    return updated;
  });
  return presentMonitor(row);
}

export async function deleteMonitor(app: FastifyInstance, domain: DomainRow, id: number): Promise<void> {
  await changeWatch(app, domain.id, async (tx) => {
    const deleted = await tx
      .delete(uptimeMonitors)
      .where(and(eq(uptimeMonitors.id, id), eq(uptimeMonitors.domainId, domain.id)))
      .returning({ id: uptimeMonitors.id });
    if (deleted.length === 0) throw new ApiError('CP_ERR_NOT_FOUND', MONITOR_NOT_FOUND);
  });
}

export async function setMonitorEnabled(app: FastifyInstance, domain: DomainRow, id: number, enabled: boolean) {
  if (enabled) await requireMonitoring(app, domain.id);
  const updated = await changeWatch(app, domain.id, async (tx) => {
    const [row] = await tx
      .update(uptimeMonitors)
      .set({ enabled, updatedAt: new Date() })
      .where(and(eq(uptimeMonitors.id, id), eq(uptimeMonitors.domainId, domain.id)))
      .returning();
    if (!row) throw new ApiError('CP_ERR_NOT_FOUND', MONITOR_NOT_FOUND);
    return row;
  });
  return presentMonitor(updated);
}

// ---- Settings and the webhook target ----

/** Why `url` cannot be a webhook target, or undefined. Addresses are judged at delivery, where it connects. */
export function webhookUrlProblem(url: string): string | undefined {
  if (url === '') return undefined;
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return 'webhook_url must be an absolute http:// or https:// URL';
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return 'webhook_url must be an http:// or https:// URL';
  if (u.username !== '' || u.password !== '') return 'webhook_url must not carry a user name or password';
  if (u.hostname === '') return 'webhook_url must name a host';
  return undefined;
}

export async function getSettings(app: FastifyInstance, domain: DomainRow) {
  return presentSettings(domain.name, await ensureSettings(app.db, domain.id));
}

export interface SettingsUpdate {
  webhook_url?: string;
  notify_webhook?: boolean;
  error_threshold_pct?: number;
  min_requests_per_minute?: number;
  open_after_minutes?: number;
  resolve_after_minutes?: number;
}

export async function updateSettings(app: FastifyInstance, domain: DomainRow, body: SettingsUpdate) {
  const url = body.webhook_url?.trim();
  const problem = url === undefined ? undefined : webhookUrlProblem(url);
  if (problem) throw new ApiError('CP_ERR_INVALID_INPUT', problem);
  await requireMonitoring(app, domain.id);
  // Only min_requests_per_minute is read by the edge (it decides when a minute is thin enough to probe).
  const write = body.min_requests_per_minute === undefined ? underDomainLock : changeWatch;
  const row = await write(app, domain.id, async (tx) => {
    const current = await ensureSettings(tx, domain.id);
    const next = {
      webhookUrl: url ?? current.webhookUrl,
      notifyWebhook: body.notify_webhook ?? current.notifyWebhook,
      errorThresholdPct: body.error_threshold_pct ?? current.errorThresholdPct,
      minRequestsPerMinute: body.min_requests_per_minute ?? current.minRequestsPerMinute,
      openAfterMinutes: body.open_after_minutes ?? current.openAfterMinutes,
      resolveAfterMinutes: body.resolve_after_minutes ?? current.resolveAfterMinutes,
    };
    if (next.notifyWebhook && next.webhookUrl === '')
      throw new ApiError('CP_ERR_INVALID_INPUT', 'notify_webhook needs a webhook_url');
    const [updated] = await tx
      .update(uptimeSettings)
      .set({ ...next, updatedAt: new Date() })
      .where(eq(uptimeSettings.domainId, domain.id))
      .returning();
    return updated;
  });
  return presentSettings(domain.name, row);
}

export async function getWebhook(app: FastifyInstance, domain: DomainRow) {
  return presentWebhook(domain.name, await ensureSettings(app.db, domain.id));
}

export async function rotateSigningSecret(app: FastifyInstance, domain: DomainRow) {
  const row = await underDomainLock(app, domain.id, async (tx) => {
    await ensureSettings(tx, domain.id);
    const [updated] = await tx
      .update(uptimeSettings)
      .set({ signingSecret: newSigningSecret(), updatedAt: new Date() })
      .where(eq(uptimeSettings.domainId, domain.id))
      .returning();
    return updated;
  });
  return presentWebhook(domain.name, row);
}

// ---- Deliveries ----

/** Workflow type and id of one delivery (workflows/src/uptime/deliver-webhook.ts). */
export const DELIVER_WEBHOOK_WORKFLOW = 'deliverUptimeWebhook';
export const deliveryWorkflowId = (deliveryId: number) => `uptime-webhook:${deliveryId}`;

export function deliveryStart(deliveryId: number): WorkflowStart {
  return {
    kind: 'start',
    workflowType: DELIVER_WEBHOOK_WORKFLOW,
    workflowId: deliveryWorkflowId(deliveryId),
    args: [{ deliveryId }],
  };
}

/** The body of an event without sent_at (each attempt adds it when it signs). */
export interface EventPayload {
  event: Event;
  incident_id: number;
  domain: string;
  hostname: string;
  monitor_id: number | null;
  scope: string;
  peak_error_pct: number;
  started_at: string;
  resolved_at: string | null;
  duration_sec: number | null;
}

/** The body of a saved analytics query's alert (areas/analytics/saved-queries.ts), without sent_at. */
export interface AlertEventPayload {
  event: 'analytics.alert';
  saved_query_id: number;
  name: string;
  /** The domain whose webhook it is. */
  domain: string;
  column: string;
  op: string;
  threshold: number;
  value: number;
  evaluated_at: string;
}

/**
 * Records a delivery and its workflow start in the caller's transaction (call app.workflowOutbox.nudge() after the
 * commit). An incident event already recorded is not recorded again (null): each incident sends each event once.
 */
export async function recordDelivery(
  tx: Tx,
  domainId: number,
  url: string,
  payload: EventPayload | AlertEventPayload,
  redeliveryOf: number | null = null,
  /** False when the caller runs the delivery workflow itself (an incident's workflow, as its child). */
  startWorkflow = true,
): Promise<typeof uptimeWebhookDeliveries.$inferSelect | null> {
  const [row] = await tx
    .insert(uptimeWebhookDeliveries)
    .values({
      domainId,
      event: payload.event,
      incidentId: payload.event === 'analytics.alert' ? 0 : payload.incident_id,
      redeliveryOf,
      url,
      payload: { ...payload },
    })
    .onConflictDoNothing()
    .returning();
  if (!row) return null;
  if (startWorkflow) await enqueueWorkflows(tx, [deliveryStart(row.id)]);
  await pruneDeliveries(tx, domainId);
  return row;
}

/** 429 when the domain has MAX_PENDING_DELIVERIES deliveries waiting already. */
export async function checkInFlightDeliveries(tx: Tx, domainId: number): Promise<void> {
  if ((await countPendingDeliveries(tx, domainId)) >= MAX_PENDING_DELIVERIES)
    throw new ApiError(
      'CP_ERR_RATE_LIMITED',
      `too many webhook deliveries in flight for this domain (at most ${MAX_PENDING_DELIVERIES} pending)`,
    );
}

/** POST /uptime/webhook/test: a `test` event (incident_id 0) to the saved webhook_url, delivered like any other. */
export async function sendTestEvent(app: FastifyInstance, domain: DomainRow) {
  await requireMonitoring(app, domain.id);
  const row = await underDomainLock(app, domain.id, async (tx) => {
    const settings = await ensureSettings(tx, domain.id);
    if (settings.webhookUrl === '')
      throw new ApiError('CP_ERR_WRONG_STATE', 'no webhook_url is saved for this domain (PUT /uptime/settings)');
    await checkInFlightDeliveries(tx, domain.id);
    const now = new Date().toISOString();
    return recordDelivery(tx, domain.id, settings.webhookUrl, {
      event: 'test',
      incident_id: 0,
      domain: domain.name,
      hostname: domain.name,
      monitor_id: null,
      scope: '',
      peak_error_pct: 0,
      started_at: now,
      resolved_at: null,
      duration_sec: null,
    });
  });
  app.workflowOutbox.nudge();
  return presentDelivery(row!, []);
}

/** Manual redelivery of a past delivery: the same event body, to the webhook_url saved now, as a new delivery. */
export async function redeliver(app: FastifyInstance, domain: DomainRow, deliveryId: number) {
  const row = await underDomainLock(app, domain.id, async (tx) => {
    const [past] = await tx
      .select()
      .from(uptimeWebhookDeliveries)
      .where(and(eq(uptimeWebhookDeliveries.id, deliveryId), eq(uptimeWebhookDeliveries.domainId, domain.id)));
    if (!past) throw new ApiError('CP_ERR_NOT_FOUND', DELIVERY_NOT_FOUND);
    const settings = await ensureSettings(tx, domain.id);
    if (settings.webhookUrl === '')
      throw new ApiError('CP_ERR_WRONG_STATE', 'no webhook_url is saved for this domain (PUT /uptime/settings)');
    await checkInFlightDeliveries(tx, domain.id);
    return recordDelivery(
      tx,
      domain.id,
      settings.webhookUrl,
      past.payload as unknown as EventPayload | AlertEventPayload,
      past.redeliveryOf ?? past.id,
    );
  });
  app.workflowOutbox.nudge();
  return presentDelivery(row!, []);
}

export async function listDeliveries(app: FastifyInstance, domain: DomainRow) {
  const list = await deliveriesWithAttempts(app.db, domain.id, DELIVERIES_LISTED);
  return list.map(({ row, attempts }) => presentDelivery(row, attempts));
}

// ---- Incidents and status ----

export async function listIncidents(app: FastifyInstance, domain: DomainRow, onlyOpen: boolean) {
  return (await incidentsOf(app.db, domain.id, onlyOpen)).map(presentIncident);
}

/** Per-subdomain status: every proxied host with `monitor` on, and any host with an open whole-host incident. */
export async function hostStatus(app: FastifyInstance, domain: DomainRow) {
  const records = await app.db
    .selectDistinct({ name: dnsRecords.name })
    .from(dnsRecords)
    .where(and(eq(dnsRecords.domainId, domain.id), eq(dnsRecords.proxied, true), eq(dnsRecords.monitor, true)));
  const open = await incidentsOf(app.db, domain.id, true);
  const hosts = new Map<string, { open_incident_id: number | null; since: string | null }>();
  for (const r of records)
    hosts.set(r.name === '@' ? domain.name : `${r.name}.${domain.name}`, { open_incident_id: null, since: null });
  for (const i of open.filter((x) => x.monitorId === null).reverse())
    hosts.set(i.hostname, { open_incident_id: i.id, since: i.startedAt.toISOString() });
  return [...hosts.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([hostname, s]) => ({
      hostname,
      status: (s.open_incident_id === null ? 'up' : 'down') as 'up' | 'down',
      ...s,
    }));
}

// ---- The worker's side (/internal) ----

/** What the delivery workflow's activity needs to sign and send; null when the delivery (or its domain) is gone. */
export async function deliveryForWorker(app: FastifyInstance, deliveryId: number) {
  const [row] = await app.db
    .select({ d: uptimeWebhookDeliveries, secret: uptimeSettings.signingSecret })
    .from(uptimeWebhookDeliveries)
    .innerJoin(uptimeSettings, eq(uptimeSettings.domainId, uptimeWebhookDeliveries.domainId))
    .where(eq(uptimeWebhookDeliveries.id, deliveryId));
  if (!row) return null;
  return { id: row.d.id, url: row.d.url, state: row.d.state, payload: row.d.payload, signing_secret: row.secret };
}

/** An attempt as the delivery workflow reports it; `final`: no retry follows it. */
export type AttemptReport = AttemptResult & { final: boolean };

/** Records one attempt (a repeated report of the same attempt changes nothing) and the delivery's state. */
export async function recordAttempt(app: FastifyInstance, deliveryId: number, a: AttemptReport) {
  return app.db.transaction(async (tx) => {
    const [d] = await tx
      .select({ id: uptimeWebhookDeliveries.id })
      .from(uptimeWebhookDeliveries)
      .where(eq(uptimeWebhookDeliveries.id, deliveryId))
      .for('update');
    if (!d) return null;
    await tx
      .insert(uptimeWebhookAttempts)
      .values({
        deliveryId,
        attempt: a.attempt,
        startedAt: new Date(a.started_at),
        statusCode: a.status_code,
        durationMs: Math.round(a.duration_ms),
        error: a.error?.slice(0, 1000) ?? null,
        outcome: a.outcome,
      })
      .onConflictDoNothing();
    const state =
      a.outcome === 'success' ? 'delivered' : a.outcome === 'refused' ? 'refused' : a.final ? 'failed' : 'pending';
    const [updated] = await tx
      .update(uptimeWebhookDeliveries)
      .set({ state, completedAt: state === 'pending' ? null : sql`now()` })
      .where(and(eq(uptimeWebhookDeliveries.id, deliveryId), eq(uptimeWebhookDeliveries.state, 'pending')))
      .returning({ state: uptimeWebhookDeliveries.state });
    return { state: updated?.state ?? state };
  });
}

/**
 * An incident's workflow announces one of its events: the delivery is recorded once (a repeated announce finds the
 * same one) and its id returned for the workflow to deliver; null when the domain has no webhook to notify.
 */
export async function announceIncident(
  app: FastifyInstance,
  incidentId: number,
  event: 'outage.opened' | 'outage.resolved',
): Promise<{ delivery_id: number | null } | null> {
  return app.db.transaction(async (tx) => {
    const [incident] = await tx.select().from(uptimeIncidents).where(eq(uptimeIncidents.id, incidentId));
    if (!incident) return null;
    const [existing] = await tx
      .select({ id: uptimeWebhookDeliveries.id })
      .from(uptimeWebhookDeliveries)
      .where(
        and(
          eq(uptimeWebhookDeliveries.incidentId, incidentId),
          eq(uptimeWebhookDeliveries.event, event),
          isNull(uptimeWebhookDeliveries.redeliveryOf),
        ),
      );
    if (existing) return { delivery_id: existing.id };
    const settings = await ensureSettings(tx, incident.domainId);
    if (!settings.notifyWebhook || settings.webhookUrl === '') return { delivery_id: null };
    const [domain] = await tx.select({ name: domains.name }).from(domains).where(eq(domains.id, incident.domainId));
    const p = presentIncident(incident);
    const row = await recordDelivery(
      tx,
      incident.domainId,
      settings.webhookUrl,
      {
        event,
        incident_id: incident.id,
        domain: domain.name,
        hostname: incident.hostname,
        monitor_id: incident.monitorId,
        scope: incident.scope,
        peak_error_pct: incident.peakErrorPct,
        started_at: p.started_at,
        resolved_at: event === 'outage.resolved' ? p.resolved_at : null,
        duration_sec: event === 'outage.resolved' ? p.duration_sec : null,
      },
      null,
      false,
    );
    return { delivery_id: row?.id ?? null };
  });
}
