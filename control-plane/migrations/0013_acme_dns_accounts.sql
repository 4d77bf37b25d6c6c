-- The acme-dns account of a domain (at most one): the acme-dns server's URL, the user name and subdomain its /register
-- handed out, and the password sealed like certificate keys (areas/ssl/key-vault.ts, bound to the domain and the user
-- name); never returned by a read. last_test_at paces the credential test (one outbound request per domain at a time).
CREATE TABLE acme_dns_accounts (
  domain_id        integer PRIMARY KEY REFERENCES domains(id) ON DELETE CASCADE,
  server_url       text NOT NULL,
  username         text NOT NULL,
  password_sealed  text NOT NULL,
  subdomain        text NOT NULL,
  fulldomain       text,
  last_test_at     timestamptz,
  last_test_ok     boolean,
  last_test_error  text,
  updated_at       timestamptz NOT NULL DEFAULT now()
);
