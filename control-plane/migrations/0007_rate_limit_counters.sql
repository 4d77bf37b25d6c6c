-- Request counters of the rate limit, shared by every control-plane process on one Postgres server (with PGlite,
-- which one process owns, the counters stay in memory). One row per key (`key:<api key id>`, `ip:<client address>`),
-- a fixed window that starts with its first request. UNLOGGED: counters are not worth a WAL write per request; a
-- crash of the server forgets them, which only restarts the windows.
CREATE UNLOGGED TABLE rate_limit_counters (
  key               text PRIMARY KEY,
  window_started_at timestamptz NOT NULL,
  hits              integer NOT NULL
);
