// The worker's configuration: read once from the environment at boot, validated, frozen.
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { EnvReader, type EnvSource } from '@platform/shared';
import { readAllowedNetworks, type IpRange } from '@platform/shared/address-policy';
import { DOMAIN_LIFECYCLE } from './task-queues.js';
import { WEBHOOK_RETRY_DELAYS_MS } from './uptime/retry-schedule.js';

export interface Resolver {
  host: string;
  port: number;
}

export interface WorkflowsConfig {
  temporalAddress: string;
  temporalNamespace: string;
  /** TEMPORAL_TASK_QUEUE: must match the control plane's (npm start derives one per DATA_DIR). */
  taskQueue: string;
  /** Public resolvers asked for delegation, verification records and zone scans ("internet" in tests). */
  dnsResolvers: Resolver[];
  /** Milliseconds one DNS query may take before the resolver counts as unanswered. */
  dnsTimeoutMs: number;
  /** Our own DNS nodes: an ACME challenge goes to the CA once all of them serve its TXT (ACME_DNS_NODES). */
  acmeDnsNodes: Resolver[];
  /** Our edge nodes' HTTP addresses: an http-01 challenge goes to the CA once all of them answer it (ACME_EDGE_NODES). */
  acmeEdgeNodes: Resolver[];
  /** Base URL of the control plane whose /internal API the activities call. */
  controlPlaneUrl: string;
  /** The node token that authenticates the worker to /internal (NODE_TOKEN or DATA_DIR/node-token). */
  nodeToken: string;
  dataDir: string;
  logLevel: string;
  /** /healthz, /readyz and /metrics on metricsHost; 0: off. */
  metricsHost: string;
  metricsPort: number;
  /** ALLOWED_PRIVATE_NETWORKS: private ranges uptime webhooks may reach (the edge's origin allowlist). */
  allowedPrivateNetworks: IpRange[];
  /** SCAN_AXFR_PORT: the port an import scan asks the domain's nameservers for a zone transfer on (53; tests move it). */
  scanAxfrPort: number;
  /** UPTIME_WEBHOOK_RETRY_DELAYS_MS: the waits before a webhook's two retries (the spec's 5 s and 30 s; tests shorten them). */
  webhookRetryDelaysMs: readonly number[];
}

export function parseResolvers(list: string[], problems: string[], key = 'DNS_RESOLVERS'): Resolver[] {
  const out: Resolver[] = [];
  for (const item of list) {
    const m = /^\[?([^\]]+?)\]?(?::(\d+))?$/.exec(item);
    const port = m?.[2] === undefined ? 53 : Number(m[2]);
    if (!m || !Number.isInteger(port) || port < 1 || port > 65535) {
      problems.push(`${key}: "${item}" is not host:port`);
      continue;
    }
    out.push({ host: m[1], port });
  }
  return out;
}

/** Two whole milliseconds, each 100 to 3,600,000 (an hour); the spec's 5,000 and 30,000 when unset. */
function webhookRetryDelays(r: EnvReader): readonly number[] {
  const key = 'UPTIME_WEBHOOK_RETRY_DELAYS_MS';
  const list = r.list(key, WEBHOOK_RETRY_DELAYS_MS.map(String));
  const delays = list.map(Number);
  if (
    delays.length !== WEBHOOK_RETRY_DELAYS_MS.length ||
    delays.some((d) => !Number.isInteger(d) || d < 100 || d > 3_600_000)
  ) {
    r.problems.push(`${key} must be two whole milliseconds from 100 to 3600000, got "${list.join(',')}"`);
    return WEBHOOK_RETRY_DELAYS_MS;
  }
  return delays;
}

export function loadConfig(env: EnvSource = process.env): Readonly<WorkflowsConfig> {
  const r = new EnvReader(env);
  const dataDir = resolve(r.string('DATA_DIR', './data'));
  const dnsResolvers = parseResolvers(r.list('DNS_RESOLVERS', ['1.1.1.1:53', '8.8.8.8:53']), r.problems);
  let nodeToken = r.optional('NODE_TOKEN');
  if (!nodeToken) {
    const file = join(dataDir, 'node-token');
    if (existsSync(file)) nodeToken = readFileSync(file, 'utf8').trim();
    else r.problems.push(`NODE_TOKEN is unset and ${file} does not exist (start the control plane first)`);
  }
  return r.done<WorkflowsConfig>({
    temporalAddress: r.string('TEMPORAL_ADDRESS', '127.0.0.1:7233'),
    temporalNamespace: r.string('TEMPORAL_NAMESPACE', 'default'),
    taskQueue: r.string('TEMPORAL_TASK_QUEUE', DOMAIN_LIFECYCLE),
    dnsResolvers,
    dnsTimeoutMs: r.int('DNS_TIMEOUT_MS', 3000, 100, 60_000),
    acmeDnsNodes: parseResolvers(r.list('ACME_DNS_NODES', ['127.0.0.1:5353']), r.problems, 'ACME_DNS_NODES'),
    acmeEdgeNodes: parseResolvers(
      r.list('ACME_EDGE_NODES', [`127.0.0.1:${env.EDGE_HTTP_PORT || 8081}`]),
      r.problems,
      'ACME_EDGE_NODES',
    ),
    controlPlaneUrl: r.string('CONTROL_PLANE_URL', 'http://127.0.0.1:8080').replace(/\/$/, ''),
    nodeToken: nodeToken ?? '',
    dataDir,
    logLevel: r.string('LOG_LEVEL', env.NODE_ENV === 'test' ? 'warn' : 'info'),
    metricsHost: r.string('WORKER_METRICS_HOST', '127.0.0.1'),
    metricsPort: r.int('WORKER_METRICS_PORT', 0, 0, 65535),
    allowedPrivateNetworks: readAllowedNetworks(r),
    scanAxfrPort: r.int('SCAN_AXFR_PORT', 53, 1, 65535),
    webhookRetryDelaysMs: webhookRetryDelays(r),
  });
}
