-- Plan catalogue: a free plan and three paid tiers. features holds every plan field of the spec's Subscription section.
INSERT INTO plans (slug, name, price_rials, features) VALUES ('free', 'Free', 0, '{
  "max_records": 200, "max_traffic_gb": 100, "max_rules_per_set": 10, "max_gateway_requests_30d": 100000,
  "max_gateway_gb_30d": 1, "max_cache_cap_mb": 250, "max_cache_disk_gb": 1, "max_cache_ttl_days": 3,
  "max_email_rules": 5, "max_email_forwards_per_day": 100, "max_email_sends_per_day": 0, "max_custom_rules": 0,
  "disabled_rule_types": ["waf", "bot_route", "fingerprint", "origin_pool", "optimize"],
  "gateways_enabled": false, "logs_enabled": false, "monitoring_enabled": true, "rules_enabled": true,
  "cache_purge_enabled": true, "custom_ssl_enabled": false, "ws_enabled": true, "host_header_edit_enabled": false,
  "uptime_sms_enabled": false, "dedicated_support_enabled": false, "shield_enabled": false, "bot_cache_enabled": false,
  "under_attack_allowed": true, "email_routing_enabled": true, "email_sending_enabled": false,
  "analytics_enabled": true, "waf_enabled": false
}'::jsonb) ON CONFLICT (slug) DO NOTHING;
INSERT INTO plans (slug, name, price_rials, features) VALUES ('pro', 'Pro', 2500000, '{
  "max_records": 1000, "max_traffic_gb": 1000, "max_rules_per_set": 50, "max_gateway_requests_30d": 1000000,
  "max_gateway_gb_30d": 10, "max_cache_cap_mb": 1000, "max_cache_disk_gb": 10, "max_cache_ttl_days": 7,
  "max_email_rules": 50, "max_email_forwards_per_day": 1000, "max_email_sends_per_day": 100, "max_custom_rules": 10,
  "disabled_rule_types": ["fingerprint"],
  "gateways_enabled": true, "logs_enabled": true, "monitoring_enabled": true, "rules_enabled": true,
  "cache_purge_enabled": true, "custom_ssl_enabled": false, "ws_enabled": true, "host_header_edit_enabled": true,
  "uptime_sms_enabled": false, "dedicated_support_enabled": false, "shield_enabled": false, "bot_cache_enabled": true,
  "under_attack_allowed": true, "email_routing_enabled": true, "email_sending_enabled": true,
  "analytics_enabled": true, "waf_enabled": true
}'::jsonb) ON CONFLICT (slug) DO NOTHING;
INSERT INTO plans (slug, name, price_rials, features) VALUES ('business', 'Business', 12000000, '{
  "max_records": 5000, "max_traffic_gb": 10000, "max_rules_per_set": 200, "max_gateway_requests_30d": 10000000,
  "max_gateway_gb_30d": 100, "max_cache_cap_mb": 5000, "max_cache_disk_gb": 100, "max_cache_ttl_days": 30,
  "max_email_rules": 200, "max_email_forwards_per_day": 10000, "max_email_sends_per_day": 1000, "max_custom_rules": 50,
  "disabled_rule_types": [],
  "gateways_enabled": true, "logs_enabled": true, "monitoring_enabled": true, "rules_enabled": true,
  "cache_purge_enabled": true, "custom_ssl_enabled": true, "ws_enabled": true, "host_header_edit_enabled": true,
  "uptime_sms_enabled": true, "dedicated_support_enabled": false, "shield_enabled": true, "bot_cache_enabled": true,
  "under_attack_allowed": true, "email_routing_enabled": true, "email_sending_enabled": true,
  "analytics_enabled": true, "waf_enabled": true
}'::jsonb) ON CONFLICT (slug) DO NOTHING;
INSERT INTO plans (slug, name, price_rials, features) VALUES ('enterprise', 'Enterprise', 60000000, '{
  "max_records": 100000, "max_traffic_gb": 100000, "max_rules_per_set": 1000, "max_gateway_requests_30d": 100000000,
  "max_gateway_gb_30d": 1000, "max_cache_cap_mb": 10000, "max_cache_disk_gb": 1000, "max_cache_ttl_days": 365,
  "max_email_rules": 1000, "max_email_forwards_per_day": 100000, "max_email_sends_per_day": 10000, "max_custom_rules": 200,
  "disabled_rule_types": [],
  "gateways_enabled": true, "logs_enabled": true, "monitoring_enabled": true, "rules_enabled": true,
  "cache_purge_enabled": true, "custom_ssl_enabled": true, "ws_enabled": true, "host_header_edit_enabled": true,
  "uptime_sms_enabled": true, "dedicated_support_enabled": true, "shield_enabled": true, "bot_cache_enabled": true,
  "under_attack_allowed": true, "email_routing_enabled": true, "email_sending_enabled": true,
  "analytics_enabled": true, "waf_enabled": true
}'::jsonb) ON CONFLICT (slug) DO NOTHING;
