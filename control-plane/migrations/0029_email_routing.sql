-- Email routing (spec "Email routing"): per-domain settings with the domain's DKIM key (private key sealed at rest),
-- custom addresses, the owners' destination addresses (verified through an emailed single-use link), the activity
-- log (metadata only: never a message's content) and the per-day forward and send counters of the plan limits.
CREATE TABLE email_routing (
  domain_id integer PRIMARY KEY REFERENCES domains(id) ON DELETE CASCADE,
  enabled boolean NOT NULL DEFAULT false,
  records_locked boolean NOT NULL DEFAULT true,
  catch_all_enabled boolean NOT NULL DEFAULT false,
  catch_all_action text NOT NULL DEFAULT 'drop' CHECK (catch_all_action IN ('drop', 'forward')),
  catch_all_destination text NOT NULL DEFAULT '',
  dkim_selector text NOT NULL,
  dkim_public_key text NOT NULL,
  dkim_private_sealed text NOT NULL,
  -- ids of the dns_records rows that enable published (MX, SPF, DKIM, DMARC)
  managed_record_ids integer[] NOT NULL DEFAULT '{}',
  last_check jsonb,
  -- dmarc_policy: 'honor' refuses a message whose DMARC fails under p=reject; 'ignore' forwards it (verdict logged)
  settings jsonb NOT NULL DEFAULT '{"dmarc_policy": "honor"}',
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE email_addresses (
  id serial PRIMARY KEY,
  domain_id integer NOT NULL REFERENCES domains(id) ON DELETE CASCADE,
  local_part text NOT NULL,
  destination text NOT NULL,
  enabled boolean NOT NULL DEFAULT true,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX email_addresses_domain_local_idx ON email_addresses (domain_id, local_part);
CREATE TABLE email_destinations (
  id serial PRIMARY KEY,
  user_id integer NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  email text NOT NULL,
  verified_at timestamptz,
  -- sha256 of the newest verification token; null once used
  token_hash text,
  token_expires_at timestamptz,
  sent_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX email_destinations_user_email_idx ON email_destinations (user_id, email);
CREATE TABLE email_activity (
  id bigserial PRIMARY KEY,
  domain_id integer NOT NULL REFERENCES domains(id) ON DELETE CASCADE,
  at timestamptz NOT NULL DEFAULT now(),
  direction text NOT NULL DEFAULT 'in' CHECK (direction IN ('in', 'out')),
  mail_from text NOT NULL DEFAULT '',
  rcpt_to text NOT NULL DEFAULT '',
  destination text NOT NULL DEFAULT '',
  message_id text NOT NULL DEFAULT '',
  subject_hash text NOT NULL DEFAULT '',
  size integer NOT NULL DEFAULT 0,
  spf text NOT NULL DEFAULT '',
  dkim text NOT NULL DEFAULT '',
  dmarc text NOT NULL DEFAULT '',
  action text NOT NULL CHECK (action IN ('forwarded', 'refused', 'deferred', 'bounced', 'dropped', 'sent')),
  reason text NOT NULL DEFAULT '',
  smtp_response text NOT NULL DEFAULT ''
);
CREATE INDEX email_activity_domain_idx ON email_activity (domain_id, id DESC);
CREATE TABLE email_daily_counts (
  domain_id integer NOT NULL REFERENCES domains(id) ON DELETE CASCADE,
  day date NOT NULL,
  forwards integer NOT NULL DEFAULT 0,
  sends integer NOT NULL DEFAULT 0,
  PRIMARY KEY (domain_id, day)
);
