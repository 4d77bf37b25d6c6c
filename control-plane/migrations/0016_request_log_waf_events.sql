-- WAF findings of each request (edge-node/src/waf): [edge rule id, managed rule id, phase, target, data, action],
-- at most 16 per request; empty for the requests without any.
ALTER TABLE request_logs ADD COLUMN waf_events jsonb NOT NULL DEFAULT '[]'::jsonb;
