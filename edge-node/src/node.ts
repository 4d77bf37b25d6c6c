// One serving edge process: the node store read into a compiled domain table, the uWS servers, health checks, logs.
import { join } from 'node:path';
import { componentLogger } from '@platform/shared';
import { openNodeStore, wholeDomain, type DomainChange, type NodeStore } from '@platform/shared/node-store';
import type { EdgeConfig } from './config.js';
import type { RequestContext } from './context.js';
import { EdgeCache } from './cache/store.js';
import { RequestLogBuffer } from './log/buffer.js';
import { runHealthChecks } from './rules/origin-pool.js';
import { UpstreamPools } from './proxy/upstream.js';
import { startEdgeServer, type EdgeServer } from './server.js';
import { DomainSet } from './store/domain-set.js';
import { DomainTable } from './store/snapshot.js';
import { defaultCertificate } from './tls/default-cert.js';

export const log = componentLogger('edge-node');

export function nodeStorePath(config: EdgeConfig): string {
  return join(config.dataDir, 'edge-node');
}

export interface EdgeNode {
  store: NodeStore;
  table: DomainTable;
  cache: EdgeCache;
  server: EdgeServer;
  logs: RequestLogBuffer;
  /** Brings one domain up to date with the store after the store applied an entry for it. */
  refresh(change: DomainChange): void;
  close(): Promise<void>;
}

/** Opens the store and compiles every domain it holds, then listens: what LMDB holds is served before the hub answers. */
export async function startEdgeNode(
  config: EdgeConfig,
  store = openNodeStore(nodeStorePath(config)),
): Promise<EdgeNode> {
  const table = new DomainTable();
  const cache = new EdgeCache();
  const pools = new UpstreamPools({ tlsVerify: config.originTlsVerify });
  // Without a control plane to ship to, keep only a small window (tests read it; nothing grows under load).
  const logs = new RequestLogBuffer(config.controlPlaneUrl ? 100_000 : 10_000);
  const state = {
    table,
    pools,
    cache,
    cacheMaxObjectBytes: config.cacheMaxObjectBytes,
    log: (ctx: RequestContext) => logs.add(ctx),
  };
  const tlsDir = join(config.dataDir, 'edge-node-tls');
  const defaultCert =
    config.httpsPort >= 0
      ? defaultCertificate(tlsDir, { certFile: config.defaultCertFile, keyFile: config.defaultKeyFile })
      : undefined;
  if (config.httpsPort >= 0 && !defaultCert)
    log.error('no default certificate (openssl missing and EDGE_TLS_DEFAULT_CERT unset): HTTPS is off');
  const server = await startEdgeServer(state, {
    host: config.host,
    httpPort: config.httpPort,
    httpsPort: config.httpsPort,
    tlsDir,
    defaultCert,
  });

  const domains = new DomainSet(table, store);
  const refresh = (change: DomainChange) => {
    const { domain } = change;
    const compiled = domains.refresh(change);
    if (!compiled) cache.drop(domain);
    else {
      const st = compiled.snapshot.settings;
      if (st.cachePurges && st.cachePurges.length > 0)
        cache.applyPurges(domain, Number(st.cachePurgeGeneration ?? 0), st.cachePurges);
    }
    server.setCertificates(domain, compiled?.snapshot.certificates ?? []);
  };
  for (const d of store.domains()) refresh(wholeDomain(d));

  const health = setInterval(() => {
    for (const d of table.all()) if (d.poolActions.length > 0) runHealthChecks(d.poolActions, () => d.name);
  }, 1000);
  health.unref();

  return {
    store,
    table,
    cache,
    server,
    logs,
    refresh,
    async close() {
      clearInterval(health);
      server.close();
      await pools.close();
      await store.close();
    },
  };
}
