// TypeBox schemas of the uptime API (spec "Uptime monitor", Uptime endpoints, "Events"); also the OpenAPI document.
import { Type } from '@sinclair/typebox';
import { Id, Nullable, StringEnum } from '../../openapi/schemas.js';
import {
  MAX_MONITOR_HOST_ENTRIES,
  MAX_MONITOR_NAME,
  MAX_MONITOR_PATH_ENTRIES,
  MAX_MONITORS_PER_DOMAIN,
} from './monitor.js';

const closed = { additionalProperties: false } as const;
const Timestamp = Type.String({ format: 'date-time' });

/** `?domain=<domain>`: every uptime operation names its domain in the query (spec: POST /uptime/monitors?domain=). */
export const DomainQuery = Type.Object({
  domain: Type.String({ minLength: 1, maxLength: 1024, description: 'The domain name, e.g. example.org' }),
});
export const MonitorParams = Type.Object({ monitorId: Id('Monitor id') });
export const DeliveryParams = Type.Object({ deliveryId: Id('Delivery id') });

const HostEntries = (description: string) =>
  Type.Array(Type.String({ minLength: 1, maxLength: 1024 }), { description, maxItems: MAX_MONITOR_HOST_ENTRIES });
const PathEntries = (description: string) =>
  Type.Array(Type.String({ minLength: 1, maxLength: 2048 }), { description, maxItems: MAX_MONITOR_PATH_ENTRIES });

/** Fields a client may send on create and update (all optional; on update omitted fields are kept). */
const monitorInput = {
  name: Type.Optional(
    Type.String({
      maxLength: MAX_MONITOR_NAME,
      description: `Optional label (at most ${MAX_MONITOR_NAME} characters), used in outage alerts and the incident list`,
    }),
  ),
  enabled: Type.Optional(Type.Boolean({ description: 'Default true' })),
  host_pattern: Type.Optional(
    Type.String({ maxLength: 1024, description: 'Legacy single host scope, folded into host_includes' }),
  ),
  host_match_type: Type.Optional(
    StringEnum(['', 'exact', 'wildcard', 'regex'], {
      description:
        'Empty: no host scope (every subdomain); defaults to wildcard when a host filter is set without it. `*.x` matches subdomains of x, not x; regex: unanchored, case-insensitive RE2 syntax (linear time: no backreferences, no lookaround), compiled at write time',
    }),
  ),
  host_includes: Type.Optional(
    Nullable(HostEntries(`At most ${MAX_MONITOR_HOST_ENTRIES}; null or empty means every subdomain`)),
  ),
  host_excludes: Type.Optional(Nullable(HostEntries(`At most ${MAX_MONITOR_HOST_ENTRIES}; excludes beat includes`))),
  path_match_type: Type.Optional(
    StringEnum(['wildcard', 'regex'], {
      description:
        'wildcard (default): `*` matches any characters over the whole normalised path; regex: unanchored RE2 syntax, compiled at write time',
    }),
  ),
  path_includes: Type.Optional(
    Nullable(PathEntries(`At most ${MAX_MONITOR_PATH_ENTRIES}; empty on create becomes ["/*"]`)),
  ),
  path_excludes: Type.Optional(Nullable(PathEntries(`At most ${MAX_MONITOR_PATH_ENTRIES}; excludes beat includes`))),
};

export const MonitorBody = Type.Object(monitorInput, {
  title: 'UptimeMonitorInput',
  description:
    'Omitted fields take defaults on create and are kept on update; an explicit empty array clears a list. A monitor with no host scope and a path scope of every path narrows nothing and is refused',
  ...closed,
});

export const Monitor = Type.Object(
  {
    id: Type.Integer(),
    domain_id: Type.Integer(),
    name: Type.String(),
    enabled: Type.Boolean(),
    host_pattern: Type.String({ description: 'Always empty: a host_pattern sent is folded into host_includes' }),
    host_match_type: StringEnum(['', 'exact', 'wildcard', 'regex']),
    host_includes: Type.Array(Type.String()),
    host_excludes: Type.Array(Type.String()),
    path_match_type: StringEnum(['wildcard', 'regex']),
    path_includes: Type.Array(Type.String()),
    path_excludes: Type.Array(Type.String()),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { title: 'UptimeMonitor' },
);

export const MonitorList = Type.Object(
  {
    monitors: Type.Array(Monitor),
    max_monitors: Type.Integer({
      description: `Monitors a domain may have (${MAX_MONITORS_PER_DOMAIN}): a detection-cost ceiling, not a plan limit`,
    }),
  },
  { title: 'UptimeMonitorList' },
);

export const EnabledBody = Type.Object({ enabled: Type.Boolean() }, { title: 'UptimeMonitorEnabled', ...closed });

const thresholds = {
  error_threshold_pct: Type.Integer({
    minimum: 1,
    maximum: 100,
    description: 'A minute counts as failing when at least this percentage of proxied requests got an origin error',
  }),
  min_requests_per_minute: Type.Integer({
    minimum: 1,
    maximum: 1_000_000,
    description: 'Minutes with fewer proxied requests than this are too thin to judge',
  }),
  open_after_minutes: Type.Integer({
    minimum: 1,
    maximum: 60,
    description: 'Consecutive failing minutes that open an incident',
  }),
  resolve_after_minutes: Type.Integer({
    minimum: 1,
    maximum: 60,
    description: 'Consecutive healthy minutes that resolve it',
  }),
};

const WebhookUrl = Type.String({
  maxLength: 2048,
  description:
    'http:// or https:// URL the signed events are POSTed to; empty for none. Redirects are not followed; a URL resolving to a private or otherwise disallowed address is refused at delivery',
});

export const UptimeSettings = Type.Object(
  {
    domain: Type.String(),
    webhook_url: WebhookUrl,
    notify_webhook: Type.Boolean({ description: 'Send outage.opened and outage.resolved to webhook_url' }),
    ...thresholds,
    updated_at: Timestamp,
  },
  { title: 'UptimeSettings' },
);

export const UptimeSettingsUpdate = Type.Object(
  {
    webhook_url: Type.Optional(WebhookUrl),
    notify_webhook: Type.Optional(Type.Boolean()),
    error_threshold_pct: Type.Optional(thresholds.error_threshold_pct),
    min_requests_per_minute: Type.Optional(thresholds.min_requests_per_minute),
    open_after_minutes: Type.Optional(thresholds.open_after_minutes),
    resolve_after_minutes: Type.Optional(thresholds.resolve_after_minutes),
  },
  { title: 'UptimeSettingsUpdate', description: 'Omitted fields are unchanged', ...closed },
);

export const WebhookConfig = Type.Object(
  {
    domain: Type.String(),
    webhook_url: Type.String(),
    notify_webhook: Type.Boolean(),
    signing_secret: Type.String({
      description: 'Key of X-Service-Signature: `sha256=` + hex HMAC-SHA256 of `<X-Service-Timestamp>.<raw body>`',
    }),
  },
  { title: 'UptimeWebhook' },
);

export const EVENTS = ['outage.opened', 'outage.resolved', 'test', 'analytics.alert'] as const;

export const DeliveryAttempt = Type.Object(
  {
    attempt: Type.Integer({ description: '1 is the first try; 2 and 3 the retries after 5 and 30 seconds' }),
    started_at: Timestamp,
    status_code: Nullable(Type.Integer({ description: 'HTTP status answered; null when none was' })),
    duration_ms: Type.Integer(),
    error: Nullable(Type.String()),
    outcome: StringEnum(['success', 'failure', 'refused']),
  },
  { title: 'UptimeWebhookAttempt' },
);

export const Delivery = Type.Object(
  {
    id: Type.Integer(),
    event: StringEnum([...EVENTS]),
    incident_id: Type.Integer({ description: '0 on test' }),
    redelivery_of: Nullable(Type.Integer({ description: 'The delivery this one repeats (manual redelivery)' })),
    url: Type.String(),
    state: StringEnum(['pending', 'delivered', 'failed', 'refused']),
    created_at: Timestamp,
    completed_at: Nullable(Timestamp),
    payload: Type.Record(Type.String(), Type.Unknown(), {
      description: 'The body sent, without sent_at (set on each attempt)',
    }),
    attempts: Type.Array(DeliveryAttempt),
  },
  { title: 'UptimeWebhookDelivery' },
);

export const Incident = Type.Object(
  {
    id: Type.Integer(),
    domain_id: Type.Integer(),
    hostname: Type.String(),
    monitor_id: Nullable(Type.Integer({ description: 'null for the whole-host watch' })),
    scope: Type.String({ description: 'Monitor name or path; empty for the whole-host watch' }),
    state: StringEnum(['open', 'resolved']),
    peak_error_pct: Type.Number(),
    started_at: Timestamp,
    resolved_at: Nullable(Timestamp),
    duration_sec: Nullable(Type.Integer()),
  },
  { title: 'UptimeIncident' },
);

export const HostStatus = Type.Object(
  {
    hostname: Type.String(),
    status: StringEnum(['up', 'down']),
    open_incident_id: Nullable(Type.Integer()),
    since: Nullable(Timestamp),
  },
  { title: 'UptimeHostStatus' },
);
