-- Automatic attack protection (spec Domains "Further operations": GET/PUT automatic attack switches, GET detected
-- attacks, POST enforce or ignore an attack). The switches of a domain (a row only once they are first changed;
-- defaults otherwise) and the attacks detected on it, each with the rule that would stop it.
CREATE TABLE attack_protection (
  domain_id integer PRIMARY KEY REFERENCES domains(id) ON DELETE CASCADE,
  auto_under_attack boolean NOT NULL DEFAULT false,
  auto_rate_limit boolean NOT NULL DEFAULT false,
  request_rate_multiplier integer NOT NULL DEFAULT 5,
  error_rate_percent integer NOT NULL DEFAULT 50,
  min_requests_per_minute integer NOT NULL DEFAULT 1000,
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE attacks (
  id serial PRIMARY KEY,
  domain_id integer NOT NULL REFERENCES domains(id) ON DELETE CASCADE,
  kind text NOT NULL CHECK (kind IN ('request_rate', 'error_rate')),
  host text NOT NULL DEFAULT '',
  path text NOT NULL DEFAULT '',
  started_at timestamptz NOT NULL DEFAULT now(),
  ended_at timestamptz,
  peak_requests_per_minute integer NOT NULL DEFAULT 0,
  top_clients jsonb NOT NULL DEFAULT '[]',
  rule_type text NOT NULL CHECK (rule_type IN ('rate_limit', 'drop')),
  rule_body jsonb NOT NULL,
  status text NOT NULL DEFAULT 'detected' CHECK (status IN ('detected', 'enforced', 'ignored')),
  rule_id integer REFERENCES rules(id) ON DELETE SET NULL,
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX attacks_domain_idx ON attacks (domain_id, started_at DESC, id DESC);
