// The DNS node's operations endpoint (DNS_METRICS_PORT): /healthz, /readyz (config sync) and /metrics in Prometheus
// text, read from the plain counters the hot path increments (counters.ts).
import type { NodeStore, NodeSync } from '@platform/shared/node-store';
import { counterFrom, createRegistry, startNodeOps, type OpsServer } from '@platform/shared/ops';
import type { Counters } from './counters.js';

/** dns_responses_<rcode>_total fields, exposed as dns_responses_total{rcode="<RCODE>"} (CoreDNS's shape). */
const RCODE_FIELDS = ['noerror', 'nxdomain', 'refused', 'formerr', 'notimp', 'servfail', 'badvers'] as const;
/** Counters exposed under their own name (everything but the per-rcode and per-protocol ones). */
const PLAIN: Record<string, string> = {
  dns_responses_truncated_total: 'Answers sent truncated (TC set): the client retries over TCP',
  dns_packets_dropped_total: 'Packets dropped without an answer (not a query, or too short to answer)',
  dns_handler_errors_total: 'Queries whose handling threw (answered SERVFAIL)',
  dns_tcp_connections_total: 'TCP connections accepted',
  dns_tcp_refused_total: 'TCP connections closed at once (over the per-client or per-process limit)',
  dns_tcp_timeouts_total: 'TCP connections closed because a whole query did not arrive within DNS_TCP_IDLE_MS',
  dns_rrl_dropped_total: 'UDP answers dropped by response rate limiting',
  dns_rrl_slipped_total: 'UDP answers sent truncated (TC=1) by response rate limiting instead of dropped (slip)',
  dns_zone_compiles_total: 'Zones compiled whole (load, snapshot)',
  dns_zone_patches_total: 'Changes applied by recompiling only the names they touched',
  dns_zone_compile_failures_total: 'Zone changes that failed to compile (the previous zone kept serving)',
};

export interface DnsOpsOptions {
  host: string;
  port: number;
  /** The counters of this process, or the sum over the workers in cluster mode. */
  counters: () => Counters;
  store: NodeStore;
  sync: NodeSync | undefined;
}

export function startDnsOps(o: DnsOpsOptions): Promise<OpsServer> {
  const registry = createRegistry();
  counterFrom(
    registry,
    'dns_queries_total',
    'Queries received, per transport',
    () => {
      const c = o.counters();
      return [
        [{ proto: 'udp' }, c.dns_queries_udp_total],
        [{ proto: 'tcp' }, c.dns_queries_tcp_total],
      ];
    },
    ['proto'],
  );
  counterFrom(
    registry,
    'dns_responses_total',
    'Answers sent, per response code',
    () => {
      const c = o.counters();
      return RCODE_FIELDS.map((f) => [{ rcode: f.toUpperCase() }, c[`dns_responses_${f}_total`]] as const);
    },
    ['rcode'],
  );
  for (const [name, help] of Object.entries(PLAIN))
    counterFrom(registry, name, help, () => o.counters()[name as keyof Counters]);
  return startNodeOps({ host: o.host, port: o.port, registry, prefix: 'dns', store: o.store, sync: o.sync });
}

/** Sums the counters of several workers. */
export function sumCounters(parts: Iterable<Counters>, into: Counters): Counters {
  for (const k of Object.keys(into) as (keyof Counters)[]) into[k] = 0;
  for (const p of parts) for (const k of Object.keys(into) as (keyof Counters)[]) into[k] += p[k] ?? 0;
  return into;
}
