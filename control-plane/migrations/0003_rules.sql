-- Edge rules of the fifteen types (spec "Rule"): common filter fields and type fields as JSON, plus the cache purge
-- generation that tells edge nodes to drop a domain's cache.
CREATE TABLE rules (
  id serial PRIMARY KEY,
  domain_id integer NOT NULL REFERENCES domains(id) ON DELETE CASCADE,
  type text NOT NULL,
  enabled boolean NOT NULL DEFAULT true,
  priority integer NOT NULL DEFAULT 100,
  filters jsonb NOT NULL,
  fields jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX rules_domain_type_idx ON rules (domain_id, type, priority, id);
CREATE TABLE cache_purges (
  domain_id integer PRIMARY KEY REFERENCES domains(id) ON DELETE CASCADE,
  generation integer NOT NULL DEFAULT 0,
  purged_at timestamptz NOT NULL DEFAULT now()
);
