// Counters of the dns-server (the only per-query bookkeeping: no logs, no allocation).

export interface Counters {
  dns_queries_udp_total: number;
  dns_queries_tcp_total: number;
  dns_responses_noerror_total: number;
  dns_responses_nxdomain_total: number;
  dns_responses_refused_total: number;
  dns_responses_formerr_total: number;
  dns_responses_notimp_total: number;
  dns_responses_servfail_total: number;
  dns_responses_badvers_total: number;
  dns_responses_truncated_total: number;
  dns_packets_dropped_total: number;
  dns_handler_errors_total: number;
  /** UDP answers response rate limiting dropped. */
  dns_rrl_dropped_total: number;
  /** UDP answers response rate limiting sent truncated instead (TC=1, slip). */
  dns_rrl_slipped_total: number;
  /** TCP connections closed at once: over DNS_TCP_MAX_PER_CLIENT, or over DNS_TCP_MAX_CONNECTIONS. */
  dns_tcp_refused_total: number;
  /** TCP connections closed because a query took longer than DNS_TCP_IDLE_MS to arrive. */
  dns_tcp_timeouts_total: number;
  dns_tcp_connections_total: number;
  dns_zone_compiles_total: number;
  /** Changes applied by recompiling only the names they touched (the rest: dns_zone_compiles_total). */
  dns_zone_patches_total: number;
  dns_zone_compile_failures_total: number;
}

export function createCounters(): Counters {
  return {
    dns_queries_udp_total: 0,
    dns_queries_tcp_total: 0,
    dns_responses_noerror_total: 0,
    dns_responses_nxdomain_total: 0,
    dns_responses_refused_total: 0,
    dns_responses_formerr_total: 0,
    dns_responses_notimp_total: 0,
    dns_responses_servfail_total: 0,
    dns_responses_badvers_total: 0,
    dns_responses_truncated_total: 0,
    dns_packets_dropped_total: 0,
    dns_handler_errors_total: 0,
    dns_rrl_dropped_total: 0,
    dns_rrl_slipped_total: 0,
    dns_tcp_refused_total: 0,
    dns_tcp_timeouts_total: 0,
    dns_tcp_connections_total: 0,
    dns_zone_compiles_total: 0,
    dns_zone_patches_total: 0,
    dns_zone_compile_failures_total: 0,
  };
}
