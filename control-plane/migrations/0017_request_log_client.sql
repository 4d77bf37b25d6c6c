-- What fingerprint and bot_route rules saw of a request (edge-node/src/rules): its JA4H-style fingerprint, its bot
-- score (1-99, 1: automated) and class; '' / 0 / '' for requests no such rule looked at.
ALTER TABLE request_logs
  ADD COLUMN fingerprint text NOT NULL DEFAULT '',
  ADD COLUMN bot_score smallint NOT NULL DEFAULT 0,
  ADD COLUMN bot_class text NOT NULL DEFAULT '';
