-- Uptime detection (issue 14): per-minute counts of requests the edge sent to the origin and of origin errors, per
-- hostname, summed over every edge node that shipped them with its request-log batches. Kept one hour.
CREATE TABLE uptime_minute_counts (
  domain_id integer NOT NULL REFERENCES domains(id) ON DELETE CASCADE,
  hostname text NOT NULL,
  minute timestamptz NOT NULL,
  total integer NOT NULL,
  errors integer NOT NULL,
  PRIMARY KEY (hostname, minute)
);
CREATE INDEX uptime_minute_counts_domain_idx ON uptime_minute_counts (domain_id, minute);
