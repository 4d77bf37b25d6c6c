// Database rows of the uptime area → API bodies.
import type {
  uptimeIncidents,
  uptimeMonitors,
  uptimeSettings,
  uptimeWebhookAttempts,
  uptimeWebhookDeliveries,
} from '../../db/schema.js';
import type { MonitorScope, NormalisedMonitor } from './monitor.js';

type MonitorRow = typeof uptimeMonitors.$inferSelect;
type SettingsRow = typeof uptimeSettings.$inferSelect;
type DeliveryRow = typeof uptimeWebhookDeliveries.$inferSelect;
type AttemptRow = typeof uptimeWebhookAttempts.$inferSelect;
type IncidentRow = typeof uptimeIncidents.$inferSelect;

export function storedMonitor(row: MonitorRow): NormalisedMonitor {
  return { name: row.name, enabled: row.enabled, scope: row.scope as unknown as MonitorScope };
}

export function presentMonitor(row: MonitorRow) {
  const s = row.scope as unknown as MonitorScope;
  return {
    id: row.id,
    domain_id: row.domainId,
    name: row.name,
    enabled: row.enabled,
    host_pattern: '',
    host_match_type: s.host_match_type,
    host_includes: s.host_includes,
    host_excludes: s.host_excludes,
    path_match_type: s.path_match_type,
    path_includes: s.path_includes,
    path_excludes: s.path_excludes,
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  };
}

export function presentSettings(domain: string, row: SettingsRow) {
  return {
    domain,
    webhook_url: row.webhookUrl,
    notify_webhook: row.notifyWebhook,
    error_threshold_pct: row.errorThresholdPct,
    min_requests_per_minute: row.minRequestsPerMinute,
    open_after_minutes: row.openAfterMinutes,
    resolve_after_minutes: row.resolveAfterMinutes,
    updated_at: row.updatedAt.toISOString(),
  };
}

export function presentWebhook(domain: string, row: SettingsRow) {
  return {
    domain,
    webhook_url: row.webhookUrl,
    notify_webhook: row.notifyWebhook,
    signing_secret: row.signingSecret,
  };
}

export function presentDelivery(row: DeliveryRow, attempts: AttemptRow[]) {
  return {
    id: row.id,
    event: row.event,
    incident_id: row.incidentId,
    redelivery_of: row.redeliveryOf,
    url: row.url,
    state: row.state,
    created_at: row.createdAt.toISOString(),
    completed_at: row.completedAt?.toISOString() ?? null,
    payload: row.payload,
    attempts: attempts
      .sort((a, b) => a.attempt - b.attempt)
      .map((a) => ({
        attempt: a.attempt,
        started_at: a.startedAt.toISOString(),
        status_code: a.statusCode,
        duration_ms: a.durationMs,
        error: a.error,
        outcome: a.outcome,
      })),
  };
}

export function durationSec(row: IncidentRow): number | null {
  return row.resolvedAt ? Math.max(0, Math.round((row.resolvedAt.getTime() - row.startedAt.getTime()) / 1000)) : null;
}

export function presentIncident(row: IncidentRow) {
  return {
    id: row.id,
    domain_id: row.domainId,
    hostname: row.hostname,
    monitor_id: row.monitorId,
    scope: row.scope,
    state: row.state,
    peak_error_pct: row.peakErrorPct,
    started_at: row.startedAt.toISOString(),
    resolved_at: row.resolvedAt?.toISOString() ?? null,
    duration_sec: durationSec(row),
  };
}
