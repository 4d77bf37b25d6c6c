-- Catch-up reads the latest config_log entry per domain; this index keeps the "is there a newer one" probe cheap.
CREATE INDEX config_log_domain_version_idx ON config_log(domain_name, version);
