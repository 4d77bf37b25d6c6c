// POST records/recheck-proxied: an external-DNS domain keeps its zone elsewhere, so a proxied record only goes through
// the edge when the customer's DNS points its hostname at the edge addresses (EDGE_IPV4/EDGE_IPV6, directly or through
// a CNAME the resolver follows). The workflow worker asks the public resolvers (DNS_RESOLVERS) for each hostname, as
// check-ns does: a check the user waits for (app.temporal.execute).
import type { FastifyInstance } from 'fastify';
import { and, eq } from 'drizzle-orm';
import type * as wf from '../../../../workflows/src/workflows/index.js';
import { dnsRecords } from '../../db/schema.js';
import { ApiError } from '../../errors.js';
import { absoluteName } from '../records/names.js';
import type { DomainRow } from '../records/service.js';

/** At most this many distinct hostnames are asked per re-check (the rest are reported as not checked). */
export const RECHECK_MAX_HOSTNAMES = 200;

type Lookup = Awaited<ReturnType<typeof wf.lookupProxiedHostnames>>[number];

export async function recheckProxied(app: FastifyInstance, domain: DomainRow) {
  if (domain.dnsMode !== 'external')
    throw new ApiError(
      'CP_ERR_WRONG_STATE',
      'the re-check is for external DNS: this domain is hosted by the service, which answers its proxied records with the edge addresses itself',
    );
  const rows = await app.db
    .select({ id: dnsRecords.id, name: dnsRecords.name })
    .from(dnsRecords)
    .where(and(eq(dnsRecords.domainId, domain.id), eq(dnsRecords.proxied, true)))
    .orderBy(dnsRecords.id);
  const named = rows.map((r) => ({ id: r.id, name: r.name, hostname: absoluteName(domain.name, r.name) }));
  const hostnames = [...new Set(named.map((r) => r.hostname).filter((h) => !h.startsWith('*')))];
  const asked = hostnames.slice(0, RECHECK_MAX_HOSTNAMES);
  const answers = new Map<string, Lookup>();
  if (asked.length > 0) {
    const found = await app.temporal.execute<Lookup[]>('lookupProxiedHostnames', `recheck-proxied:${domain.name}`, [
      { hostnames: asked } satisfies Parameters<typeof wf.lookupProxiedHostnames>[0],
    ]);
    for (const a of found) answers.set(a.hostname, a);
  }
  const edge = new Set([...app.config.edgeIpv4, ...app.config.edgeIpv6]);
  const records = named.map((base) => {
    const { hostname } = base;
    if (hostname.startsWith('*'))
      return { ...base, ok: false, seen: [], error: 'a wildcard name cannot be asked; check one name under it' };
    const a = answers.get(hostname);
    if (!a)
      return {
        ...base,
        ok: false,
        seen: [],
        error: `not checked: at most ${RECHECK_MAX_HOSTNAMES} hostnames are checked at a time`,
      };
    const foreign = a.addresses.filter((x) => !edge.has(x));
    if (a.addresses.length === 0)
      return { ...base, ok: false, seen: [], error: a.error ?? `${hostname} has no A or AAAA record` };
    if (foreign.length > 0)
      return {
        ...base,
        ok: false,
        seen: a.addresses,
        error: `${hostname} resolves to ${foreign.join(', ')}, not the service: point it at the edge addresses (GET /account/edge-ips)`,
      };
    return { ...base, ok: true, seen: a.addresses };
  });
  return {
    ok: records.every((r) => r.ok),
    checked: answers.size,
    expected: { ipv4: [...app.config.edgeIpv4], ipv6: [...app.config.edgeIpv6] },
    records,
  };
}
