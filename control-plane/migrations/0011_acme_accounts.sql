-- ACME accounts of this environment, one per directory URL (Let's Encrypt staging and production, ZeroSSL, Pebble each
-- have their own): the account key the workflows worker signs with, made by the control plane on first use and kept
-- sealed like certificate keys (areas/ssl/key-vault.ts, bound to the directory URL).
CREATE TABLE acme_accounts (
  directory_url   text PRIMARY KEY,
  account_key_sealed text NOT NULL,
  created_at      timestamptz NOT NULL DEFAULT now()
);
