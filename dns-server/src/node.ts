// One serving process: the zone table compiled from the node store, the UDP/TCP listeners, and the counters.
import { join } from 'node:path';
import { openNodeStore, type NodeStore } from '@platform/shared/node-store';
import { componentLogger } from '@platform/shared';
import { ensureNodeToken } from '@platform/shared/node-token';
import type { DnsServerConfig } from './config.js';
import { createCounters, type Counters } from './counters.js';
import { startDnsServer, type DnsServer } from './server.js';
import { ZoneTable } from './zone/table.js';
import { ZoneSet, type ZoneChange } from './zone/zone-set.js';
import { Notifier } from './xfr/notify.js';

export const log = componentLogger('dns-server');
export const zoneLog = componentLogger('dns-server.zone');

export interface ServingNode {
  store: NodeStore;
  table: ZoneTable;
  counters: Counters;
  server: DnsServer;
  /** Brings one domain's compiled zone up to date with the store after the store applied an entry for it (given
   *  the store's event in this process: a large one is compiled from its records in hand, not read back). */
  refresh(change: ZoneChange): void;
  close(): Promise<void>;
}

export function nodeStorePath(config: DnsServerConfig): string {
  return join(config.dataDir, 'dns-node');
}

/** Opens the store, compiles every zone it holds, then starts answering: the store is served before the hub answers. */
export async function startServingNode(
  config: DnsServerConfig,
  store = openNodeStore(nodeStorePath(config)),
): Promise<ServingNode> {
  const table = new ZoneTable();
  const counters = createCounters();
  const nodeToken = () => ensureNodeToken(config.dataDir, config.nodeToken);
  const notifier = new Notifier((secondary, reason) => zoneLog.warn({ secondary, reason }, 'NOTIFY not answered'));
  const zones = new ZoneSet(
    table,
    store,
    { edgeIpv4: config.edgeIpv4, edgeIpv6: config.edgeIpv6, nodeToken },
    counters,
    zoneLog,
    (zone) => notifier.notify(zone),
  );
  zones.loadAll();
  // Signed zones are signed again before their signatures run out (dnssec/signer.ts RESIGN_DAYS_LEFT).
  const resign = setInterval(() => zones.resignDue(), 3600_000);
  resign.unref();
  const server = await startDnsServer({
    host: config.host,
    port: config.port,
    tcpIdleMs: config.tcpIdleMs,
    tcpMaxConnections: config.tcpMaxConnections,
    tcpMaxPerClient: config.tcpMaxPerClient,
    rrl: config.rrl,
    udpIo: config.udpIo,
    table,
    counters,
  });
  return {
    store,
    table,
    counters,
    server,
    refresh(change) {
      zones.refresh(change);
    },
    async close() {
      clearInterval(resign);
      notifier.close();
      await server.close();
      await store.close();
    },
  };
}
