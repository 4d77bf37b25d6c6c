// Drizzle table definitions; they mirror control-plane/migrations/*.sql, which are the source of truth.
import {
  pgTable,
  serial,
  integer,
  text,
  boolean,
  timestamp,
  jsonb,
  bigint,
  bigserial,
  primaryKey,
  customType,
  real,
  smallint,
} from 'drizzle-orm/pg-core';

import type { NotificationCategory } from '../areas/notifications/categories.js';

const bytea = customType<{ data: Uint8Array; driverData: Uint8Array }>({ dataType: () => 'bytea' });
const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });

export const users = pgTable('users', {
  id: serial('id').primaryKey(),
  email: text('email').notNull().unique(),
  name: text('name').notNull().default(''),
  active: boolean('active').notNull().default(true),
  createdAt: ts('created_at').notNull().defaultNow(),
  updatedAt: ts('updated_at').notNull().defaultNow(),
  /** scrypt (`scrypt$N$r$p$salt$hash`); null: the account cannot sign in with a password (areas/login). */
  passwordHash: text('password_hash'),
  passwordChangedAt: ts('password_changed_at'),
});

export const browserSessions = pgTable('browser_sessions', {
  id: serial('id').primaryKey(),
  userId: integer('user_id')
    .notNull()
    .references(() => users.id, { onDelete: 'cascade' }),
  tokenHash: text('token_hash').notNull().unique(),
  createdAt: ts('created_at').notNull().defaultNow(),
  lastSeenAt: ts('last_seen_at').notNull().defaultNow(),
  expiresAt: ts('expires_at').notNull(),
  revokedAt: ts('revoked_at'),
  userAgent: text('user_agent').notNull().default(''),
  clientIp: text('client_ip').notNull().default(''),
});

export const apiKeys = pgTable('api_keys', {
  id: serial('id').primaryKey(),
  userId: integer('user_id')
    .notNull()
    .references(() => users.id),
  name: text('name').notNull().default(''),
  keyHash: text('key_hash').notNull().unique(),
  keyPrefix: text('key_prefix').notNull(),
  readOnly: boolean('read_only').notNull().default(false),
  expiresAt: ts('expires_at'),
  revokedAt: ts('revoked_at'),
  lastUsedAt: ts('last_used_at'),
  createdAt: ts('created_at').notNull().defaultNow(),
});

export const plans = pgTable('plans', {
  id: serial('id').primaryKey(),
  slug: text('slug').notNull().unique(),
  name: text('name').notNull(),
  priceRials: bigint('price_rials', { mode: 'number' }).notNull().default(0),
  features: jsonb('features').$type<Record<string, unknown>>().notNull(),
  /** Traffic above max_traffic_gb per quota window, per started GB (0: not metered; 0026_billing.sql). */
  trafficPriceRialsPerGb: bigint('traffic_price_rials_per_gb', { mode: 'number' }).notNull().default(0),
});

export const domains = pgTable('domains', {
  id: serial('id').primaryKey(),
  name: text('name').notNull().unique(),
  ownerId: integer('owner_id')
    .notNull()
    .references(() => users.id),
  dnsMode: text('dns_mode').$type<'managed' | 'external'>().notNull().default('managed'),
  state: text('state').notNull(),
  verificationState: text('verification_state'),
  nsSetIndex: integer('ns_set_index'),
  cacheL2TtlDays: integer('cache_l2_ttl_days').notNull().default(3),
  cacheCapMb: integer('cache_cap_mb').notNull().default(100),
  originProtocol: text('origin_protocol').notNull().default('auto'),
  underAttack: boolean('under_attack').notNull().default(false),
  developerModeUntil: ts('developer_mode_until'),
  verification: jsonb('verification').$type<Record<string, unknown> | null>(),
  sslDelegation: jsonb('ssl_delegation').$type<Record<string, unknown> | null>(),
  settings: jsonb('settings').$type<Record<string, unknown>>().notNull().default({}),
  zoneSerial: integer('zone_serial').notNull().default(1),
  /** Size of the compiled config (records and rules), kept by triggers (0008_config_log_deltas.sql). */
  configBytes: bigint('config_bytes', { mode: 'number' }).notNull().default(0),
  createdAt: ts('created_at').notNull().defaultNow(),
  updatedAt: ts('updated_at').notNull().defaultNow(),
});

export const domainMembers = pgTable(
  'domain_members',
  {
    domainId: integer('domain_id')
      .notNull()
      .references(() => domains.id),
    userId: integer('user_id')
      .notNull()
      .references(() => users.id),
    role: text('role').$type<'admin' | 'editor' | 'viewer'>().notNull(),
    createdAt: ts('created_at').notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.domainId, t.userId] })],
);

export const subscriptions = pgTable('subscriptions', {
  id: serial('id').primaryKey(),
  /** No foreign key (0009_subscription_cancel.sql): a cancelled subscription outlives its domain. */
  domainId: integer('domain_id').notNull(),
  domainName: text('domain_name').notNull(),
  userId: integer('user_id')
    .notNull()
    .references(() => users.id),
  planId: integer('plan_id')
    .notNull()
    .references(() => plans.id),
  status: text('status').notNull().default('active'),
  isTrial: boolean('is_trial').notNull().default(false),
  autoRenew: boolean('auto_renew').notNull().default(false),
  overrides: jsonb('overrides').$type<Record<string, unknown>>().notNull().default({}),
  startedAt: ts('started_at').notNull().defaultNow(),
  expiresAt: ts('expires_at'),
  /** Billing (0026_billing.sql): the billed term, end of grace, allowance cadence, last window judged for metering. */
  planTermId: integer('plan_term_id'),
  graceUntil: ts('grace_until'),
  quotaResetDays: integer('quota_reset_days').notNull().default(30),
  meteredUntil: ts('metered_until'),
  cancelledAt: ts('cancelled_at'),
  cancelReason: text('cancel_reason').$type<CancelReason>(),
  createdAt: ts('created_at').notNull().defaultNow(),
  updatedAt: ts('updated_at').notNull().defaultNow(),
});

/** Why the system cancelled a subscription (spec Subscription: cancel_reason). */
export type CancelReason = 'domain_deleted' | 'recycled_domain_id' | 'plan_switch' | 'trial_ended';

export const dnsRecords = pgTable('dns_records', {
  id: serial('id').primaryKey(),
  // No foreign key since migration 0039: the statement trigger dns_records_config_bytes checks the domain (23503).
  domainId: integer('domain_id').notNull(),
  name: text('name').notNull(),
  type: text('type').notNull(),
  destination: text('destination').notNull(),
  mxPriority: integer('mx_priority'),
  ttl: integer('ttl').notNull().default(120),
  proxied: boolean('proxied').notNull().default(false),
  captcha: boolean('captcha').notNull().default(false),
  scheme: text('scheme').notNull().default('Auto'),
  port: integer('port').notNull().default(443),
  hostHeader: text('host_header'),
  hostHeaderMode: text('host_header_mode').notNull().default('own'),
  monitor: boolean('monitor').notNull().default(false),
  timeout: integer('timeout').notNull().default(60),
  comment: text('comment'),
  createdAt: ts('created_at').notNull().defaultNow(),
  updatedAt: ts('updated_at').notNull().defaultNow(),
});

export const configLog = pgTable('config_log', {
  version: bigserial('version', { mode: 'number' }).primaryKey(),
  domainId: integer('domain_id').notNull(),
  domainName: text('domain_name').notNull(),
  deleted: boolean('deleted').notNull().default(false),
  payload: bytea('payload').notNull(),
  createdAt: ts('created_at').notNull().defaultNow(),
  // 0008_config_log_deltas.sql: a delta's payload holds only what the change wrote; these ids it removed.
  delta: boolean('delta').notNull().default(false),
  removedRecordIds: bigint('removed_record_ids', { mode: 'number' }).array().notNull().default([]),
  removedRuleIds: bigint('removed_rule_ids', { mode: 'number' }).array().notNull().default([]),
});

/** The highest tombstone version deleted after its retention: nodes below it rebuild from version 0. One row. */
export const configLogHorizon = pgTable('config_log_horizon', {
  id: integer('id').primaryKey().default(1),
  version: bigint('version', { mode: 'number' }).notNull(),
});

// 0004_domain_checks.sql: when each manual check of a domain last ran (per-domain limits) and its result.
export const domainChecks = pgTable(
  'domain_checks',
  {
    domainId: integer('domain_id')
      .notNull()
      .references(() => domains.id),
    kind: text('kind').$type<'check-ns' | 'delegation'>().notNull(),
    lastAt: ts('last_at').notNull(),
    result: jsonb('result').$type<Record<string, unknown> | null>(),
  },
  (t) => [primaryKey({ columns: [t.domainId, t.kind] })],
);

// 0003_rules.sql: edge rules (common filters and type fields as JSON) and the per-domain cache purge generation.
export const rules = pgTable('rules', {
  id: serial('id').primaryKey(),
  domainId: integer('domain_id')
    .notNull()
    .references(() => domains.id, { onDelete: 'cascade' }),
  type: text('type').notNull(),
  enabled: boolean('enabled').notNull().default(true),
  priority: integer('priority').notNull().default(100),
  filters: jsonb('filters').$type<Record<string, unknown>>().notNull(),
  fields: jsonb('fields').$type<Record<string, unknown>>().notNull(),
  createdAt: ts('created_at').notNull().defaultNow(),
  updatedAt: ts('updated_at').notNull().defaultNow(),
});
export const cachePurges = pgTable('cache_purges', {
  domainId: integer('domain_id')
    .primaryKey()
    .references(() => domains.id, { onDelete: 'cascade' }),
  generation: integer('generation').notNull().default(0),
  purgedAt: ts('purged_at').notNull().defaultNow(),
});

export type WafEventRow = [number, string, number, string, string, string];
// 0003_request_logs.sql: request log records shipped by edge nodes.
export const requestLogs = pgTable('request_logs', {
  id: bigserial('id', { mode: 'number' }).primaryKey(),
  at: ts('at').notNull(),
  node: text('node').notNull(),
  host: text('host').notNull(),
  path: text('path').notNull(),
  method: text('method').notNull(),
  status: integer('status').notNull(),
  bytes: bigint('bytes', { mode: 'number' }).notNull(),
  cacheStatus: text('cache_status').notNull(),
  ruleHits: jsonb('rule_hits').$type<[number, string, boolean][]>().notNull(),
  // 0016: WAF findings, [edge rule id, managed rule id, phase, target, data, action]; [] for most requests.
  wafEvents: jsonb('waf_events').$type<WafEventRow[]>().notNull().default([]),
  // 0017: what fingerprint and bot_route rules saw; '' / 0 / '' when no such rule looked at the request.
  fingerprint: text('fingerprint').notNull().default(''),
  botScore: smallint('bot_score').notNull().default(0),
  botClass: text('bot_class').notNull().default(''),
  durationMs: real('duration_ms').notNull(),
  upstreamMs: real('upstream_ms').notNull(),
  clientIp: text('client_ip').notNull(),
});

// 0021_request_log_batches.sql: the request-log batches applied, by node and batch id (internal/request-logs.ts).
export const requestLogBatches = pgTable(
  'request_log_batches',
  {
    node: text('node').notNull(),
    batch: text('batch').notNull(),
    appliedAt: ts('applied_at').notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.node, t.batch] })],
);

// 0003_cache_purge_requests.sql: selective cache purges; the recent ones travel in the domain snapshot.
export const cachePurgeRequests = pgTable('cache_purge_requests', {
  id: serial('id').primaryKey(),
  domainId: integer('domain_id')
    .notNull()
    .references(() => domains.id, { onDelete: 'cascade' }),
  prefixes: jsonb('prefixes').$type<string[]>().notNull(),
  // 0022: a refresh (entries marked stale at the edge) rather than a purge.
  refresh: boolean('refresh').notNull().default(false),
  createdAt: ts('created_at').notNull().defaultNow(),
});

// 0007_rate_limit_counters.sql: request counters of the rate limit when the database is a shared Postgres server.
export const rateLimitCounters = pgTable('rate_limit_counters', {
  key: text('key').primaryKey(),
  windowStartedAt: ts('window_started_at').notNull(),
  hits: integer('hits').notNull(),
});

// 0008_workflow_outbox.sql: workflow starts recorded by writes, dispatched to Temporal by src/workflow-outbox/.
export const workflowOutbox = pgTable('workflow_outbox', {
  id: bigserial('id', { mode: 'number' }).primaryKey(),
  workflowId: text('workflow_id').notNull(),
  kind: text('kind').$type<'start' | 'signal-with-start' | 'signal'>().notNull(),
  workflowType: text('workflow_type').notNull(),
  args: jsonb('args').$type<unknown[]>().notNull(),
  conflictPolicy: text('conflict_policy').$type<'use-existing' | 'terminate-existing'>().notNull(),
  signal: text('signal'),
  signalArgs: jsonb('signal_args').$type<unknown[] | null>(),
  attempts: integer('attempts').notNull().default(0),
  notBefore: ts('not_before').notNull().defaultNow(),
  claimedUntil: ts('claimed_until'),
  lastError: text('last_error'),
  createdAt: ts('created_at').notNull().defaultNow(),
});

// 0011_uptime.sql: uptime settings (webhook target, signing secret, thresholds), monitors, incidents, deliveries.
export const uptimeSettings = pgTable('uptime_settings', {
  domainId: integer('domain_id')
    .primaryKey()
    .references(() => domains.id, { onDelete: 'cascade' }),
  webhookUrl: text('webhook_url').notNull().default(''),
  notifyWebhook: boolean('notify_webhook').notNull().default(false),
  signingSecret: text('signing_secret').notNull(),
  errorThresholdPct: integer('error_threshold_pct').notNull().default(50),
  minRequestsPerMinute: integer('min_requests_per_minute').notNull().default(20),
  openAfterMinutes: integer('open_after_minutes').notNull().default(2),
  resolveAfterMinutes: integer('resolve_after_minutes').notNull().default(3),
  updatedAt: ts('updated_at').notNull().defaultNow(),
});

// 0018_attack_protection.sql: automatic attack switches (a row once changed) and detected attacks.
export const attackProtection = pgTable('attack_protection', {
  domainId: integer('domain_id')
    .primaryKey()
    .references(() => domains.id, { onDelete: 'cascade' }),
  autoUnderAttack: boolean('auto_under_attack').notNull().default(false),
  autoRateLimit: boolean('auto_rate_limit').notNull().default(false),
  requestRateMultiplier: integer('request_rate_multiplier').notNull().default(5),
  errorRatePercent: integer('error_rate_percent').notNull().default(50),
  minRequestsPerMinute: integer('min_requests_per_minute').notNull().default(1000),
  updatedAt: ts('updated_at').notNull().defaultNow(),
  /** The detector turned Under Attack Mode on (0019_attack_detection.sql): only then does it turn it off again. */
  underAttackByDetector: boolean('under_attack_by_detector').notNull().default(false),
});

export interface AttackClient {
  address: string;
  requests: number;
}
/** What an automatic switch did when the attack was detected (0019_attack_detection.sql). */
export interface AttackAction {
  action: 'under_attack' | 'enforce';
  result: 'done' | 'skipped';
  /** Why it was skipped ('' when done). */
  reason: string;
}
export const attacks = pgTable('attacks', {
  id: serial('id').primaryKey(),
  domainId: integer('domain_id')
    .notNull()
    .references(() => domains.id, { onDelete: 'cascade' }),
  kind: text('kind').$type<'request_rate' | 'error_rate'>().notNull(),
  host: text('host').notNull().default(''),
  path: text('path').notNull().default(''),
  startedAt: ts('started_at').notNull().defaultNow(),
  endedAt: ts('ended_at'),
  peakRequestsPerMinute: integer('peak_requests_per_minute').notNull().default(0),
  topClients: jsonb('top_clients').$type<AttackClient[]>().notNull().default([]),
  ruleType: text('rule_type').$type<'rate_limit' | 'drop'>().notNull(),
  ruleBody: jsonb('rule_body').$type<Record<string, unknown>>().notNull(),
  status: text('status').$type<'detected' | 'enforced' | 'ignored'>().notNull().default('detected'),
  ruleId: integer('rule_id').references(() => rules.id, { onDelete: 'set null' }),
  updatedAt: ts('updated_at').notNull().defaultNow(),
  /** 0019_attack_detection.sql: the start of the attack's last anomalous minute (null: written by hand or tests). */
  lastAnomalyAt: ts('last_anomaly_at'),
  automaticActions: jsonb('automatic_actions').$type<AttackAction[]>().notNull().default([]),
});

// 0019_attack_detection.sql: per domain and minute, requests, errors and the busiest clients, kept one hour.
export const attackMinutes = pgTable(
  'attack_minutes',
  {
    domainId: integer('domain_id')
      .notNull()
      .references(() => domains.id, { onDelete: 'cascade' }),
    minute: ts('minute').notNull(),
    requests: integer('requests').notNull(),
    errors: integer('errors').notNull(),
    /** [address, requests] pairs, busiest first, at most MINUTE_CLIENTS. */
    clients: jsonb('clients').$type<[string, number][]>().notNull().default([]),
    /** The busiest host names and paths, at most FOCUS_KEYS of each (0020_attack_focus.sql). */
    hosts: jsonb('hosts').$type<[string, number][]>().notNull().default([]),
    paths: jsonb('paths').$type<[string, number][]>().notNull().default([]),
    judged: boolean('judged').notNull().default(false),
    /** Bits of what the detector found in the minute: 1 request rate, 2 error rate. */
    anomalies: integer('anomalies').notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.domainId, t.minute] })],
);

export const uptimeMonitors = pgTable('uptime_monitors', {
  id: serial('id').primaryKey(),
  domainId: integer('domain_id')
    .notNull()
    .references(() => domains.id, { onDelete: 'cascade' }),
  name: text('name').notNull().default(''),
  enabled: boolean('enabled').notNull().default(true),
  scope: jsonb('scope').$type<Record<string, unknown>>().notNull(),
  createdAt: ts('created_at').notNull().defaultNow(),
  updatedAt: ts('updated_at').notNull().defaultNow(),
});

export const uptimeIncidents = pgTable('uptime_incidents', {
  id: serial('id').primaryKey(),
  domainId: integer('domain_id')
    .notNull()
    .references(() => domains.id, { onDelete: 'cascade' }),
  hostname: text('hostname').notNull(),
  monitorId: integer('monitor_id'),
  scope: text('scope').notNull().default(''),
  state: text('state').$type<'open' | 'resolved'>().notNull().default('open'),
  peakErrorPct: real('peak_error_pct').notNull().default(0),
  startedAt: ts('started_at').notNull().defaultNow(),
  resolvedAt: ts('resolved_at'),
});

export const uptimeWebhookDeliveries = pgTable('uptime_webhook_deliveries', {
  id: serial('id').primaryKey(),
  domainId: integer('domain_id')
    .notNull()
    .references(() => domains.id, { onDelete: 'cascade' }),
  event: text('event').$type<'outage.opened' | 'outage.resolved' | 'test' | 'analytics.alert'>().notNull(),
  incidentId: integer('incident_id').notNull().default(0),
  redeliveryOf: integer('redelivery_of'),
  url: text('url').notNull(),
  payload: jsonb('payload').$type<Record<string, unknown>>().notNull(),
  state: text('state').$type<'pending' | 'delivered' | 'failed' | 'refused'>().notNull().default('pending'),
  createdAt: ts('created_at').notNull().defaultNow(),
  completedAt: ts('completed_at'),
});

export const uptimeWebhookAttempts = pgTable(
  'uptime_webhook_attempts',
  {
    deliveryId: integer('delivery_id')
      .notNull()
      .references(() => uptimeWebhookDeliveries.id, { onDelete: 'cascade' }),
    attempt: integer('attempt').notNull(),
    startedAt: ts('started_at').notNull(),
    statusCode: integer('status_code'),
    durationMs: integer('duration_ms').notNull(),
    error: text('error'),
    outcome: text('outcome').$type<'success' | 'failure' | 'refused'>().notNull(),
  },
  (t) => [primaryKey({ columns: [t.deliveryId, t.attempt] })],
);

// 0012_uptime_minutes.sql: per-minute origin request and error counts per hostname, summed over edge nodes.
export const uptimeMinuteCounts = pgTable(
  'uptime_minute_counts',
  {
    domainId: integer('domain_id')
      .notNull()
      .references(() => domains.id, { onDelete: 'cascade' }),
    hostname: text('hostname').notNull(),
    minute: ts('minute').notNull(),
    total: integer('total').notNull(),
    errors: integer('errors').notNull(),
    /** 0: the whole-host watch; else the monitor whose scope the requests matched (0014_uptime_monitor_counts.sql). */
    monitorId: integer('monitor_id').notNull().default(0),
    /** Probes the edge sent because traffic was thin, and how many failed (0015_uptime_probes.sql). */
    probes: integer('probes').notNull().default(0),
    probeErrors: integer('probe_errors').notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.hostname, t.minute, t.monitorId] })],
);

// 0022_cache_inventory.sql: what each edge process's cache holds, replaced by each snapshot (areas/cache/inventory.ts).
export const cacheInventoryNodes = pgTable('cache_inventory_nodes', {
  node: text('node').primaryKey(),
  address: text('address').notNull(),
  report: text('report').notNull(),
  takenAt: ts('taken_at').notNull(),
  reportedAt: ts('reported_at').notNull().defaultNow(),
});

export const cacheInventoryTotals = pgTable(
  'cache_inventory_totals',
  {
    domainId: integer('domain_id')
      .notNull()
      .references(() => domains.id, { onDelete: 'cascade' }),
    node: text('node')
      .notNull()
      .references(() => cacheInventoryNodes.node, { onDelete: 'cascade' }),
    entries: integer('entries').notNull(),
    bytes: bigint('bytes', { mode: 'number' }).notNull(),
    dropped: integer('dropped').notNull(),
  },
  (t) => [primaryKey({ columns: [t.domainId, t.node] })],
);

export const cacheInventoryEntries = pgTable(
  'cache_inventory_entries',
  {
    domainId: integer('domain_id')
      .notNull()
      .references(() => domains.id, { onDelete: 'cascade' }),
    node: text('node')
      .notNull()
      .references(() => cacheInventoryNodes.node, { onDelete: 'cascade' }),
    key: text('key').notNull(),
    host: text('host').notNull(),
    path: text('path').notNull(),
    status: integer('status').notNull(),
    size: bigint('size', { mode: 'number' }).notNull(),
    contentType: text('content_type').notNull(),
    storedAt: ts('stored_at').notNull(),
    freshUntil: ts('fresh_until').notNull(),
    expiresAt: ts('expires_at').notNull(),
    hits: integer('hits').notNull(),
  },
  (t) => [primaryKey({ columns: [t.domainId, t.key, t.node] })],
);

// 0023_analytics_traffic_hours.sql: billable traffic of the rows the analytics retention deleted (areas/analytics/usage.ts).
export const analyticsTrafficHours = pgTable(
  'analytics_traffic_hours',
  {
    domainId: integer('domain_id')
      .notNull()
      .references(() => domains.id, { onDelete: 'cascade' }),
    hour: ts('hour').notNull(),
    bytes: bigint('bytes', { mode: 'number' }).notNull(),
    billableBytes: bigint('billable_bytes', { mode: 'number' }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.domainId, t.hour] })],
);
/** Up to when (exclusive) a domain's rows were summed into analytics_traffic_hours. */
export const analyticsRolledUp = pgTable('analytics_rolled_up', {
  domainId: integer('domain_id')
    .primaryKey()
    .references(() => domains.id, { onDelete: 'cascade' }),
  rolledUntil: ts('rolled_until').notNull(),
});

// 0027_notifications.sql: the notification feed, one row per recipient (areas/notifications/).
export const notifications = pgTable('notifications', {
  id: bigserial('id', { mode: 'number' }).primaryKey(),
  userId: integer('user_id')
    .notNull()
    .references(() => users.id, { onDelete: 'cascade' }),
  category: text('category').$type<NotificationCategory>().notNull(),
  kind: text('kind').notNull(),
  title: text('title').notNull(),
  body: text('body').notNull().default(''),
  /** The domain's name when the event happened (no foreign key: the notice outlives the domain). */
  domain: text('domain'),
  data: jsonb('data').$type<Record<string, unknown>>().notNull().default({}),
  dedupeKey: text('dedupe_key'),
  readAt: ts('read_at'),
  createdAt: ts('created_at').notNull().defaultNow(),
});

// 0027_support.sql: support tickets and their messages (areas/support/).
export const supportTickets = pgTable('support_tickets', {
  id: serial('id').primaryKey(),
  userId: integer('user_id')
    .notNull()
    .references(() => users.id, { onDelete: 'cascade' }),
  subject: text('subject').notNull(),
  domain: text('domain'),
  status: text('status').$type<'open' | 'answered' | 'closed'>().notNull().default('open'),
  messageCount: integer('message_count').notNull().default(0),
  unreadReplies: integer('unread_replies').notNull().default(0),
  createdAt: ts('created_at').notNull().defaultNow(),
  updatedAt: ts('updated_at').notNull().defaultNow(),
  closedAt: ts('closed_at'),
});
export const supportMessages = pgTable('support_messages', {
  id: serial('id').primaryKey(),
  ticketId: integer('ticket_id')
    .notNull()
    .references(() => supportTickets.id, { onDelete: 'cascade' }),
  author: text('author').$type<'user' | 'support'>().notNull(),
  authorName: text('author_name').notNull().default(''),
  body: text('body').notNull(),
  createdAt: ts('created_at').notNull().defaultNow(),
});
export * from './billing-schema.js';

// 0025_sharing.sql: invitations (a pending one grants nothing), notification choices, the payer nomination.
export const domainInvitations = pgTable('domain_invitations', {
  id: serial('id').primaryKey(),
  domainId: integer('domain_id')
    .notNull()
    .references(() => domains.id, { onDelete: 'cascade' }),
  email: text('email').notNull(),
  role: text('role').$type<'admin' | 'editor' | 'viewer'>().notNull(),
  tokenHash: text('token_hash').notNull().unique(),
  invitedBy: integer('invited_by').references(() => users.id, { onDelete: 'set null' }),
  sends: integer('sends').notNull().default(1),
  createdAt: ts('created_at').notNull().defaultNow(),
  sentAt: ts('sent_at').notNull().defaultNow(),
  expiresAt: ts('expires_at').notNull(),
});

export const domainNotificationSettings = pgTable(
  'domain_notification_settings',
  {
    domainId: integer('domain_id')
      .notNull()
      .references(() => domains.id, { onDelete: 'cascade' }),
    userId: integer('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    settings: jsonb('settings').$type<Record<string, string[]>>().notNull(),
    updatedAt: ts('updated_at').notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.domainId, t.userId] })],
);

/** No row: the owner pays. The row goes with the membership it names (composite foreign key, ON DELETE CASCADE). */
export const domainBillingMembers = pgTable('domain_billing_members', {
  domainId: integer('domain_id')
    .primaryKey()
    .references(() => domains.id, { onDelete: 'cascade' }),
  userId: integer('user_id').notNull(),
  nominatedBy: integer('nominated_by').references(() => users.id, { onDelete: 'set null' }),
  nominatedAt: ts('nominated_at').notNull().defaultNow(),
});

// 0027_recommendations.sql: dismissed recommendations (areas/recommendations/).
export const recommendationDismissals = pgTable(
  'recommendation_dismissals',
  {
    domainId: integer('domain_id')
      .notNull()
      .references(() => domains.id, { onDelete: 'cascade' }),
    checkId: text('check_id').notNull(),
    dismissedBy: integer('dismissed_by').references(() => users.id, { onDelete: 'set null' }),
    dismissedAt: ts('dismissed_at').notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.domainId, t.checkId] })],
);
