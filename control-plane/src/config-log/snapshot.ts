// Builds a domain's whole DomainSnapshot from the rows visible in a transaction.
import { sql } from 'drizzle-orm';
import {
  SCHEMA_MAJOR,
  type DomainSettings,
  type DomainSnapshot,
  type RuleSet,
  type Zone,
  type ZoneRecord,
} from '@platform/shared/config';
import type { Tx } from '../db/index.js';
import { rowsOf } from '../db/migrate.js';
import type { domains } from '../db/schema.js';
import { buildDomainRuleSet, cachePurgeSettings } from '../areas/rules/rule-set.js';

type DomainRow = typeof domains.$inferSelect;
/** The dns_records columns a snapshot carries, selected by name (a zone of thousands of records is read per change). */
export interface RecordRow {
  id: number;
  name: string;
  type: string;
  destination: string;
  ttl: number;
  mx_priority: number | null;
  proxied: boolean;
  captcha: boolean;
  scheme: string;
  port: number;
  host_header: string | null;
  host_header_mode: string;
  timeout: number;
}

/** SOA timers of every zone we serve (seconds). */
export const SOA_TIMERS = { refresh: 10000, retry: 2400, expire: 604800, minimum: 300, ttl: 3600 } as const;

/**
 * The snapshot of `domain` (whose zone_serial is already the new serial) as nodes will serve it.
 * `nsSets` are the accepted nameserver sets; the zone uses the set the domain matched, else the first.
 */
export async function buildDomainSnapshot(
  tx: Tx,
  domain: DomainRow,
  nsSets: readonly (readonly string[])[],
  now = Date.now(),
): Promise<DomainSnapshot> {
  const records = rowsOf<RecordRow>(
    await tx.execute(sql`
    SELECT id, name, type, destination, ttl, mx_priority, proxied, captcha, scheme, port, host_header, host_header_mode, timeout
    FROM dns_records WHERE domain_id = ${domain.id} ORDER BY id`),
  );
  return {
    schemaMajor: SCHEMA_MAJOR,
    domainId: domain.id,
    name: domain.name,
    state: domain.state,
    dnsMode: domain.dnsMode,
    zone: buildZone(domain, records, nsSets),
    settings: { ...buildSettings(domain, now), ...(await cachePurgeSettings(tx, domain.id)) },
    ruleSet: await buildRuleSet(tx, domain),
    certificates: [],
  };
}

export function buildZone(domain: DomainRow, records: RecordRow[], nsSets: readonly (readonly string[])[]): Zone {
  const nameservers = [...(nsSets[domain.nsSetIndex ?? 0] ?? nsSets[0] ?? [])];
  return {
    serial: domain.zoneSerial,
    nameservers,
    soaMname: nameservers[0] ?? '',
    soaRname: `hostmaster.${domain.name}`,
    soaRefresh: SOA_TIMERS.refresh,
    soaRetry: SOA_TIMERS.retry,
    soaExpire: SOA_TIMERS.expire,
    soaMinimum: SOA_TIMERS.minimum,
    soaTtl: SOA_TIMERS.ttl,
    records: records.map(toZoneRecord),
  };
}

function toZoneRecord(r: RecordRow): ZoneRecord {
  return {
    id: r.id,
    name: r.name,
    type: r.type,
    destination: r.destination,
    ttl: r.ttl,
    mxPriority: r.mx_priority ?? 0,
    proxied: r.proxied,
    captcha: r.captcha,
    scheme: r.scheme,
    port: r.port,
    hostHeader: r.host_header ?? '',
    hostHeaderMode: r.host_header_mode,
    timeout: r.timeout,
  };
}

/** Developer mode is on while developer_mode_until is in the future; nodes also compare the expiry with their clock. */
export function buildSettings(domain: DomainRow, now: number): DomainSettings {
  const until = domain.developerModeUntil?.getTime() ?? 0;
  return {
    developerMode: until > now,
    developerModeExpiresAtMs: until > now ? until : 0,
    cacheL2TtlDays: domain.cacheL2TtlDays,
    cacheCapMb: domain.cacheCapMb,
  };
}

/** The domain's edge rules (enabled and disabled), read inside `tx` so every snapshot carries them. */
export async function buildRuleSet(tx: Tx, domain: DomainRow): Promise<RuleSet> {
  return buildDomainRuleSet(tx, domain);
}
