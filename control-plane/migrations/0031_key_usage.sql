-- Requests per API key per UTC day, for the panel's 30-day chart of each key (issue 20; spec: API key usage). Each
-- control-plane process counts in memory and adds its counts here every few seconds (auth/key-usage.ts).
CREATE TABLE api_key_usage_days (
  key_id   integer NOT NULL REFERENCES api_keys(id) ON DELETE CASCADE,
  day      date NOT NULL,
  requests bigint NOT NULL,
  PRIMARY KEY (key_id, day)
);
