-- Billable traffic of request-log rows the analytics retention deleted, per domain and UTC hour, so that a quota
-- window longer than the plan's log retention (free: 3 days against 30) still counts every byte
-- (areas/analytics/usage.ts). analytics_rolled_up says up to when a domain's rows were summed into the hours: the
-- next sweep sums only later rows, so a sweep that died between its sums and its deletes counts nothing twice.
CREATE TABLE analytics_traffic_hours (
  domain_id integer NOT NULL REFERENCES domains(id) ON DELETE CASCADE,
  hour timestamptz NOT NULL,
  bytes bigint NOT NULL,
  billable_bytes bigint NOT NULL,
  PRIMARY KEY (domain_id, hour)
);
CREATE TABLE analytics_rolled_up (
  domain_id integer PRIMARY KEY REFERENCES domains(id) ON DELETE CASCADE,
  rolled_until timestamptz NOT NULL
);
