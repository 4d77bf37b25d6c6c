-- Manual checks of a domain (check-ns; verify and ssl delegation check share one slot): when each last ran, for the
-- per-domain limits of the spec (check-ns once per hour, delegation check once a minute), and what it found.
CREATE TABLE domain_checks (
  domain_id     integer NOT NULL REFERENCES domains(id) ON DELETE CASCADE,
  kind          text NOT NULL,                  -- check-ns | delegation
  last_at       timestamptz NOT NULL,
  result        jsonb,
  PRIMARY KEY (domain_id, kind)
);
