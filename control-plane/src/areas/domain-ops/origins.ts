// The distinct origins behind a domain's proxied records, probed (origin-probe.ts) for GET origin-protocols.
import type { FastifyInstance } from 'fastify';
import type { DomainRow } from '../../config-log/index.js';
import { originPolicy } from '../../origins/address-check.js';
import { listRecords } from '../records/store.js';
import { PROBE_MAX_ORIGINS, probeOrigins, recordOriginKey, type OriginKey } from './origin-probe.js';

const PROXIED_TYPES = new Set(['A', 'AAAA', 'CNAME']);

export async function originProtocols(app: FastifyInstance, domain: DomainRow) {
  const groups = new Map<string, { key: OriginKey; hostnames: string[] }>();
  for (const r of await listRecords(app.db, domain.id)) {
    if (!r.proxied || !PROXIED_TYPES.has(r.type)) continue;
    const key = recordOriginKey(domain.name, r);
    // One origin per (scheme, address, port): its first host name gives the SNI the probe sends.
    const text = `${key.scheme}|${key.host}|${key.port}`;
    const hostname = r.name === '@' ? domain.name : `${r.name}.${domain.name}`;
    const g = groups.get(text);
    if (g) {
      if (!g.hostnames.includes(hostname)) g.hostnames.push(hostname);
    } else groups.set(text, { key, hostnames: [hostname] });
  }
  const all = [...groups.values()];
  const probed = all.slice(0, PROBE_MAX_ORIGINS);
  const results = await probeOrigins(
    originPolicy(app.config),
    probed.map((g) => g.key),
  );
  return {
    origin_protocol: domain.originProtocol,
    origins: all.map((g, i) => {
      const r = results[i];
      return {
        scheme: g.key.scheme,
        host: g.key.host,
        port: g.key.port,
        server_name: g.key.serverName,
        hostnames: g.hostnames,
        ...(r
          ? { ...r.result, cached: r.cached }
          : {
              http1: false,
              http2: false,
              http3: false,
              http3_via: null,
              status: null,
              error: `not probed: at most ${PROBE_MAX_ORIGINS} origins are probed per domain`,
              checked_at: null,
              cached: false,
            }),
      };
    }),
  };
}
