-- Accounts' sign-in (issue 20; used by the SSO provider of issue 19): a password per account (scrypt, set with the
-- admin CLI or by the account itself), browser sessions (an opaque random token in a cookie, stored as its sha256,
-- with an expiry, revocable) and the counters that throttle failed sign-ins per account and per client network.
ALTER TABLE users ADD COLUMN password_hash text;
ALTER TABLE users ADD COLUMN password_changed_at timestamptz;

CREATE TABLE browser_sessions (
  id           serial PRIMARY KEY,
  user_id      integer NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  token_hash   text NOT NULL UNIQUE,
  created_at   timestamptz NOT NULL DEFAULT now(),
  last_seen_at timestamptz NOT NULL DEFAULT now(),
  expires_at   timestamptz NOT NULL,
  revoked_at   timestamptz,
  user_agent   text NOT NULL DEFAULT '',
  client_ip    text NOT NULL DEFAULT ''
);
CREATE INDEX browser_sessions_user ON browser_sessions (user_id);

CREATE TABLE login_throttle (
  bucket            text PRIMARY KEY,
  failures          integer NOT NULL,
  window_started_at timestamptz NOT NULL
);
