-- DNSSEC of managed zones (issue 17 item 3): whether the zone is signed, and its keys. The DNS nodes sign online with
-- the keys the snapshot carries (sealed under the node token); private keys are stored sealed like certificate keys
-- (areas/ssl/key-vault.ts). Key states drive the rollovers (areas/dnssec/rollover.ts): a ZSK is published, then
-- active (signs), then retired (still published) until removed; a KSK is published (signs the key set, named by
-- CDS), then active, then retired (signs, no longer named by CDS) until removed.
CREATE TABLE domain_dnssec (
  domain_id  integer PRIMARY KEY REFERENCES domains(id) ON DELETE CASCADE,
  enabled    boolean NOT NULL DEFAULT false,
  updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE dnssec_keys (
  id                 serial PRIMARY KEY,
  domain_id          integer NOT NULL REFERENCES domains(id) ON DELETE CASCADE,
  role               text NOT NULL CHECK (role IN ('ksk', 'zsk')),
  algorithm          smallint NOT NULL DEFAULT 13,
  public_key         text NOT NULL,
  private_key_sealed text NOT NULL,
  key_tag            integer NOT NULL,
  state              text NOT NULL CHECK (state IN ('published', 'active', 'retired')),
  state_since        timestamptz NOT NULL DEFAULT now(),
  created_at         timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX dnssec_keys_domain ON dnssec_keys (domain_id);
