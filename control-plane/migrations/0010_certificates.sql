-- Certificates a domain's edge serves (issue 11): uploaded by the user or issued through ACME. The private key is
-- kept only sealed with the control plane's certificate key (areas/ssl/key-vault.ts); no read returns it.
CREATE TABLE certificates (
  id                 serial PRIMARY KEY,
  domain_id          integer NOT NULL REFERENCES domains(id) ON DELETE CASCADE,
  source             text NOT NULL CHECK (source IN ('uploaded', 'issued')),
  -- names the edge serves it for (chosen from the leaf's SANs of this domain); `*.` wildcards allowed
  hostnames          text[] NOT NULL,
  -- every DNS name of the leaf's subjectAltName, lower case
  sans               text[] NOT NULL,
  -- leaf, then the intermediates in order
  certificate_pem    text NOT NULL,
  private_key_sealed text NOT NULL,
  subject            text NOT NULL,
  issuer             text NOT NULL,
  serial_number      text NOT NULL,
  fingerprint_sha256 text NOT NULL,
  key_type           text NOT NULL CHECK (key_type IN ('rsa', 'ecdsa')),
  key_size           integer NOT NULL,
  not_before         timestamptz NOT NULL,
  not_after          timestamptz NOT NULL,
  -- the certificate the user chose for the edge: it wins every hostname it covers (at most one per domain)
  selected           boolean NOT NULL DEFAULT false,
  created_at         timestamptz NOT NULL DEFAULT now(),
  UNIQUE (domain_id, fingerprint_sha256)
);
CREATE INDEX certificates_domain_idx ON certificates (domain_id, id);
CREATE UNIQUE INDEX certificates_selected_idx ON certificates (domain_id) WHERE selected;

-- Where ACME issuance of a domain stands (written by the issuance workflows, read by GET ssl/ and the domain list).
CREATE TABLE ssl_issuance (
  domain_id             integer PRIMARY KEY REFERENCES domains(id) ON DELETE CASCADE,
  -- idle (nothing running), pending (an order runs) or failed (the last order failed)
  status                text NOT NULL DEFAULT 'idle' CHECK (status IN ('idle', 'pending', 'failed')),
  last_issue_attempt_at timestamptz,
  -- a manual POST ssl/issue is refused before this instant (per-domain cooldown)
  next_manual_issue_at  timestamptz,
  last_error            text,
  -- per hostname: {"attempts": n, "last_error": "…", "next_retry_at": "…"} of names not yet covered
  hostnames             jsonb NOT NULL DEFAULT '{}'::jsonb,
  updated_at            timestamptz NOT NULL DEFAULT now()
);
