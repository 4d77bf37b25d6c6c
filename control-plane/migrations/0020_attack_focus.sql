-- Attack detection (issue 13 item 8): the busiest host names and paths of each domain-minute (at most 16 of each,
-- [name, requests] pairs), so an attack aimed at one host or path is listed with it and its suggested rule scoped to
-- it.
ALTER TABLE attack_minutes ADD COLUMN hosts jsonb NOT NULL DEFAULT '[]';
ALTER TABLE attack_minutes ADD COLUMN paths jsonb NOT NULL DEFAULT '[]';
