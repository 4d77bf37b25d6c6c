// The dns-server's configuration, read once from the environment and frozen (README "Configuration").
import { resolve } from 'node:path';
import { EnvReader, type EnvSource } from '@platform/shared';
import { canonicaliseIpEntry } from '@platform/shared/match';
import type { RrlConfig } from './rrl.js';

export interface DnsServerConfig {
  host: string;
  port: number;
  edgeIpv4: string[];
  edgeIpv6: string[];
  dataDir: string;
  /** Hub address; undefined when SYNC_URL=off (serve what the store holds). */
  syncUrl: string | undefined;
  /** Undefined: read (or create) DATA_DIR/node-token. */
  nodeToken: string | undefined;
  workers: number;
  /** Time a TCP client has to send each whole query (bytes that complete no query do not extend it). */
  tcpIdleMs: number;
  /** Open TCP connections per process. */
  tcpMaxConnections: number;
  /** Open TCP connections per client (IPv4 address, IPv6 /64) per process. */
  tcpMaxPerClient: number;
  /** Response rate limiting over UDP (rrl.ts); rate 0 turns it off. */
  rrl: RrlConfig;
  /** 0 disables the counters endpoint. */
  metricsPort: number;
  /** UDP datagram I/O: `batch` (recvmmsg/sendmmsg, dns-server/native/batch-udp) or `dgram` (node:dgram). */
  udpIo: 'batch' | 'dgram';
}

export function loadConfig(env: EnvSource = process.env): Readonly<DnsServerConfig> {
  const r = new EnvReader(env);
  const edgeIpv4 = r.ipList('EDGE_IPV4', 4, ['127.0.0.1']);
  const edgeIpv6 = r.ipList('EDGE_IPV6', 6, ['::1']);
  const exempt: string[] = [];
  for (const entry of r.list('DNS_RRL_EXEMPT', [])) {
    const c = canonicaliseIpEntry(entry);
    if (typeof c === 'string') r.problems.push(`DNS_RRL_EXEMPT: ${c}`);
    else exempt.push(c.text);
  }
  const sync = r.string('SYNC_URL', 'ws://127.0.0.1:8090');
  if (sync !== 'off' && !/^wss?:\/\//.test(sync))
    r.problems.push(`SYNC_URL must be a ws:// or wss:// address or "off", got "${sync}"`);
  const udpIo = r.string('DNS_UDP_IO', 'batch');
  if (udpIo !== 'batch' && udpIo !== 'dgram') r.problems.push(`DNS_UDP_IO must be "batch" or "dgram", got "${udpIo}"`);
  return r.done({
    host: r.string('DNS_HOST', '127.0.0.1'),
    port: r.int('DNS_PORT', 5353, 0, 65535),
    edgeIpv4,
    edgeIpv6,
    dataDir: resolve(r.string('DATA_DIR', './data')),
    syncUrl: sync === 'off' ? undefined : sync,
    nodeToken: r.optional('NODE_TOKEN'),
    workers: r.int('DNS_WORKERS', 1, 1, 64),
    tcpIdleMs: r.int('DNS_TCP_IDLE_MS', 10000, 100, 600000),
    tcpMaxConnections: r.int('DNS_TCP_MAX_CONNECTIONS', 4096, 1, 1_000_000),
    tcpMaxPerClient: r.int('DNS_TCP_MAX_PER_CLIENT', 32, 1, 1_000_000),
    rrl: {
      rate: r.int('DNS_RRL_RATE', 200, 0, 1_000_000),
      slip: r.int('DNS_RRL_SLIP', 2, 0, 100),
      ipv4Prefix: r.int('DNS_RRL_IPV4_PREFIX', 24, 0, 32),
      ipv6Prefix: r.int('DNS_RRL_IPV6_PREFIX', 56, 0, 64),
      tableSize: r.int('DNS_RRL_TABLE_SIZE', 262144, 16, 1 << 26),
      exempt,
    },
    metricsPort: r.int('DNS_METRICS_PORT', 0, 0, 65535),
    udpIo: udpIo === 'dgram' ? 'dgram' : 'batch',
  });
}
