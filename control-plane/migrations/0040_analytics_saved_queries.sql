-- Saved analytics queries (issue 15 item 4; areas/analytics/saved-queries*.ts): per account, a name and one SELECT
-- over `logs` (checked by the sandbox of POST /analytics/query when saved), and optionally an alert: a threshold on a
-- numeric column of the first row, evaluated every interval_seconds by the workflow `analytics-alert:<id>`, which
-- notifies the account's feed and/or the uptime webhook of one of its domains once per crossing. The evaluation's
-- state is kept here, so a restart of any process neither repeats nor loses a crossing.
CREATE TABLE analytics_saved_queries (
  id serial PRIMARY KEY,
  user_id integer NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  name text NOT NULL,
  query text NOT NULL,
  -- The alert: all of column, op, value and interval_seconds, or none of them.
  alert_column text,
  alert_op text CHECK (alert_op IN ('>', '>=', '<', '<=', '=', '!=')),
  alert_value double precision,
  interval_seconds integer CHECK (interval_seconds > 0),
  notify_feed boolean NOT NULL DEFAULT false,
  -- The domain whose uptime webhook (webhook_url, signing secret) receives `analytics.alert`; null none. A deleted
  -- domain leaves the alert without it (each later crossing records the error).
  webhook_domain_id integer REFERENCES domains(id) ON DELETE SET NULL,
  notify_webhook boolean NOT NULL DEFAULT false,
  -- unknown: not evaluated since the alert was set; ok: the condition did not hold; firing: it held (notified once).
  alert_state text NOT NULL DEFAULT 'unknown' CHECK (alert_state IN ('unknown', 'ok', 'firing')),
  last_evaluated_at timestamptz,
  last_value double precision,
  last_error text,
  last_fired_at timestamptz,
  fired_count integer NOT NULL DEFAULT 0,
  -- When the next evaluation is due; an evaluation claims it by moving it one interval on.
  next_evaluation_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  CHECK ((alert_column IS NULL) = (alert_op IS NULL) AND (alert_op IS NULL) = (alert_value IS NULL)
    AND (alert_value IS NULL) = (interval_seconds IS NULL))
);
CREATE INDEX analytics_saved_queries_user_idx ON analytics_saved_queries (user_id, id);

-- An alert to an uptime webhook is one more event kind of its deliveries (listed by GET /uptime/webhook/deliveries).
ALTER TABLE uptime_webhook_deliveries DROP CONSTRAINT uptime_webhook_deliveries_event_check;
ALTER TABLE uptime_webhook_deliveries ADD CONSTRAINT uptime_webhook_deliveries_event_check
  CHECK (event IN ('outage.opened', 'outage.resolved', 'test', 'analytics.alert'));
