-- Core schema: accounts, API keys, plans, domains, members, subscriptions, DNS records, config log.
CREATE TABLE users (
  id            serial PRIMARY KEY,
  email         text NOT NULL UNIQUE,
  name          text NOT NULL DEFAULT '',
  active        boolean NOT NULL DEFAULT true,
  created_at    timestamptz NOT NULL DEFAULT now(),
  updated_at    timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE api_keys (
  id            serial PRIMARY KEY,
  user_id       integer NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  name          text NOT NULL DEFAULT '',
  key_hash      text NOT NULL UNIQUE,           -- sha256 hex of the whole key; the key itself is never stored
  key_prefix    text NOT NULL,                  -- first characters, to recognise a key in listings
  read_only     boolean NOT NULL DEFAULT false,
  expires_at    timestamptz,
  revoked_at    timestamptz,
  last_used_at  timestamptz,
  created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX api_keys_user_idx ON api_keys(user_id);

CREATE TABLE plans (
  id            serial PRIMARY KEY,
  slug          text NOT NULL UNIQUE,
  name          text NOT NULL,
  price_rials   bigint NOT NULL DEFAULT 0,
  features      jsonb NOT NULL                  -- max_records, max_rules_per_set, ..., feature booleans, disabled_rule_types
);

CREATE TABLE domains (
  id                    serial PRIMARY KEY,
  name                  text NOT NULL UNIQUE,   -- punycode, lower case, no trailing dot
  owner_id              integer NOT NULL REFERENCES users(id),
  dns_mode              text NOT NULL DEFAULT 'managed',
  state                 text NOT NULL,
  verification_state    text,                   -- external: awaiting | failed | verified
  ns_set_index          integer,                -- accepted nameserver set the delegation matched
  cache_l2_ttl_days     integer NOT NULL DEFAULT 3,
  cache_cap_mb          integer NOT NULL DEFAULT 100,
  origin_protocol       text NOT NULL DEFAULT 'auto',
  developer_mode_until  timestamptz,
  verification          jsonb,                  -- { name, type, value, expires_at }
  ssl_delegation        jsonb,                  -- { name, type, target, canary }
  settings              jsonb NOT NULL DEFAULT '{}'::jsonb,
  zone_serial           integer NOT NULL DEFAULT 1,
  created_at            timestamptz NOT NULL DEFAULT now(),
  updated_at            timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX domains_owner_idx ON domains(owner_id);

CREATE TABLE domain_members (
  domain_id     integer NOT NULL REFERENCES domains(id) ON DELETE CASCADE,
  user_id       integer NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  role          text NOT NULL,                  -- admin | editor | viewer (the owner is domains.owner_id)
  created_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (domain_id, user_id)
);
CREATE INDEX domain_members_user_idx ON domain_members(user_id);

CREATE TABLE subscriptions (
  id            serial PRIMARY KEY,
  domain_id     integer NOT NULL REFERENCES domains(id) ON DELETE CASCADE,
  user_id       integer NOT NULL REFERENCES users(id),
  plan_id       integer NOT NULL REFERENCES plans(id),
  status        text NOT NULL DEFAULT 'active',
  is_trial      boolean NOT NULL DEFAULT false,
  auto_renew    boolean NOT NULL DEFAULT false,
  overrides     jsonb NOT NULL DEFAULT '{}'::jsonb,  -- plan field -> override value (support-set)
  started_at    timestamptz NOT NULL DEFAULT now(),
  expires_at    timestamptz,
  created_at    timestamptz NOT NULL DEFAULT now(),
  updated_at    timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX subscriptions_domain_active_idx ON subscriptions(domain_id) WHERE status IN ('active', 'grace');

CREATE TABLE dns_records (
  id                serial PRIMARY KEY,
  domain_id         integer NOT NULL REFERENCES domains(id) ON DELETE CASCADE,
  name              text NOT NULL,              -- relative, lower case, '@' for the apex
  type              text NOT NULL,
  destination       text NOT NULL,
  mx_priority       integer,
  ttl               integer NOT NULL DEFAULT 120,
  proxied           boolean NOT NULL DEFAULT false,
  captcha           boolean NOT NULL DEFAULT false,
  scheme            text NOT NULL DEFAULT 'Auto',
  port              integer NOT NULL DEFAULT 443,
  host_header       text,
  host_header_mode  text NOT NULL DEFAULT 'own',
  monitor           boolean NOT NULL DEFAULT false,
  timeout           integer NOT NULL DEFAULT 60,
  comment           text,
  created_at        timestamptz NOT NULL DEFAULT now(),
  updated_at        timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX dns_records_domain_name_idx ON dns_records(domain_id, name);

-- Append-only, versioned: one entry per change of what nodes serve, written in the change's transaction.
CREATE TABLE config_log (
  version       bigserial PRIMARY KEY,
  domain_id     integer NOT NULL,               -- no FK: entries outlive a deleted domain (tombstones)
  domain_name   text NOT NULL,
  deleted       boolean NOT NULL DEFAULT false,
  payload       bytea NOT NULL,                 -- protobuf DomainSnapshot (empty when deleted); the hub wraps it in a ConfigEntry with version
  created_at    timestamptz NOT NULL DEFAULT now()
);
