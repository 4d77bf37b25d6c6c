-- The notification feed (spec Notifications: GET /notifications, GET /notifications/unread-count, POST
-- /notifications/read; "the notification feed carries domain, plan and account events"). One row per recipient.
-- `domain` is the name at the time of the event, not a foreign key: a notification about a domain outlives it
-- (a "domain deleted" notice must stay readable). `dedupe_key` makes an event that may be reported twice (a
-- workflow activity retried, a sweep run again) notify each recipient once. At most 1,000 rows per user are kept
-- (areas/notifications/store.ts prunes the oldest on insert).
CREATE TABLE notifications (
  id bigserial PRIMARY KEY,
  user_id integer NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  category text NOT NULL,
  kind text NOT NULL,
  title text NOT NULL,
  body text NOT NULL DEFAULT '',
  domain text,
  data jsonb NOT NULL DEFAULT '{}',
  dedupe_key text,
  read_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX notifications_user_idx ON notifications (user_id, id DESC);
CREATE INDEX notifications_unread_idx ON notifications (user_id) WHERE read_at IS NULL;
CREATE UNIQUE INDEX notifications_dedupe_idx ON notifications (user_id, dedupe_key) WHERE dedupe_key IS NOT NULL;
