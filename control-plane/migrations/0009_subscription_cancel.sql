-- A subscription outlives its domain (spec Subscription states): deleting the domain cancels it with cancel_reason
-- domain_deleted and keeps the row, so it no longer references domains (and keeps the name it was bought for).
ALTER TABLE subscriptions DROP CONSTRAINT IF EXISTS subscriptions_domain_id_fkey;
ALTER TABLE subscriptions ADD COLUMN domain_name text;
UPDATE subscriptions s SET domain_name = d.name FROM domains d WHERE d.id = s.domain_id;
UPDATE subscriptions SET domain_name = '' WHERE domain_name IS NULL;
ALTER TABLE subscriptions ALTER COLUMN domain_name SET NOT NULL;
ALTER TABLE subscriptions ADD COLUMN cancelled_at timestamptz;
ALTER TABLE subscriptions ADD COLUMN cancel_reason text
  CHECK (cancel_reason IN ('domain_deleted', 'recycled_domain_id', 'plan_switch', 'trial_ended'));
CREATE INDEX subscriptions_domain_idx ON subscriptions(domain_id);
