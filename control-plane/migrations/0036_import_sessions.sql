-- DNS import sessions (issue 17 item 2): a staged import of a zone file or of a scan of the domain's current DNS,
-- kept here so it survives restarts, committed all or nothing through changeDomain (areas/import-sessions/).
-- `inputs`: the create bodies the file or the scan found that were valid when the session was planned (the commit plans
-- them again against the zone as it is then); `records`, `skipped`, `errors`, `limit_error`: that plan, as shown;
-- `result`: the per-record result of the commit. At most one session of a domain is live
-- (scanning or open) at a time.
CREATE TABLE import_sessions (
  id            serial PRIMARY KEY,
  domain_id     integer NOT NULL REFERENCES domains(id) ON DELETE CASCADE,
  source        text NOT NULL,                       -- zone | scan
  status        text NOT NULL,                       -- scanning | open | committed | superseded | failed (discarded: deleted)
  auto_commit   boolean NOT NULL DEFAULT false,      -- POST records/scan: commit as soon as the scan is through
  inputs        jsonb NOT NULL DEFAULT '[]',
  records       jsonb NOT NULL DEFAULT '[]',
  skipped       jsonb NOT NULL DEFAULT '[]',
  errors        jsonb NOT NULL DEFAULT '[]',
  limit_error   text,
  progress      jsonb NOT NULL DEFAULT '{}',
  result        jsonb,
  error         text,
  superseded_by integer REFERENCES import_sessions(id) ON DELETE SET NULL,
  created_by    integer,
  created_at    timestamptz NOT NULL DEFAULT now(),
  updated_at    timestamptz NOT NULL DEFAULT now(),
  closed_at     timestamptz
);

CREATE UNIQUE INDEX import_sessions_one_live ON import_sessions (domain_id) WHERE status IN ('scanning', 'open');
CREATE INDEX import_sessions_domain ON import_sessions (domain_id, id);
