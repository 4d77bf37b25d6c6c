-- Uptime (spec "Uptime monitor", "Uptime incident", "Events"): per-domain settings with the webhook target and its
-- signing secret, path-scoped monitors, incidents, and the webhook deliveries log with every attempt.
CREATE TABLE uptime_settings (
  domain_id integer PRIMARY KEY REFERENCES domains(id) ON DELETE CASCADE,
  webhook_url text NOT NULL DEFAULT '',
  notify_webhook boolean NOT NULL DEFAULT false,
  signing_secret text NOT NULL,
  error_threshold_pct integer NOT NULL DEFAULT 50,
  min_requests_per_minute integer NOT NULL DEFAULT 20,
  open_after_minutes integer NOT NULL DEFAULT 2,
  resolve_after_minutes integer NOT NULL DEFAULT 3,
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE uptime_monitors (
  id serial PRIMARY KEY,
  domain_id integer NOT NULL REFERENCES domains(id) ON DELETE CASCADE,
  name text NOT NULL DEFAULT '',
  enabled boolean NOT NULL DEFAULT true,
  scope jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX uptime_monitors_domain_idx ON uptime_monitors (domain_id, id);
CREATE TABLE uptime_incidents (
  id serial PRIMARY KEY,
  domain_id integer NOT NULL REFERENCES domains(id) ON DELETE CASCADE,
  hostname text NOT NULL,
  monitor_id integer,
  scope text NOT NULL DEFAULT '',
  state text NOT NULL DEFAULT 'open' CHECK (state IN ('open', 'resolved')),
  peak_error_pct real NOT NULL DEFAULT 0,
  started_at timestamptz NOT NULL DEFAULT now(),
  resolved_at timestamptz
);
CREATE INDEX uptime_incidents_domain_idx ON uptime_incidents (domain_id, id);
-- One open incident per watch (hostname, monitor or the whole-host watch).
CREATE UNIQUE INDEX uptime_incidents_open_idx ON uptime_incidents (domain_id, hostname, (coalesce(monitor_id, 0)))
  WHERE state = 'open';
CREATE TABLE uptime_webhook_deliveries (
  id serial PRIMARY KEY,
  domain_id integer NOT NULL REFERENCES domains(id) ON DELETE CASCADE,
  event text NOT NULL CHECK (event IN ('outage.opened', 'outage.resolved', 'test')),
  incident_id integer NOT NULL DEFAULT 0,
  redelivery_of integer,
  url text NOT NULL,
  payload jsonb NOT NULL,
  state text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'failed', 'refused')),
  created_at timestamptz NOT NULL DEFAULT now(),
  completed_at timestamptz
);
CREATE INDEX uptime_webhook_deliveries_domain_idx ON uptime_webhook_deliveries (domain_id, id);
-- Each incident sends each event at most once (spec Events); a manual redelivery is a delivery of its own.
CREATE UNIQUE INDEX uptime_webhook_deliveries_once_idx ON uptime_webhook_deliveries (incident_id, event)
  WHERE incident_id > 0 AND redelivery_of IS NULL;
CREATE TABLE uptime_webhook_attempts (
  delivery_id integer NOT NULL REFERENCES uptime_webhook_deliveries(id) ON DELETE CASCADE,
  attempt integer NOT NULL,
  started_at timestamptz NOT NULL,
  status_code integer,
  duration_ms integer NOT NULL,
  error text,
  outcome text NOT NULL CHECK (outcome IN ('success', 'failure', 'refused')),
  PRIMARY KEY (delivery_id, attempt)
);
