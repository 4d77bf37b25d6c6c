-- Recommendations (spec "Further operations", Recommendations): the checklist itself is computed from the domain's
-- state at each read (areas/recommendations/checks.ts); only the dismissals are stored.
CREATE TABLE recommendation_dismissals (
  domain_id integer NOT NULL REFERENCES domains(id) ON DELETE CASCADE,
  check_id text NOT NULL,
  dismissed_by integer REFERENCES users(id) ON DELETE SET NULL,
  dismissed_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (domain_id, check_id)
);
