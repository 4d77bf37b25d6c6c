-- Keyset paging of a domain's records by id (GET records/?cursor=&limit=, and the streamed full list): each page reads
-- its own rows in order, without sorting the domain's whole zone.
CREATE INDEX dns_records_domain_id_idx ON dns_records(domain_id, id);
