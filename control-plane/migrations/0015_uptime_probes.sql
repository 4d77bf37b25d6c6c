-- Uptime probes (issue 14): when a watched scope's traffic is too thin, edge nodes probe its origin; their outcomes
-- are counted beside the proxied requests of the same minute, host and monitor, and judge only thin minutes.
ALTER TABLE uptime_minute_counts ADD COLUMN probes integer NOT NULL DEFAULT 0;
ALTER TABLE uptime_minute_counts ADD COLUMN probe_errors integer NOT NULL DEFAULT 0;
