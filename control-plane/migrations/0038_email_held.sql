-- Email routing's held messages (issue 18): a message the destination deferred (4xx) after the mail node accepted it,
-- kept until the retry workflow (`retryHeldEmail`, id `email-retry:<id>`) delivers or bounces it. The content is
-- only ever here sealed (AES-256-GCM under DATA_DIR/email-hold-key, bound to the row's id); the row is deleted when
-- the message is delivered or bounced, and any row past expires_at is purged (retention = the retry schedule).
CREATE TABLE email_held (
  id text PRIMARY KEY,
  domain_id integer NOT NULL REFERENCES domains(id) ON DELETE CASCADE,
  -- the original envelope sender (activity log) and the SRS-rewritten one the retries use
  mail_from text NOT NULL,
  envelope_from text NOT NULL,
  rcpt_to text NOT NULL,
  destination text NOT NULL,
  message_id text NOT NULL DEFAULT '',
  size integer NOT NULL,
  spf text NOT NULL DEFAULT '',
  dkim text NOT NULL DEFAULT '',
  dmarc text NOT NULL DEFAULT '',
  -- attempts made so far (the mail node's first one included)
  attempts integer NOT NULL DEFAULT 1,
  -- nonce, ciphertext and tag, base64
  sealed text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL
);
CREATE INDEX email_held_domain_idx ON email_held (domain_id);
CREATE INDEX email_held_expires_idx ON email_held (expires_at);
