-- Domain operations of issue 16 item 5. The analytics tag: a site tag of the domain's web analytics beacon (one per
-- domain, generated). Custom pages: the domain's own HTML for pages the edge makes (kinds and bounds in
-- shared/src/config/custom-pages.ts), carried to the nodes in the domain's config (snapshot.ts).
CREATE TABLE domain_analytics_tags (
  domain_id  integer PRIMARY KEY REFERENCES domains(id) ON DELETE CASCADE,
  tag        text NOT NULL UNIQUE,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE domain_custom_pages (
  domain_id  integer NOT NULL REFERENCES domains(id) ON DELETE CASCADE,
  kind       text NOT NULL,
  html       text NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (domain_id, kind)
);
