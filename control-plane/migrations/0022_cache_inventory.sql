-- Cache inventories (POST /internal/cache-inventory, areas/cache/inventory.ts): what each edge process's cache holds,
-- replaced whole by each snapshot it reports. A node is one edge process (each worker has its own cache); its
-- `address` is its cache listener, where GET .../cache/entries/{entry}/content fetches one object.
CREATE TABLE cache_inventory_nodes (
  node text PRIMARY KEY,
  address text NOT NULL,
  report text NOT NULL,
  taken_at timestamptz NOT NULL,
  reported_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX cache_inventory_nodes_reported_at ON cache_inventory_nodes (reported_at);

-- Per node and domain: the exact count and body bytes of the cached objects, and how many the listing left out.
CREATE TABLE cache_inventory_totals (
  domain_id integer NOT NULL REFERENCES domains(id) ON DELETE CASCADE,
  node text NOT NULL REFERENCES cache_inventory_nodes(node) ON DELETE CASCADE,
  entries integer NOT NULL,
  bytes bigint NOT NULL,
  dropped integer NOT NULL,
  PRIMARY KEY (domain_id, node)
);
CREATE INDEX cache_inventory_totals_node ON cache_inventory_totals (node);

-- The listed entries (the most recently used, bounded per domain and per report at the node).
CREATE TABLE cache_inventory_entries (
  domain_id integer NOT NULL REFERENCES domains(id) ON DELETE CASCADE,
  node text NOT NULL REFERENCES cache_inventory_nodes(node) ON DELETE CASCADE,
  key text NOT NULL,
  host text NOT NULL,
  path text NOT NULL,
  status integer NOT NULL,
  size bigint NOT NULL,
  content_type text NOT NULL,
  stored_at timestamptz NOT NULL,
  fresh_until timestamptz NOT NULL,
  expires_at timestamptz NOT NULL,
  hits integer NOT NULL,
  PRIMARY KEY (domain_id, key, node)
);
CREATE INDEX cache_inventory_entries_node ON cache_inventory_entries (node);

-- POST /domains/{domain}/cache/refresh: a selective purge that marks entries stale instead of dropping them.
ALTER TABLE cache_purge_requests ADD COLUMN refresh boolean NOT NULL DEFAULT false;
