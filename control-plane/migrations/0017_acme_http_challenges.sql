-- ACME http-01 challenges of orders in progress (issue 11): published by the certificate workflow, carried to edge
-- nodes in the domain's snapshot (acme_http_challenges) and withdrawn after the order. Rows left by an order whose
-- workflow died are dropped at the next publish of the domain once older than a day.
CREATE TABLE acme_http_challenges (
  domain_id          integer NOT NULL REFERENCES domains(id) ON DELETE CASCADE,
  hostname           text NOT NULL,
  token              text NOT NULL,
  key_authorization  text NOT NULL,
  created_at         timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (domain_id, hostname, token)
);
