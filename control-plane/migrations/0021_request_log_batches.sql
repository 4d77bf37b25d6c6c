-- Request-log batches applied (POST /internal/request-logs): a batch id is recorded in the transaction that counts its
-- records, so a batch sent again (its acknowledgement lost to a restart or a timeout) is acknowledged, not counted
-- again. Rows older than the node's retry horizon are pruned.
CREATE TABLE request_log_batches (
  node text NOT NULL,
  batch text NOT NULL,
  applied_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (node, batch)
);
CREATE INDEX request_log_batches_applied_at ON request_log_batches (applied_at);
