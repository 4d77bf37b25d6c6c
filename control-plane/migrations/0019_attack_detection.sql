-- Attack detection (issue 13 item 8): per domain and minute, the requests and error answers the edge nodes shipped
-- (summed over nodes and batches) with the busiest client addresses (space-saving summary, at most 64), kept one
-- hour; `judged` once the detector looked at the closed minute, `anomalies` what it found (1 request rate, 2 error
-- rate: anomalous minutes are left out of the usual rate). Attacks remember their last anomalous minute (ended
-- after quiet minutes) and what the automatic switches did; the switches' row remembers whether the detector turned
-- Under Attack Mode on (then only it turns it off again).
CREATE TABLE attack_minutes (
  domain_id integer NOT NULL REFERENCES domains(id) ON DELETE CASCADE,
  minute timestamptz NOT NULL,
  requests integer NOT NULL,
  errors integer NOT NULL,
  clients jsonb NOT NULL DEFAULT '[]',
  judged boolean NOT NULL DEFAULT false,
  anomalies integer NOT NULL DEFAULT 0,
  PRIMARY KEY (domain_id, minute)
);
CREATE INDEX attack_minutes_minute_idx ON attack_minutes (minute);
CREATE INDEX attack_minutes_unjudged_idx ON attack_minutes (minute) WHERE NOT judged;
ALTER TABLE attacks ADD COLUMN last_anomaly_at timestamptz;
ALTER TABLE attacks ADD COLUMN automatic_actions jsonb NOT NULL DEFAULT '[]';
CREATE INDEX attacks_open_idx ON attacks (domain_id) WHERE ended_at IS NULL;
ALTER TABLE attack_protection ADD COLUMN under_attack_by_detector boolean NOT NULL DEFAULT false;
