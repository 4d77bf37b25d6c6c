// MAIL_* environment → the mail node's config (README "Email routing" lists every key).
import { resolve } from 'node:path';
import { EnvReader, type EnvSource } from '@platform/shared';
import { readAllowedNetworks, type IpRange } from '@platform/shared/address-policy';

export interface MailNodeConfig {
  dataDir: string;
  host: string;
  /** SMTP listen port; 0 picks a free one (logged as `mail node listening`). */
  port: number;
  /** The control plane's API (internal routes, node token). */
  controlPlaneUrl: string;
  nodeToken: string | undefined;
  /** Largest message accepted (SIZE); a bigger one is refused with 552, never stored. */
  maxMessageBytes: number;
  /** SMTP connections open at once; more are refused with 421. */
  maxConnections: number;
  /** Seconds of silence before a connection is closed. */
  socketTimeoutMs: number;
  /** A recipient's route is remembered this long (0: asked each time). */
  lookupCacheMs: number;
  /** The name in the greeting and EHLO. */
  ehloName: string;
  tlsCertFile: string | undefined;
  tlsKeyFile: string | undefined;
  /** DNS servers for MX lookups and SPF/DKIM/DMARC (host[:port]); empty: the system's. */
  resolvers: string[];
  /** Port of destination MX hosts: 25 (tests point it at their sink). */
  deliveryPort: number;
  /** Seconds a delivery may take before it is a temporary failure. */
  deliveryTimeoutMs: number;
  /** SRS secret; unset: DATA_DIR/srs-key, generated on first start. */
  srsSecret: string | undefined;
  allowedPrivateNetworks: IpRange[];
  logLevel: string;
}

export function loadConfig(env: EnvSource = process.env): Readonly<MailNodeConfig> {
  const r = new EnvReader(env);
  const apiHost = r.string('API_HOST', '127.0.0.1');
  const apiPort = r.int('API_PORT', 8080, 0, 65535);
  const mxHosts = r.list('MAIL_MX_HOSTS', ['mx1.mail.platform.test']);
  return r.done<MailNodeConfig>({
    dataDir: resolve(r.string('DATA_DIR', './data')),
    host: r.string('MAIL_HOST', '127.0.0.1'),
    port: r.int('MAIL_PORT', 2525, 0, 65535),
    controlPlaneUrl: r.string('CONTROL_PLANE_URL', `http://${apiHost}:${apiPort}`).replace(/\/$/, ''),
    nodeToken: r.optional('NODE_TOKEN'),
    maxMessageBytes: r.int('MAIL_MAX_MESSAGE_BYTES', 25 * 1024 * 1024, 1024, 100 * 1024 * 1024),
    maxConnections: r.int('MAIL_MAX_CONNECTIONS', 500, 1, 100_000),
    socketTimeoutMs: r.int('MAIL_SOCKET_TIMEOUT_SECONDS', 60, 1, 3600) * 1000,
    lookupCacheMs: r.int('MAIL_LOOKUP_CACHE_MS', 2000, 0, 3_600_000),
    ehloName: r.string('MAIL_EHLO_NAME', mxHosts[0]!),
    tlsCertFile: r.optional('MAIL_TLS_CERT_FILE'),
    tlsKeyFile: r.optional('MAIL_TLS_KEY_FILE'),
    resolvers: r.list('MAIL_RESOLVERS', []),
    deliveryPort: r.int('MAIL_DELIVERY_PORT', 25, 1, 65535),
    deliveryTimeoutMs: r.int('MAIL_DELIVERY_TIMEOUT_SECONDS', 30, 1, 600) * 1000,
    srsSecret: r.optional('MAIL_SRS_SECRET'),
    allowedPrivateNetworks: readAllowedNetworks(r),
    logLevel: r.string('LOG_LEVEL', env.NODE_ENV === 'test' ? 'warn' : 'info'),
  });
}
