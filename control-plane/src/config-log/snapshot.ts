// Reads what nodes serve of one domain in ONE statement: bumps its zone serial and returns the domain-level fields
// with all of its records and rules (a whole snapshot) or only those a change wrote (a delta).
import { sql, type Placeholder, type SQL } from 'drizzle-orm';
import {
  SCHEMA_MAJOR,
  type AcmeHttpChallenge,
  type CustomPage,
  type DomainSettings,
  type DomainSnapshot,
  type RecordSource,
  type Rule,
  type Zone,
  type ZoneRecord,
} from '@platform/shared/config';
import { encodeRuleBody, type RuleBody } from '@platform/shared/match';
import type { Tx } from '../db/index.js';
import { rowsOf } from '../db/migrate.js';
import type { KeyVault } from '../areas/ssl/key-vault.js';
import { certificatesForNodes } from '../areas/ssl/serving.js';
import { snapshotCertificatesSql, type SnapshotCertificateJson } from '../areas/ssl/store.js';
import { snapshotAcmeHttpSql } from '../internal/acme-http01-store.js';
import { cachePurgeOf } from '../areas/rules/rule-set.js';
import { dnssecForNodes, snapshotDnssecSql, type DnssecRow } from '../areas/dnssec/store.js';
import { snapshotTransfersSql, transfersForNodes, type TransfersRow } from '../areas/zone-transfers/store.js';

/** SOA timers of every zone we serve (seconds). */
export const SOA_TIMERS = { refresh: 10000, retry: 2400, expire: 604800, minimum: 300, ttl: 3600 } as const;

/** Selective cache purges carried in each entry's settings (nodes apply each one once, by id). */
export const ENTRY_PURGES = 100;

/** The domain fields a snapshot's header is built from. */
export interface DomainHeader {
  id: number;
  name: string;
  state: string;
  dnsMode: string;
  nsSetIndex: number | null;
  zoneSerial: number;
  cacheL2TtlDays: number;
  cacheCapMb: number;
  originProtocol: string;
  underAttack: boolean;
  developerModeUntil: Date | null;
}

/** Which records (or rules) to read: all of the domain's, or the ids a change wrote. */
export type Selection = 'all' | readonly number[];

export interface DomainConfig {
  /** Whole when both selections were 'all'; otherwise a delta's snapshot (only the selected records and rules). */
  snapshot: DomainSnapshot;
  /** The domain's whole compiled size (records and rules, kept by triggers), after the change. */
  configBytes: number;
  /** Selected ids that no longer exist (written, then deleted, in the same change). */
  missingRecordIds: number[];
  missingRuleIds: number[];
  /** The row's records_in_hand: the snapshot's records follow those of `snapshot.zone` (encodeDomainSnapshotFast). */
  recordsInHand?: RecordSource;
}

type RecordTuple = [
  number,
  string,
  string,
  string,
  number,
  number | null,
  boolean,
  boolean,
  string,
  number,
  string | null,
  string,
  number,
  boolean,
];
type RuleJson = { id: number; type: string; enabled: boolean; priority: number; filters: RuleBody; fields: object };

/** A row of domainConfigColumns, as the driver returns it. */
export interface DomainConfigRow {
  name: string;
  state: string;
  dns_mode: string;
  ns_set_index: number | null;
  zone_serial: number;
  cache_l2_ttl_days: number;
  cache_cap_mb: number;
  origin_protocol: string;
  under_attack: boolean;
  developer_mode_until_ms: number | string | null;
  config_bytes: number | string;
  purge_generation: number | null;
  purges: Array<{ id: number; prefixes: string[]; refresh: boolean }>;
  uptime_min_requests: number | null;
  uptime_monitors: Array<{ id: number; scope: MonitorScopeJson }>;
  records: RecordTuple[];
  rules: RuleJson[];
  certificates: SnapshotCertificateJson[];
  acme_http: AcmeHttpChallenge[];
  custom_pages: CustomPage[];
  /** The zone's DNSSEC switch and keys (areas/dnssec/store.ts); null when it was never enabled. */
  dnssec: DnssecRow | null;
  /** The zone's secondaries and TSIG keys (areas/zone-transfers/store.ts). */
  transfers?: TransfersRow | null;
  /**
   * The records of a write that has them in hand (records/service.ts importZone), used instead of `records`: encoded
   * for nodes straight from them (encodeDomainSnapshotFast's RecordSource), no ZoneRecord made of each.
   */
  records_in_hand?: RecordSource;
}

/** uptime_monitors.scope as stored (control-plane/src/areas/uptime/monitor.ts MonitorScope). */
interface MonitorScopeJson {
  host_match_type: string;
  host_includes: string[];
  host_excludes: string[];
  path_match_type: string;
  path_includes: string[];
  path_excludes: string[];
}

/** uptime_settings.min_requests_per_minute of a domain that never saved its uptime settings. */
const DEFAULT_MIN_REQUESTS_PER_MINUTE = 20;

function idFilter(column: string, selection: Selection): SQL {
  if (selection === 'all') return sql``;
  return sql` AND ${sql.raw(column)} = ANY(${`{${selection.join(',')}}`}::int[])`;
}

/** The records of a snapshot as read from `from` (a table or CTE with dns_records' columns), in id order. */
export function snapshotRecordsSql(from: SQL): SQL {
  return sql`(SELECT coalesce(json_agg(json_build_array(id, name, type, destination, ttl, mx_priority, proxied, captcha,
          scheme, port, host_header, host_header_mode, timeout, monitor) ORDER BY id), '[]'::json) FROM ${from})`;
}

/**
 * The columns a config is built from (configFromRow), for `UPDATE domains … RETURNING` or `SELECT … FROM domains`
 * of domain `domainId`: `records` and `rules` are the snapshot's arrays (snapshotRecordsSql, or '[]'::json), and
 * `configBytes` the domain's compiled size after the change (default: the row's config_bytes, which triggers keep).
 * A write that inserts records can read them in its own statement (records/store.ts createWithContext).
 */
export function domainConfigColumns(
  domainId: number | Placeholder,
  records: SQL,
  rules: SQL,
  configBytes: SQL = sql`config_bytes`,
): SQL {
  const id = domainId as number;
  return sql`name, state, dns_mode, ns_set_index, zone_serial, cache_l2_ttl_days, cache_cap_mb, origin_protocol,
      under_attack,
      ${configBytes} AS config_bytes,
      (extract(epoch FROM developer_mode_until) * 1000)::float8 AS developer_mode_until_ms,
      (SELECT generation FROM cache_purges WHERE domain_id = ${id}) AS purge_generation,
      (SELECT coalesce(json_agg(json_build_object('id', p.id, 'prefixes', p.prefixes, 'refresh', p.refresh) ORDER BY p.id), '[]'::json)
        FROM (SELECT id, prefixes, refresh FROM cache_purge_requests WHERE domain_id = ${id}
              ORDER BY id DESC LIMIT ${ENTRY_PURGES}) p) AS purges,
      (SELECT min_requests_per_minute FROM uptime_settings WHERE domain_id = ${id}) AS uptime_min_requests,
      (SELECT coalesce(json_agg(json_build_object('id', id, 'scope', scope) ORDER BY id), '[]'::json)
        FROM uptime_monitors WHERE domain_id = ${id} AND enabled) AS uptime_monitors,
      ${records} AS records,
      ${rules} AS rules,
      ${snapshotCertificatesSql(id)} AS certificates,
      ${snapshotAcmeHttpSql(id)} AS acme_http,
      (SELECT coalesce(json_agg(json_build_object('kind', kind, 'html', html) ORDER BY kind), '[]'::json)
        FROM domain_custom_pages WHERE domain_id = ${id}) AS custom_pages,
      ${snapshotDnssecSql(id)} AS dnssec,
      ${snapshotTransfersSql(id)} AS transfers`;
}

/**
 * Bumps the zone serial of domain `domainId` (unless `bumpSerial` is false) and reads its config as nodes will serve
 * it, in one statement; null when the domain does not exist. `nsSets` are the accepted nameserver sets: the zone uses the set the domain matched,
 * else the first.
 */
export async function readDomainConfig(
  tx: Tx,
  domainId: number,
  nsSets: readonly (readonly string[])[],
  records: Selection,
  rules: Selection,
  opts: { bumpSerial?: boolean; now?: number; vault?: KeyVault } = {},
): Promise<DomainConfig | null> {
  const recordsSql =
    records !== 'all' && records.length === 0
      ? sql`'[]'::json`
      : snapshotRecordsSql(sql`dns_records WHERE domain_id = ${domainId}${idFilter('id', records)}`);
  const rulesSql =
    rules !== 'all' && rules.length === 0
      ? sql`'[]'::json`
      : sql`(SELECT coalesce(json_agg(json_build_object('id', id, 'type', type, 'enabled', enabled, 'priority', priority,
          'filters', filters, 'fields', fields) ORDER BY priority, id), '[]'::json)
          FROM rules WHERE domain_id = ${domainId}${idFilter('id', rules)})`;
  const row = await readConfigRow(tx, domainId, recordsSql, rulesSql, opts.bumpSerial !== false);
  return row ? configFromRow(domainId, row, nsSets, records, rules, opts) : null;
}

async function readConfigRow(
  tx: Tx,
  domainId: number,
  records: SQL,
  rules: SQL,
  bumpSerial: boolean,
): Promise<DomainConfigRow | undefined> {
  const columns = domainConfigColumns(domainId, records, rules);
  const result = await tx.execute(
    bumpSerial
      ? sql`UPDATE domains SET zone_serial = zone_serial + 1 WHERE id = ${domainId} RETURNING ${columns}`
      : sql`SELECT ${columns} FROM domains WHERE id = ${domainId}`,
  );
  return rowsOf<DomainConfigRow>(result)[0];
}

/**
 * Bumps the zone serial of domain `domainId` and reads its domain-level config without any record or rule, for a
 * write that has its records in hand (records/service.ts importZone): it sets them as the row's records_in_hand
 * and hands it to the config log as ConfigChange.read, so a large import reads nothing of what it just wrote.
 * Undefined when the domain does not exist.
 */
export async function bumpDomainConfigRow(tx: Tx, domainId: number): Promise<DomainConfigRow | undefined> {
  return readConfigRow(tx, domainId, sql`'[]'::json`, sql`'[]'::json`, true);
}

/**
 * The config of domain `domainId` from a row of domainConfigColumns. `records` and `rules`: what the row's arrays were
 * read for (ids missing from them are reported as removed).
 */
export function configFromRow(
  domainId: number,
  row: DomainConfigRow,
  nsSets: readonly (readonly string[])[],
  records: Selection,
  rules: Selection,
  opts: { now?: number; vault?: KeyVault } = {},
): DomainConfig {
  const untilMs = row.developer_mode_until_ms === null ? null : Number(row.developer_mode_until_ms);
  const header: DomainHeader = {
    id: domainId,
    name: row.name,
    state: row.state,
    dnsMode: row.dns_mode,
    nsSetIndex: row.ns_set_index,
    zoneSerial: row.zone_serial,
    cacheL2TtlDays: row.cache_l2_ttl_days,
    cacheCapMb: row.cache_cap_mb,
    originProtocol: row.origin_protocol,
    underAttack: row.under_attack,
    developerModeUntil: untilMs === null ? null : new Date(untilMs),
  };
  const inHand = row.records_in_hand;
  const zoneRecords = inHand ? [] : row.records.map(tupleToRecord);
  const snapshotRules = row.rules.map(jsonToRule);
  return {
    snapshot: {
      schemaMajor: SCHEMA_MAJOR,
      domainId,
      name: header.name,
      state: header.state,
      dnsMode: header.dnsMode,
      zone: buildZone(header, zoneRecords, nsSets),
      settings: {
        ...buildSettings(header, opts.now ?? Date.now()),
        cachePurgeGeneration: row.purge_generation ?? 0,
        cachePurges: row.purges.map(cachePurgeOf),
        uptime: {
          minRequestsPerMinute: row.uptime_min_requests ?? DEFAULT_MIN_REQUESTS_PER_MINUTE,
          monitors: row.uptime_monitors.map(({ id, scope: s }) => ({
            id,
            hostMatchType: s.host_match_type,
            hostIncludes: s.host_includes,
            hostExcludes: s.host_excludes,
            pathMatchType: s.path_match_type,
            pathIncludes: s.path_includes,
            pathExcludes: s.path_excludes,
          })),
        },
        customPages: row.custom_pages ?? [],
      },
      ruleSet: { version: header.zoneSerial, rules: snapshotRules },
      // Without a vault (tests of the log alone) no certificate can be sealed for nodes: none is sent.
      certificates: opts.vault
        ? certificatesForNodes(opts.vault, header.name, row.certificates, opts.now ?? Date.now())
        : [],
      acmeHttpChallenges: row.acme_http,
      // Signed online by the DNS nodes; like certificates, keys go only sealed, so without a vault nothing is sent.
      dnssec: dnssecForNodes(opts.vault, header.name, row.dnssec ?? null),
      transfers: transfersForNodes(opts.vault, header.name, row.transfers ?? null),
    },
    configBytes: Number(row.config_bytes),
    // Records in hand were all written by the change itself, under its lock.
    missingRecordIds: inHand ? [] : missing(records, zoneRecords),
    missingRuleIds: missing(rules, snapshotRules),
    recordsInHand: inHand,
  };
}

/** The domain's whole snapshot as nodes would serve it now, without changing anything (exports, tests). */
export async function buildDomainSnapshot(
  tx: Tx,
  domain: { id: number },
  nsSets: readonly (readonly string[])[],
  vault?: KeyVault,
): Promise<DomainSnapshot> {
  const config = await readDomainConfig(tx, domain.id, nsSets, 'all', 'all', { bumpSerial: false, vault });
  if (!config) throw new Error(`domain ${domain.id} does not exist`);
  return config.snapshot;
}

function missing(selection: Selection, found: ReadonlyArray<{ id: number }>): number[] {
  if (selection === 'all' || selection.length === found.length) return [];
  const present = new Set(found.map((f) => f.id));
  return selection.filter((id) => !present.has(id));
}

export function buildZone(
  domain: Pick<DomainHeader, 'name' | 'nsSetIndex' | 'zoneSerial'>,
  records: ZoneRecord[],
  nsSets: readonly (readonly string[])[],
): Zone {
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
    records,
  };
}

function tupleToRecord(r: RecordTuple): ZoneRecord {
  return {
    id: r[0],
    name: r[1],
    type: r[2],
    destination: r[3],
    ttl: r[4],
    mxPriority: r[5] ?? 0,
    proxied: r[6],
    captcha: r[7],
    scheme: r[8],
    port: r[9],
    hostHeader: r[10] ?? '',
    hostHeaderMode: r[11],
    timeout: r[12],
    monitor: r[13],
  };
}

function jsonToRule(r: RuleJson): Rule {
  return {
    id: r.id,
    type: r.type,
    enabled: r.enabled,
    priority: r.priority,
    body: encodeRuleBody({ ...r.filters, ...r.fields }),
  };
}

/** Developer mode is on while developer_mode_until is in the future; nodes also compare the expiry with their clock. */
export function buildSettings(
  domain: Pick<DomainHeader, 'developerModeUntil' | 'cacheL2TtlDays' | 'cacheCapMb' | 'originProtocol' | 'underAttack'>,
  now: number,
): DomainSettings {
  const until = domain.developerModeUntil?.getTime() ?? 0;
  return {
    developerMode: until > now,
    developerModeExpiresAtMs: until > now ? until : 0,
    cacheL2TtlDays: domain.cacheL2TtlDays,
    cacheCapMb: domain.cacheCapMb,
    originProtocol: domain.originProtocol,
    underAttack: domain.underAttack,
  };
}
