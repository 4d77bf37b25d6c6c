-- SSO (spec "What the service does", SSO; areas/sso/): an OAuth 2.1 / OpenID Connect provider on oidc-provider.
-- sso_clients: applications registered through the admin command line; `secret_hash` is the sha256 of a
-- confidential client's secret (public clients have none and must use PKCE); `redirect_uris` are matched exactly.
CREATE TABLE sso_clients (
  client_id text PRIMARY KEY,
  name text NOT NULL,
  secret_hash text,
  redirect_uris text[] NOT NULL,
  post_logout_redirect_uris text[] NOT NULL DEFAULT '{}',
  created_at timestamptz NOT NULL DEFAULT now()
);
-- Everything oidc-provider stores (one row per model and id): sessions, interactions, grants, authorization codes,
-- access and refresh tokens. `grant_id` finds a grant's tokens (revocation, disconnect), `uid` a session by its uid,
-- `account_id`/`client_id` a user's grants (connected apps). `consumed_at` is set once: a second consume of a
-- refresh token is its reuse (the grant is revoked).
CREATE TABLE sso_objects (
  model text NOT NULL,
  id text NOT NULL,
  payload jsonb NOT NULL,
  grant_id text,
  uid text,
  account_id text,
  client_id text,
  expires_at timestamptz,
  consumed_at timestamptz,
  PRIMARY KEY (model, id)
);
CREATE INDEX sso_objects_grant_idx ON sso_objects (grant_id) WHERE grant_id IS NOT NULL;
CREATE INDEX sso_objects_uid_idx ON sso_objects (uid) WHERE uid IS NOT NULL;
CREATE INDEX sso_objects_account_idx ON sso_objects (account_id, client_id) WHERE model = 'Grant';
CREATE INDEX sso_objects_expiry_idx ON sso_objects (expires_at);
-- Signing keys: the newest key not retired signs; a retired key is still published in the JWKS until
-- `publish_until` (when the last token it signed has expired). The private JWK is sealed like certificate keys.
CREATE TABLE sso_signing_keys (
  kid text PRIMARY KEY,
  alg text NOT NULL,
  public_jwk jsonb NOT NULL,
  sealed_private text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  retired_at timestamptz,
  publish_until timestamptz
);
-- Connected apps: which of their domains a user lets an app see (the `domains` claim).
CREATE TABLE sso_app_access (
  user_id integer NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  client_id text NOT NULL REFERENCES sso_clients(client_id) ON DELETE CASCADE,
  domains text[] NOT NULL DEFAULT '{}',
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (user_id, client_id)
);
