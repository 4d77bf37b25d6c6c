-- Selective cache purges (POST /domains/{domain}/cache/purge): the recent ones travel in the domain snapshot.
CREATE TABLE cache_purge_requests (
  id serial PRIMARY KEY,
  domain_id integer NOT NULL REFERENCES domains(id) ON DELETE CASCADE,
  prefixes jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX cache_purge_requests_domain_idx ON cache_purge_requests (domain_id, id);
