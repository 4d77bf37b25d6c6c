-- dns_records.domain_id: the foreign key to domains is replaced by the same rule kept per statement (issue 17, large
-- zone import). A foreign key is checked row by row (one lookup of the domain per record): for a 1,000,000-record
-- import's COPY that was 9-10 s of the statement's 16 s on Postgres (bench/RESULTS.md). The statement trigger that
-- keeps domains.config_bytes already updates, for every domain the statement wrote records into, that domain's row
-- (which locks it against a concurrent delete, as the key's FOR KEY SHARE did): a domain it could not update does
-- not exist, and the statement fails with the foreign key's error (23503, same constraint name). ON DELETE CASCADE
-- becomes a statement trigger on domains deleting the records of the domains deleted.
ALTER TABLE dns_records DROP CONSTRAINT dns_records_domain_id_fkey;

CREATE OR REPLACE FUNCTION dns_records_config_bytes() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  wanted bigint;
  updated bigint;
  missing integer;
BEGIN
  IF TG_OP <> 'DELETE' THEN
    WITH s AS (SELECT domain_id, sum(dns_record_config_bytes(name, type, destination, scheme, host_header_mode, host_header)) AS bytes FROM new_rows GROUP BY domain_id),
      u AS (UPDATE domains d SET config_bytes = d.config_bytes + s.bytes FROM s WHERE d.id = s.domain_id RETURNING d.id)
    SELECT (SELECT count(*) FROM s), (SELECT count(*) FROM u) INTO wanted, updated;
    IF updated < wanted THEN
      SELECT n.domain_id INTO missing FROM new_rows n WHERE NOT EXISTS (SELECT 1 FROM domains d WHERE d.id = n.domain_id) LIMIT 1;
      RAISE EXCEPTION 'insert or update on table "dns_records" violates foreign key constraint "dns_records_domain_id_fkey"'
        USING ERRCODE = 'foreign_key_violation', CONSTRAINT = 'dns_records_domain_id_fkey', TABLE = 'dns_records',
          DETAIL = format('Key (domain_id)=(%s) is not present in table "domains".', missing);
    END IF;
  END IF;
  IF TG_OP <> 'INSERT' THEN
    UPDATE domains d SET config_bytes = d.config_bytes - s.bytes FROM (SELECT domain_id, sum(dns_record_config_bytes(name, type, destination, scheme, host_header_mode, host_header)) AS bytes FROM old_rows GROUP BY domain_id) s WHERE d.id = s.domain_id; END IF;
  RETURN NULL; END $$;

CREATE FUNCTION domains_delete_records() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
  DELETE FROM dns_records r USING old_domains o WHERE r.domain_id = o.id;
  RETURN NULL; END $$;

CREATE TRIGGER domains_delete_records AFTER DELETE ON domains REFERENCING OLD TABLE AS old_domains
  FOR EACH STATEMENT EXECUTE FUNCTION domains_delete_records();
