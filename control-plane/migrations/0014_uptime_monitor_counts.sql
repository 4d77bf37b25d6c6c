-- Uptime monitors (issue 14): minute counts per monitor scope beside the whole-host ones (monitor_id 0).
ALTER TABLE uptime_minute_counts ADD COLUMN monitor_id integer NOT NULL DEFAULT 0;
ALTER TABLE uptime_minute_counts DROP CONSTRAINT uptime_minute_counts_pkey;
ALTER TABLE uptime_minute_counts ADD PRIMARY KEY (hostname, minute, monitor_id);
