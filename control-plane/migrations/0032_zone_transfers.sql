-- Zone transfers out (issue 17 item 4): the secondaries the DNS nodes allow AXFR/IXFR from and send NOTIFY to, and
-- the TSIG keys they sign with (secrets sealed at rest by the key vault, like certificate keys). Carried to the
-- nodes in the domain's snapshot (areas/zone-transfers/store.ts).
CREATE TABLE zone_transfer_tsig_keys (
  id            serial PRIMARY KEY,
  domain_id     integer NOT NULL REFERENCES domains(id) ON DELETE CASCADE,
  name          text NOT NULL,
  algorithm     text NOT NULL DEFAULT 'hmac-sha256',
  secret_sealed text NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now(),
  UNIQUE (domain_id, name)
);

CREATE TABLE zone_transfer_secondaries (
  id         serial PRIMARY KEY,
  domain_id  integer NOT NULL REFERENCES domains(id) ON DELETE CASCADE,
  address    text NOT NULL,
  port       integer NOT NULL DEFAULT 53,
  tsig_key   text,
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (domain_id, address, port)
);
