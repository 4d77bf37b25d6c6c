-- Request log records shipped by edge nodes (POST /internal/request-logs), read later by analytics.
CREATE TABLE request_logs (
  id bigserial PRIMARY KEY,
  at timestamptz NOT NULL,
  node text NOT NULL,
  host text NOT NULL,
  path text NOT NULL,
  method text NOT NULL,
  status integer NOT NULL,
  bytes bigint NOT NULL,
  cache_status text NOT NULL,
  rule_hits jsonb NOT NULL,
  duration_ms real NOT NULL,
  upstream_ms real NOT NULL,
  client_ip text NOT NULL
);
CREATE INDEX request_logs_host_at_idx ON request_logs (host, at);
