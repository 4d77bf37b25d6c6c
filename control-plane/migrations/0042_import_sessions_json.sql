-- Import sessions of large zones (issue 17 items 1 and 2): the session's records and results are kept as json (the
-- text as written), not jsonb. A jsonb array is bounded at 256 MB, which the planned records of a 1,000,000-record
-- zone file pass (about 220 bytes each): starting such a session failed. json is bounded by the 1 GB of any value, is
-- stored and read back as the text the control plane wrote (no conversion to and from jsonb's binary form), and
-- nothing queries inside these columns (areas/import-sessions/store.ts reads and writes them whole). `progress` (a few
-- fields a scan updates) stays jsonb.
ALTER TABLE import_sessions
  ALTER COLUMN inputs DROP DEFAULT,
  ALTER COLUMN records DROP DEFAULT,
  ALTER COLUMN skipped DROP DEFAULT,
  ALTER COLUMN errors DROP DEFAULT;
ALTER TABLE import_sessions
  ALTER COLUMN inputs TYPE json USING inputs::json,
  ALTER COLUMN records TYPE json USING records::json,
  ALTER COLUMN skipped TYPE json USING skipped::json,
  ALTER COLUMN errors TYPE json USING errors::json,
  ALTER COLUMN result TYPE json USING result::json;
ALTER TABLE import_sessions
  ALTER COLUMN inputs SET DEFAULT '[]',
  ALTER COLUMN records SET DEFAULT '[]',
  ALTER COLUMN skipped SET DEFAULT '[]',
  ALTER COLUMN errors SET DEFAULT '[]';
