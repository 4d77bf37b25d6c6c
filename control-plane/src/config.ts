// The control plane's configuration: read once from the environment at boot, validated, frozen.
import { isIP } from 'node:net';
import { resolve } from 'node:path';
import { EnvReader, type EnvSource } from '@platform/shared';
import { readAllowedNetworks, type IpRange } from '@platform/shared/address-policy';
import { loadTemporalConfig, type TemporalConfig } from './plugins/temporal-config.js';
import { loadAcmeConfig, type AcmeConfig } from './internal/acme-config.js';
import { loadAnalyticsConfig, type AnalyticsConfig } from './areas/analytics/config.js';
import { loadBillingConfig, type BillingConfig } from './areas/billing/config.js';
import { loadSsoConfig, type SsoConfig } from './areas/sso/config.js';
import { loadEmailConfig, type EmailConfig } from './areas/email/config.js';

export interface ControlPlaneConfig {
  /** Directory for PGlite data, the node token and other local state. */
  dataDir: string;
  /** postgres://… of a Postgres server; unset: PGlite inside dataDir. */
  databaseUrl?: string;
  apiHost: string;
  /** 0 picks a free port (tests). */
  apiPort: number;
  /** The server URL the OpenAPI document lists. */
  publicBaseUrl: string;
  /** Requests per minute per API key. */
  rateLimitPerMinute: number;
  /** Requests per minute per client address without a valid credential (public routes, refused keys). */
  anonymousRateLimitPerMinute: number;
  /** Requests per minute per account of the web panel's browser sessions (never a key's budget). */
  panelRateLimitPerMinute: number;
  /** Addresses or CIDRs of reverse proxies whose X-Forwarded-For names the client; empty: the TCP peer is the client. */
  trustProxy: string[];
  /** ALLOWED_PRIVATE_NETWORKS: internal ranges origins may be in anyway (empty: none). */
  allowedPrivateNetworks: IpRange[];
  /** Largest accepted request body in bytes (413 above). */
  bodyLimitBytes: number;
  /** Largest zone file body of the import routes (a zone of a plan allowing up to a million records). */
  importBodyLimitBytes: number;
  /** Accepted nameserver sets; the first one is recommended. */
  nsSets: string[][];
  /** EDGE_IPV4 / EDGE_IPV6: the edge's proxy addresses (what proxied records answer; GET /account/edge-ips). */
  edgeIpv4: string[];
  edgeIpv6: string[];
  /** Zone under which the ssl_delegation CNAME targets of external domains live. */
  acmeDelegationZone: string;
  /** Days a new verification TXT token stays valid. */
  verificationTokenDays: number;
  logLevel: string;
  /** Temporal and the domain-lifecycle workflows (TEMPORAL_ADDRESS, …; see workflows/README.md). */
  temporal: TemporalConfig;
  /** ACME issuance (ACME_DIRECTORY_URL, …; see internal/acme-config.ts). */
  acme: AcmeConfig;
  /** The analytics store and POST /analytics/query (ANALYTICS_*; see areas/analytics/config.ts). */
  analytics: AnalyticsConfig;
  /** Billing: VAT, grace, trial, billing day (BILLING_*; see areas/billing/config.ts). */
  billing: BillingConfig;
  /** SSO: token lifetimes, signing-key checks (SSO_*; see areas/sso/config.ts). */
  sso: SsoConfig;
  email: EmailConfig;
  /** Sync hub address (nodes connect to ws://syncHost:syncPort/sync); port 0 picks a free port. */
  syncHost: string;
  syncPort: number;
  /** Safety-net poll of the config log by the sync hub (ms); writes nudge it at once. */
  syncPollMs: number;
  /** NODE_TOKEN; undefined: read or generate DATA_DIR/node-token (ensureNodeToken from @platform/shared). */
  nodeToken: string | undefined;
  /** CERTIFICATE_KEY: seals certificate private keys at rest; undefined: read or generate DATA_DIR/certificate-key. */
  certificateKey: string | undefined;
  /** Largest compiled config of one domain (records and rules as nodes receive them), checked at write time. */
  domainConfigMaxBytes: number;
  /** How long the config log keeps a deleted domain's tombstone; nodes offline longer rebuild their store. */
  syncTombstoneRetentionMs: number;
  /** A domain's deltas are squashed into one snapshot (in the hub and the stored log) after this many. */
  syncCompactAfterDeltas: number;
  /**
   * ATTACK_MINUTE_MS: the length of the attack detector's "minute" (areas/security/detector.ts). 60,000 in production;
   * tests shorten it to see minutes close in seconds.
   */
  attackMinuteMs: number;
  /**
   * UPTIME_EVALUATE_EVERY_MS: how often at most the uptime detector judges one domain (areas/uptime/detector.ts).
   * 5,000 in production; tests shorten it so they wait for the judgement, not the clock.
   */
  uptimeEvaluateEveryMs: number;
}

export const DEFAULT_NS_SETS = 'ns1.platform.test,ns2.platform.test;ns3.platform.test,ns4.platform.test';

export function parseNsSets(raw: string): string[][] {
  return raw
    .split(';')
    .map((set) =>
      set
        .split(',')
        .map((ns) => ns.trim().toLowerCase().replace(/\.$/, ''))
        .filter(Boolean),
    )
    .filter((set) => set.length > 0);
}

/** Names proxy-addr (Fastify's trustProxy) expands to their address ranges. */
const PROXY_RANGE_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal']);

/** TRUST_PROXY: comma-separated addresses, CIDRs (`10.0.0.0/8`, `::1`) or range names (`loopback`). */
function parseTrustProxy(r: EnvReader): string[] {
  const entries = r
    .string('TRUST_PROXY', '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const e of entries) {
    if (PROXY_RANGE_NAMES.has(e)) continue;
    const [addr, prefix, ...rest] = e.split('/');
    const family = isIP(addr!);
    const bits = family === 4 ? 32 : 128;
    if (!family || rest.length > 0 || (prefix !== undefined && !(/^\d+$/.test(prefix) && Number(prefix) <= bits)))
      r.problems.push(
        `TRUST_PROXY entries must be IP addresses, CIDRs, loopback, linklocal or uniquelocal, got "${e}"`,
      );
  }
  return entries;
}

export function loadConfig(env: EnvSource = process.env): Readonly<ControlPlaneConfig> {
  const r = new EnvReader(env);
  const nsSets = parseNsSets(r.string('NS_SETS', DEFAULT_NS_SETS));
  if (nsSets.length === 0) r.problems.push('NS_SETS must hold at least one nameserver set');
  const apiHost = r.string('API_HOST', '127.0.0.1');
  const apiPort = r.int('API_PORT', 8080, 0, 65535);
  const rateLimitPerMinute = r.int('RATE_LIMIT_PER_MINUTE', 300, 1);
  return r.done<ControlPlaneConfig>({
    dataDir: resolve(r.string('DATA_DIR', './data')),
    databaseUrl: r.optional('DATABASE_URL'),
    apiHost,
    apiPort,
    publicBaseUrl: r.string('PUBLIC_BASE_URL', `http://${apiHost}:${apiPort}`).replace(/\/$/, ''),
    rateLimitPerMinute,
    anonymousRateLimitPerMinute: r.int('RATE_LIMIT_ANONYMOUS_PER_MINUTE', rateLimitPerMinute, 1),
    panelRateLimitPerMinute: r.int('PANEL_RATE_LIMIT_PER_MINUTE', 600, 1),
    trustProxy: parseTrustProxy(r),
    allowedPrivateNetworks: readAllowedNetworks(r),
    bodyLimitBytes: r.int('API_BODY_LIMIT_BYTES', 10 * 1024 * 1024, 1024),
    importBodyLimitBytes: r.int('API_IMPORT_BODY_LIMIT_BYTES', 64 * 1024 * 1024, 1024),
    nsSets,
    // The same names and defaults as the DNS nodes' (dns-server/src/config.ts).
    edgeIpv4: r.ipList('EDGE_IPV4', 4, ['127.0.0.1']),
    edgeIpv6: r.ipList('EDGE_IPV6', 6, ['::1']),
    acmeDelegationZone: r.string('ACME_DELEGATION_ZONE', 'acme.platform.test').toLowerCase().replace(/\.$/, ''),
    // VERIFICATION_TOKEN_SECONDS (tests, short expiries) overrides the days.
    verificationTokenDays: r.optional('VERIFICATION_TOKEN_SECONDS')
      ? r.int('VERIFICATION_TOKEN_SECONDS', 0, 1) / 86400
      : r.int('VERIFICATION_TOKEN_DAYS', 7, 1, 365),
    logLevel: r.string('LOG_LEVEL', env.NODE_ENV === 'test' ? 'warn' : 'info'),
    syncHost: r.string('SYNC_HOST', '127.0.0.1'),
    syncPort: r.int('SYNC_PORT', 8090, 0, 65535),
    syncPollMs: r.int('SYNC_POLL_MS', 1000, 10, 3_600_000),
    nodeToken: r.optional('NODE_TOKEN'),
    certificateKey: r.optional('CERTIFICATE_KEY'),
    // At most half the sync frame limit (MAX_SYNC_FRAME_BYTES, 256 MiB): rule bodies are counted as their JSON text.
    // 16 MiB allows about 200,000 records; a 1,000,000-record zone needs about 80 MB (an operator's choice).
    domainConfigMaxBytes: r.int('DOMAIN_CONFIG_MAX_BYTES', 16 * 1024 * 1024, 1024, 128 * 1024 * 1024),
    syncTombstoneRetentionMs: r.int('SYNC_TOMBSTONE_RETENTION_HOURS', 168, 1, 24 * 365) * 3_600_000,
    syncCompactAfterDeltas: r.int('SYNC_COMPACT_AFTER_DELTAS', 64, 1, 100_000),
    attackMinuteMs: r.int('ATTACK_MINUTE_MS', 60_000, 1000, 60_000),
    uptimeEvaluateEveryMs: r.int('UPTIME_EVALUATE_EVERY_MS', 5_000, 100, 3_600_000),
    temporal: loadTemporalConfig(r, env),
    acme: loadAcmeConfig(r),
    analytics: loadAnalyticsConfig(r),
    billing: loadBillingConfig(r),
    sso: loadSsoConfig(r),
    email: loadEmailConfig(r),
  });
}
