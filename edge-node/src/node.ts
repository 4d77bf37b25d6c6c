// One serving edge process: the node store read into a compiled domain table, the uWS servers, health checks, logs.
import { lookup } from 'node:dns';
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { join } from 'node:path';
import { Agent } from 'undici';
import { componentLogger } from '@platform/shared';
import { AddressPolicy } from '@platform/shared/address-policy';
import { openNodeStore, wholeDomain, type DomainChange, type NodeStore } from '@platform/shared/node-store';
import type { EdgeConfig } from './config.js';
import type { RequestContext } from './context.js';
import { EdgeCache } from './cache/store.js';
import { RequestLogBuffer } from './log/buffer.js';
import { RequestCounters } from './counters.js';
import { HEALTH_SWEEP_MS, runHealthChecks, sweepHealth } from './rules/origin-pool.js';
import { guardedConnector } from './proxy/guarded-connect.js';
import { UpstreamPools } from './proxy/upstream.js';
import { startEdgeServer, type EdgeServer } from './server.js';
import { DomainSet } from './store/domain-set.js';
import { DomainTable } from './store/snapshot.js';
import { defaultCertificate } from './tls/default-cert.js';
import { ensureNodeToken } from '@platform/shared/node-token';
import { configureChallengeSecret } from './rules/challenge.js';
import { configureSso } from './rules/sso.js';
import { configureCrawlerVerifier, VERIFIER_DEFAULTS } from './rules/bot.js';
import { UptimeProber } from './uptime/probes.js';

export const log = componentLogger('edge-node');

export function nodeStorePath(config: EdgeConfig): string {
  return join(config.dataDir, 'edge-node');
}

export interface EdgeNode {
  store: NodeStore;
  table: DomainTable;
  cache: EdgeCache;
  /** Connection pools to origins (bounded by EDGE_ORIGIN_POOLS_MAX). */
  pools: UpstreamPools;
  /** Which origin addresses may be connected to; the node's own listeners are added to it as they open. */
  policy: AddressPolicy;
  server: EdgeServer;
  logs: RequestLogBuffer;
  requests: RequestCounters;
  /** Uptime probes of thin watched scopes; undefined without a control plane to ship their outcomes to. */
  prober: UptimeProber | undefined;
  /** Brings one domain up to date with the store after the store applied an entry for it. */
  refresh(change: DomainChange): void;
  close(): Promise<void>;
}

/**
 * The host and port of a platform URL (hub, control plane) as an endpoint origins may not use. A name is resolved in
 * the background (`localhost` at once): the node does not wait for DNS to start serving.
 */
function addOwnUrl(policy: AddressPolicy, raw: string): void {
  const url = new URL(raw);
  const port = Number(url.port) || (/^(https|wss):$/.test(url.protocol) ? 443 : 80);
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (host === 'localhost') for (const address of ['127.0.0.1', '::1']) policy.addOwn({ address, port });
  else if (isIP(host) !== 0) policy.addOwn({ address: host, port });
  else
    lookup(host, { all: true }, (err, addresses) => {
      if (err) log.warn({ host, err: err.message }, 'cannot resolve a platform address to keep it from origins');
      else for (const a of addresses) policy.addOwn({ address: a.address, port });
    });
}

/** Opens the store and compiles every domain it holds, then listens: what LMDB holds is served before the hub answers. */
export async function startEdgeNode(
  config: EdgeConfig,
  store = openNodeStore(nodeStorePath(config)),
): Promise<EdgeNode> {
  const table = new DomainTable();
  const cache = new EdgeCache(config.cacheMaxBytes);
  // The edge's public addresses are never an origin; its listen ports and the control plane's are added below.
  const policy = new AddressPolicy(
    config.allowedPrivateNetworks,
    config.publicAddresses.map((address) => ({ address, port: null })),
  );
  for (const url of [config.syncUrl, config.controlPlaneUrl]) if (url) addOwnUrl(policy, url);
  const pools = new UpstreamPools({
    tlsVerify: config.originTlsVerify,
    extraCa: config.originCaFile ? readFileSync(config.originCaFile, 'utf8') : undefined,
    policy,
    maxPools: config.originPoolsMax,
    nativeClient: config.originClient === 'native',
  });
  const probes = new Agent({
    connect: guardedConnector(policy, { rejectUnauthorized: false, timeout: 10_000 }),
    keepAliveTimeout: 1000,
  });
  // Without a control plane to ship to, keep only a small window (tests read it; nothing grows under load).
  const logs = new RequestLogBuffer(
    config.controlPlaneUrl ? config.logBufferMax : Math.min(config.logBufferMax, 10_000),
  );
  const requests = new RequestCounters();
  const state = {
    table,
    pools,
    cache,
    cacheMaxObjectBytes: config.cacheMaxObjectBytes,
    log: (ctx: RequestContext) => {
      requests.count(ctx.status, ctx.cacheStatus);
      logs.add(ctx);
    },
  };
  const tlsDir = join(config.dataDir, 'edge-node-tls');
  const defaultCert =
    config.httpsPort >= 0
      ? defaultCertificate(tlsDir, { certFile: config.defaultCertFile, keyFile: config.defaultKeyFile })
      : undefined;
  if (config.httpsPort >= 0 && !defaultCert)
    log.error('no default certificate (openssl missing and EDGE_TLS_DEFAULT_CERT unset): HTTPS is off');
  const nodeToken = ensureNodeToken(config.dataDir, config.nodeToken);
  configureChallengeSecret(config.challengeSecret, nodeToken);
  configureSso(
    { controlPlaneUrl: config.controlPlaneUrl, browserUrl: config.ssoUrl, clockToleranceS: config.ssoClockToleranceS },
    config.challengeSecret,
    nodeToken,
  );
  configureCrawlerVerifier(config.crawlerDns, { ...VERIFIER_DEFAULTS, perSecond: config.crawlerLookupsPerSecond });
  const server = await startEdgeServer(state, {
    host: config.host,
    httpPort: config.httpPort,
    httpsPort: config.httpsPort,
    tlsDir,
    defaultCert,
    nodeToken,
    front: config.front,
    policy,
  });
  policy.addOwn({ address: config.host, port: server.httpPort });
  if (server.httpsPort >= 0) policy.addOwn({ address: config.host, port: server.httpsPort });

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
    for (const d of table.all()) if (d.poolActions.length > 0) runHealthChecks(d.poolActions, () => d.name, probes);
  }, 1000);
  health.unref();
  const sweep = setInterval(sweepHealth, HEALTH_SWEEP_MS);
  sweep.unref();
  const prober = config.controlPlaneUrl
    ? new UptimeProber(table, pools, { workers: config.workers }).start()
    : undefined;

  return {
    store,
    table,
    cache,
    pools,
    policy,
    server,
    logs,
    requests,
    prober,
    refresh,
    async close() {
      prober?.stop();
      clearInterval(health);
      clearInterval(sweep);
      server.close();
      await pools.close();
      await probes.close();
      await store.close();
    },
  };
}
