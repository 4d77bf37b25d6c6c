-- Support tickets (spec "Further operations", Support: list, open, count with unread replies, one with messages,
-- reply). Support's side (reply as support, close) is the admin command line. `unread_replies` counts support's
-- replies the author has not seen (reset when they read the ticket); `message_count` bounds a ticket's messages.
-- `domain` is the name of the domain the ticket is about, if any (not a foreign key: the ticket outlives it).
CREATE TABLE support_tickets (
  id serial PRIMARY KEY,
  user_id integer NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  subject text NOT NULL,
  domain text,
  status text NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'answered', 'closed')),
  message_count integer NOT NULL DEFAULT 0,
  unread_replies integer NOT NULL DEFAULT 0,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  closed_at timestamptz
);
CREATE INDEX support_tickets_user_idx ON support_tickets (user_id, id DESC);
CREATE INDEX support_tickets_status_idx ON support_tickets (status, updated_at);
CREATE TABLE support_messages (
  id serial PRIMARY KEY,
  ticket_id integer NOT NULL REFERENCES support_tickets(id) ON DELETE CASCADE,
  author text NOT NULL CHECK (author IN ('user', 'support')),
  author_name text NOT NULL DEFAULT '',
  body text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX support_messages_ticket_idx ON support_messages (ticket_id, id);
