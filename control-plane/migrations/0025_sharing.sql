-- Sharing (issue 16): invitations to a domain, each person's notification choices on a domain, and the domain's
-- payer nomination (spec "Billing member (payer)").

-- A pending invitation grants nothing: the invitee becomes a domain_members row only when they accept. The link's
-- token is stored as its sha256 (hex); the token itself is shown once, to the inviter.
CREATE TABLE domain_invitations (
  id            serial PRIMARY KEY,
  domain_id     integer NOT NULL REFERENCES domains(id) ON DELETE CASCADE,
  email         text NOT NULL,                  -- lower case
  role          text NOT NULL,                  -- admin | editor | viewer
  token_hash    text NOT NULL UNIQUE,
  invited_by    integer REFERENCES users(id) ON DELETE SET NULL,
  sends         integer NOT NULL DEFAULT 1,     -- the first send and every resend (each mints a new token)
  created_at    timestamptz NOT NULL DEFAULT now(),
  sent_at       timestamptz NOT NULL DEFAULT now(),
  expires_at    timestamptz NOT NULL
);
CREATE UNIQUE INDEX domain_invitations_domain_email_idx ON domain_invitations(domain_id, email);

-- Notification choices of one person (a member or the owner) on one domain: category -> channels. No row: the
-- defaults of their role.
CREATE TABLE domain_notification_settings (
  domain_id     integer NOT NULL REFERENCES domains(id) ON DELETE CASCADE,
  user_id       integer NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  settings      jsonb NOT NULL,
  updated_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (domain_id, user_id)
);

-- The member whose wallet pays for the domain; no row: the owner pays. The foreign key to domain_members keeps a
-- nomination only as long as its membership: removing the member (API or admin CLI) hands the bill back to the owner.
CREATE TABLE domain_billing_members (
  domain_id     integer PRIMARY KEY REFERENCES domains(id) ON DELETE CASCADE,
  user_id       integer NOT NULL,
  nominated_by  integer REFERENCES users(id) ON DELETE SET NULL,
  nominated_at  timestamptz NOT NULL DEFAULT now(),
  FOREIGN KEY (domain_id, user_id) REFERENCES domain_members(domain_id, user_id) ON DELETE CASCADE
);
