-- Gateways (issue 16 item 4; catalogue in src/areas/gateways/catalogue.ts): which gateways a domain switched on, with
-- the display name the user gave and the ids of the records switching on created (switching off removes those), and
-- which version of the gateways' terms of use each account accepted.
CREATE TABLE domain_gateways (
  domain_id   integer NOT NULL REFERENCES domains(id) ON DELETE CASCADE,
  gateway     text NOT NULL,
  name        text NOT NULL,
  record_ids  integer[] NOT NULL DEFAULT '{}',
  enabled_at  timestamptz NOT NULL DEFAULT now(),
  updated_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (domain_id, gateway)
);

CREATE TABLE gateway_terms_acceptances (
  user_id     integer PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,
  version     text NOT NULL,
  accepted_at timestamptz NOT NULL DEFAULT now()
);
