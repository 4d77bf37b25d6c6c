// The edge node's configuration, read once from the environment and frozen (README "Configuration").
import { resolve } from 'node:path';
import { isIP } from 'node:net';
import { EnvReader, type EnvSource } from '@platform/shared';
import { readAllowedNetworks, type IpRange } from '@platform/shared/address-policy';
import { CLOCK_TOLERANCE_S } from './rules/sso.js';

export interface EdgeConfig {
  host: string;
  httpPort: number;
  /** 0 picks a free port; -1 disables HTTPS. */
  httpsPort: number;
  dataDir: string;
  /** Hub address; undefined when SYNC_URL=off (serve what the store holds). */
  syncUrl: string | undefined;
  /** Undefined: read (or create) DATA_DIR/node-token. */
  nodeToken: string | undefined;
  workers: number;
  /** Control-plane base URL for request logs (and the SSO signing keys); undefined disables shipping. */
  controlPlaneUrl: string | undefined;
  /**
   * EDGE_SSO_URL: the control plane's address as browsers reach it (its PUBLIC_BASE_URL), where basic_auth rules with
   * an `sso` block send a browser to sign in; default CONTROL_PLANE_URL.
   */
  ssoUrl: string | undefined;
  /** EDGE_SSO_CLOCK_TOLERANCE_SECONDS: clock skew tolerated on an edge SSO token or session (15; tests shorten it). */
  ssoClockToleranceS: number;
  logFlushMs: number;
  /** ALLOWED_PRIVATE_NETWORKS: internal ranges origins may be in anyway (empty: none). */
  allowedPrivateNetworks: IpRange[];
  /** EDGE_IPV4 / EDGE_IPV6 when set: the edge's public addresses (what proxied records answer with), never an origin. */
  publicAddresses: string[];
  /**
   * Verify the certificates of `Https` origins (and origin_route / origin_pool `https`), like Cloudflare's
   * "Full (strict)"; `Auto` records never verify (they fall back to plain HTTP anyway): the per-record opt-out.
   */
  originTlsVerify: boolean;
  /** PEM file of extra certificate authorities trusted for origins (an operator's origin CA), besides the system's. */
  originCaFile: string | undefined;
  /** Most origin connection pools kept open; the least recently used is closed beyond it. */
  originPoolsMax: number;
  /**
   * EDGE_ORIGIN_CLIENT: `native` (the default: edge-node/native/origin-client/, C on the event loop, built by
   * `npm run setup`) or `js` (the TypeScript client, edge-node/src/proxy/origin-client/) for plain-HTTP origins.
   */
  originClient: 'native' | 'js';
  /**
   * EDGE_FRONT: `uws` (the default: uWebSockets.js serves HTTP and HTTPS) or `native` (plain HTTP through
   * edge-node/native/http-front, C accepting, parsing and relaying proxied answers, the phases in TypeScript; HTTPS
   * stays on uWS; uWS serves HTTP too when the module is not built or EDGE_HOST is not an IPv4 address).
   */
  front: 'uws' | 'native';
  /** Bytes the cache holds across all domains (each domain also has its cache_cap_mb). */
  cacheMaxBytes: number;
  /** Request-log records kept while the control plane is unreachable; the oldest are dropped beyond it. */
  logBufferMax: number;
  /** Largest response body kept in the cache. */
  cacheMaxObjectBytes: number;
  /** PEM files of the certificate served to clients whose SNI names no certificate; generated self-signed when unset. */
  defaultCertFile: string | undefined;
  defaultKeyFile: string | undefined;
  /** /healthz, /readyz and /metrics on EDGE_HOST; 0: off. */
  metricsPort: number;
  /**
   * EDGE_CHALLENGE_SECRET: key of challenge nonces and clearance cookies; nodes given the same one accept each
   * other's clearances. Unset: derived from the node token (one node's workers agree, another node asks again).
   */
  challengeSecret: string | undefined;
  /**
   * EDGE_CRAWLER_DNS: resolvers (host or host:port) asked to verify claimed search crawlers (bot_route); empty: the
   * system's. EDGE_CRAWLER_LOOKUPS_PER_S: verifications started per second per process at most.
   */
  crawlerDns: string[];
  crawlerLookupsPerSecond: number;
  /** EDGE_CACHE_REPORT_MS: how often the cache inventory is reported to the control plane when it changed. */
  cacheReportMs: number;
  /**
   * EDGE_CACHE_HOST / EDGE_CACHE_PORT: the cache listener, where the control plane fetches one cached object (node
   * token); port 0 picks a free one per process (each worker has its own cache), -1: off; with EDGE_WORKERS > 1 a
   * fixed port is the first of 2 × EDGE_WORKERS, each worker taking the first free one. EDGE_CACHE_URL: the address
   * reported to the control plane when it must reach the listener another way (default http://host:port).
   */
  cacheHost: string;
  cachePort: number;
  cacheUrl: string | undefined;
}

export function loadConfig(env: EnvSource = process.env): Readonly<EdgeConfig> {
  const r = new EnvReader(env);
  const sync = r.string('SYNC_URL', 'ws://127.0.0.1:8090');
  if (sync !== 'off' && !/^wss?:\/\//.test(sync))
    r.problems.push(`SYNC_URL must be a ws:// or wss:// address or "off", got "${sync}"`);
  const cp = r.string('CONTROL_PLANE_URL', 'http://127.0.0.1:8080');
  if (cp !== 'off' && !/^https?:\/\//.test(cp))
    r.problems.push(`CONTROL_PLANE_URL must be an http(s) address or "off", got "${cp}"`);
  const ssoUrl = r.optional('EDGE_SSO_URL');
  if (ssoUrl !== undefined && !/^https?:\/\/[^/?#]+\/?$/.test(ssoUrl))
    r.problems.push(`EDGE_SSO_URL must be an http(s) address without a path, got "${ssoUrl}"`);
  const cert = r.optional('EDGE_TLS_DEFAULT_CERT');
  const key = r.optional('EDGE_TLS_DEFAULT_KEY');
  if ((cert === undefined) !== (key === undefined))
    r.problems.push('EDGE_TLS_DEFAULT_CERT and EDGE_TLS_DEFAULT_KEY go together');
  const publicAddresses = [...r.list('EDGE_IPV4', []), ...r.list('EDGE_IPV6', [])];
  for (const a of publicAddresses)
    if (isIP(a) === 0) r.problems.push(`EDGE_IPV4/EDGE_IPV6 hold "${a}", not an IP address`);
  return r.done({
    host: r.string('EDGE_HOST', '127.0.0.1'),
    httpPort: r.int('EDGE_HTTP_PORT', 8081, 0, 65535),
    httpsPort: r.int('EDGE_HTTPS_PORT', 8443, -1, 65535),
    dataDir: resolve(r.string('DATA_DIR', './data')),
    syncUrl: sync === 'off' ? undefined : sync,
    nodeToken: r.optional('NODE_TOKEN'),
    workers: r.int('EDGE_WORKERS', 1, 1, 64),
    controlPlaneUrl: cp === 'off' ? undefined : cp.replace(/\/$/, ''),
    ssoUrl: ssoUrl?.replace(/\/$/, ''),
    ssoClockToleranceS: r.int('EDGE_SSO_CLOCK_TOLERANCE_SECONDS', CLOCK_TOLERANCE_S, 0, 300),
    logFlushMs: r.int('EDGE_LOG_FLUSH_MS', 2000, 50, 600000),
    allowedPrivateNetworks: readAllowedNetworks(r),
    publicAddresses,
    originTlsVerify: r.bool('EDGE_ORIGIN_TLS_VERIFY', true),
    originCaFile: r.optional('EDGE_ORIGIN_CA_FILE'),
    originPoolsMax: r.int('EDGE_ORIGIN_POOLS_MAX', 1024, 1, 1_000_000),
    originClient: originClient(r),
    front: frontOf(r),
    cacheMaxBytes: r.int('EDGE_CACHE_MAX_BYTES', 1024 * 1024 * 1024, 0, Number.MAX_SAFE_INTEGER),
    logBufferMax: r.int('EDGE_LOG_BUFFER_MAX', 100_000, 1, 10_000_000),
    cacheMaxObjectBytes: r.int('EDGE_CACHE_MAX_OBJECT_BYTES', 8 * 1024 * 1024, 0, 1024 * 1024 * 1024),
    defaultCertFile: cert,
    defaultKeyFile: key,
    metricsPort: r.int('EDGE_METRICS_PORT', 0, 0, 65535),
    challengeSecret: r.optional('EDGE_CHALLENGE_SECRET'),
    crawlerDns: r.list('EDGE_CRAWLER_DNS', []),
    crawlerLookupsPerSecond: r.int('EDGE_CRAWLER_LOOKUPS_PER_S', 10, 1, 10_000),
    cacheReportMs: r.int('EDGE_CACHE_REPORT_MS', 30_000, 50, 3_600_000),
    cacheHost: r.string('EDGE_CACHE_HOST', r.string('EDGE_HOST', '127.0.0.1')),
    cachePort: r.int('EDGE_CACHE_PORT', 0, -1, 65535),
    cacheUrl: r.optional('EDGE_CACHE_URL'),
  });
}

function frontOf(r: EnvReader): 'uws' | 'native' {
  const v = r.string('EDGE_FRONT', 'uws');
  if (v === 'uws' || v === 'native') return v;
  r.problems.push(`EDGE_FRONT must be "uws" or "native", got "${v}"`);
  return 'uws';
}

function originClient(r: EnvReader): 'native' | 'js' {
  const v = r.string('EDGE_ORIGIN_CLIENT', 'native');
  if (v === 'native' || v === 'js') return v;
  r.problems.push(`EDGE_ORIGIN_CLIENT must be "native" or "js", got "${v}"`);
  return 'js';
}
