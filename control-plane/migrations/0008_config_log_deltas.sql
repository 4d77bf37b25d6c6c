-- Config log deltas (issue 8 item 5): an entry is a whole snapshot, a delta (payload = the domain-level fields whole
-- plus only the records and rules the change wrote; the removed ids below) or a tombstone.
ALTER TABLE config_log ADD COLUMN delta boolean NOT NULL DEFAULT false;
ALTER TABLE config_log ADD COLUMN removed_record_ids bigint[] NOT NULL DEFAULT '{}';
ALTER TABLE config_log ADD COLUMN removed_rule_ids bigint[] NOT NULL DEFAULT '{}';

-- Tombstones are kept for a retention period, then deleted; a node whose version is below the highest deleted
-- tombstone may have missed a deletion and rebuilds from version 0. One row.
CREATE TABLE config_log_horizon (
  id      integer PRIMARY KEY DEFAULT 1 CHECK (id = 1),
  version bigint NOT NULL
);
INSERT INTO config_log_horizon (id, version) VALUES (1, 0);

-- The size of each domain's compiled config (records and rules as nodes receive them), kept by the triggers below
-- so that a write checks the limit without reading the zone. Formulas: protobuf overhead of a record or rule plus
-- its text; a rule body (msgpack) is counted as the JSON text of its filters and fields.
ALTER TABLE domains ADD COLUMN config_bytes bigint NOT NULL DEFAULT 0;

CREATE FUNCTION dns_record_config_bytes(name text, type text, destination text, scheme text, host_header_mode text, host_header text) RETURNS bigint
  IMMUTABLE LANGUAGE sql AS 'SELECT 48 + octet_length(name) + octet_length(type) + octet_length(destination) + octet_length(scheme) + octet_length(host_header_mode) + coalesce(octet_length(host_header), 0)';

CREATE FUNCTION rule_config_bytes(type text, filters jsonb, fields jsonb) RETURNS bigint
  IMMUTABLE LANGUAGE sql AS 'SELECT 24 + octet_length(type) + octet_length(filters::text) + octet_length(fields::text)';

-- Statement-level: one UPDATE of the domain per statement, however many rows it wrote (a 1000-record batch).
CREATE FUNCTION dns_records_config_bytes() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
  IF TG_OP <> 'DELETE' THEN
    UPDATE domains d SET config_bytes = d.config_bytes + s.bytes FROM (SELECT domain_id, sum(dns_record_config_bytes(name, type, destination, scheme, host_header_mode, host_header)) AS bytes FROM new_rows GROUP BY domain_id) s WHERE d.id = s.domain_id; END IF;
  IF TG_OP <> 'INSERT' THEN
    UPDATE domains d SET config_bytes = d.config_bytes - s.bytes FROM (SELECT domain_id, sum(dns_record_config_bytes(name, type, destination, scheme, host_header_mode, host_header)) AS bytes FROM old_rows GROUP BY domain_id) s WHERE d.id = s.domain_id; END IF;
  RETURN NULL; END $$;

CREATE FUNCTION rules_config_bytes() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
  IF TG_OP <> 'DELETE' THEN
    UPDATE domains d SET config_bytes = d.config_bytes + s.bytes FROM (SELECT domain_id, sum(rule_config_bytes(type, filters, fields)) AS bytes FROM new_rows GROUP BY domain_id) s WHERE d.id = s.domain_id; END IF;
  IF TG_OP <> 'INSERT' THEN
    UPDATE domains d SET config_bytes = d.config_bytes - s.bytes FROM (SELECT domain_id, sum(rule_config_bytes(type, filters, fields)) AS bytes FROM old_rows GROUP BY domain_id) s WHERE d.id = s.domain_id; END IF;
  RETURN NULL; END $$;

CREATE TRIGGER dns_records_config_bytes_insert AFTER INSERT ON dns_records REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION dns_records_config_bytes();
CREATE TRIGGER dns_records_config_bytes_update AFTER UPDATE ON dns_records REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION dns_records_config_bytes();
CREATE TRIGGER dns_records_config_bytes_delete AFTER DELETE ON dns_records REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION dns_records_config_bytes();
CREATE TRIGGER rules_config_bytes_insert AFTER INSERT ON rules REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION rules_config_bytes();
CREATE TRIGGER rules_config_bytes_update AFTER UPDATE ON rules REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION rules_config_bytes();
CREATE TRIGGER rules_config_bytes_delete AFTER DELETE ON rules REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION rules_config_bytes();

UPDATE domains d SET config_bytes =
  coalesce((SELECT sum(dns_record_config_bytes(name, type, destination, scheme, host_header_mode, host_header)) FROM dns_records r WHERE r.domain_id = d.id), 0) +
  coalesce((SELECT sum(rule_config_bytes(type, filters, fields)) FROM rules u WHERE u.domain_id = d.id), 0);
