// Test helpers for config entries: builders of snapshot, delta and tombstone entries, and the reference model of what
// a node holds after applying entries in version order (the semantics docs/decisions.md "Delta entries" describes).
import { SCHEMA_MAJOR, type ConfigEntry, type DomainSnapshot, type Rule, type ZoneRecord } from '../config/index.js';

/** A record with the API's defaults (TTL 300, not proxied). */
export function zoneRecord(id: number, name: string, destination: string, type = 'A'): ZoneRecord {
  return {
    id,
    name,
    type,
    destination,
    ttl: 300,
    mxPriority: 0,
    proxied: false,
    captcha: false,
    scheme: 'Auto',
    port: 443,
    hostHeader: '',
    hostHeaderMode: 'own',
    timeout: 60,
  };
}

/** A domain with no records nor rules: the header a delta carries. `serial` is also the rule-set version. */
export function domainHeader(name: string, serial: number, state = 'active'): DomainSnapshot {
  return {
    schemaMajor: SCHEMA_MAJOR,
    domainId: 1,
    name,
    state,
    dnsMode: 'managed',
    zone: {
      serial,
      nameservers: ['ns1.platform.test', 'ns2.platform.test'],
      soaMname: 'ns1.platform.test',
      soaRname: `hostmaster.${name}`,
      soaRefresh: 10000,
      soaRetry: 2400,
      soaExpire: 604800,
      soaMinimum: 300,
      soaTtl: 3600,
      records: [],
    },
    settings: { developerMode: false, developerModeExpiresAtMs: 0, cacheL2TtlDays: 3, cacheCapMb: 100 },
    ruleSet: { version: serial, rules: [] },
    certificates: [],
  };
}

export interface DeltaChange {
  records?: ZoneRecord[];
  rules?: Rule[];
  removedRecordIds?: number[];
  removedRuleIds?: number[];
}

export function snapshotEntry(version: number, snapshot: DomainSnapshot): ConfigEntry {
  return { version, domain: snapshot.name, deleted: false, snapshot };
}

export function tombstoneEntry(version: number, domain: string): ConfigEntry {
  return { version, domain, deleted: true };
}

/** A delta: every domain-level field of `header` whole, with only the records and rules of `change`. */
export function deltaEntry(version: number, header: DomainSnapshot, change: DeltaChange): ConfigEntry {
  return {
    version,
    domain: header.name,
    deleted: false,
    delta: true,
    snapshot: {
      ...header,
      zone: { ...header.zone, records: change.records ?? [] },
      ruleSet: { ...header.ruleSet, rules: change.rules ?? [] },
    },
    removedRecordIds: change.removedRecordIds ?? [],
    removedRuleIds: change.removedRuleIds ?? [],
  };
}

/**
 * Applies an entry to `model` (domain → whole snapshot, records and rules in id order) the way a node store does:
 * a tombstone drops the domain; a snapshot replaces it; a delta takes every domain-level field from its snapshot,
 * removes the listed ids, then writes its records and rules over the domain's (an id both removed and written ends
 * up written). A delta for a domain the model lacks applies onto an empty one.
 */
export function applyToModel(model: Map<string, DomainSnapshot>, entry: ConfigEntry): void {
  if (entry.deleted) {
    model.delete(entry.domain);
    return;
  }
  const s = entry.snapshot;
  if (!entry.delta) {
    if (s) model.set(entry.domain, withParts(s, s.zone.records, s.ruleSet.rules));
    return;
  }
  const base = model.get(entry.domain);
  const header = s ?? base;
  if (!header) return;
  const records = new Map((base?.zone.records ?? []).map((r) => [r.id, r]));
  const rules = new Map((base?.ruleSet.rules ?? []).map((r) => [r.id, r]));
  for (const id of entry.removedRecordIds ?? []) records.delete(id);
  for (const id of entry.removedRuleIds ?? []) rules.delete(id);
  for (const r of s?.zone.records ?? []) records.set(r.id, r);
  for (const r of s?.ruleSet.rules ?? []) rules.set(r.id, r);
  model.set(entry.domain, withParts(header, [...records.values()], [...rules.values()]));
}

function withParts(header: DomainSnapshot, records: ZoneRecord[], rules: Rule[]): DomainSnapshot {
  return {
    ...header,
    zone: { ...header.zone, records: [...records].sort((a, b) => a.id - b.id) },
    ruleSet: { ...header.ruleSet, rules: [...rules].sort((a, b) => a.id - b.id) },
  };
}
