-- Workflow starts a write needs, recorded in the write's own transaction and started by the dispatcher of any
-- control-plane process (src/workflow-outbox/), retried with backoff while Temporal is unreachable. Entries of one
-- workflow id are dispatched in id order; a dispatched entry is deleted.
CREATE TABLE workflow_outbox (
  id              bigserial PRIMARY KEY,
  workflow_id     text NOT NULL,
  kind            text NOT NULL,                 -- start | signal-with-start | signal
  workflow_type   text NOT NULL,
  args            jsonb NOT NULL,
  conflict_policy text NOT NULL,                 -- use-existing | terminate-existing
  signal          text,
  signal_args     jsonb,
  attempts        integer NOT NULL DEFAULT 0,
  not_before      timestamptz NOT NULL DEFAULT now(),
  claimed_until   timestamptz,                   -- a dispatcher works on it until then (a crashed one's claim lapses)
  last_error      text,
  created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX workflow_outbox_workflow_idx ON workflow_outbox (workflow_id, id);
CREATE INDEX workflow_outbox_due_idx ON workflow_outbox (not_before);
