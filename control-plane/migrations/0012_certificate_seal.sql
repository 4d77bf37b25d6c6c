-- Which node token the certificate keys in the config log are sealed under (an id derived from it, not the token):
-- when a control plane starts with another token it appends a fresh entry for every domain with certificates, so
-- nodes holding the new token can open their keys (areas/ssl/service.ts resealForNodeToken).
CREATE TABLE certificate_seal (
  id            boolean PRIMARY KEY DEFAULT true CHECK (id),
  node_token_id text NOT NULL,
  updated_at    timestamptz NOT NULL DEFAULT now()
);
