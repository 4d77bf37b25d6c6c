// Applies delta ConfigEntries to a domain's whole snapshot: the one definition of what a delta means, used by the
// hub to squash a domain's deltas into a snapshot and by anyone who needs the whole state after a delta.
import type { ConfigEntry, DomainSnapshot, Rule, ZoneRecord } from './types.js';

/**
 * The domain's whole snapshot after `deltas` (entries with `delta` true, in version order) are applied to `base`:
 * every domain-level field from the last delta; records and rules of `base` replaced or added by id from each delta,
 * those in its removed lists dropped. Records come out by id and rules by (priority, id), the order the control
 * plane writes them. `base` is not modified. Linear in the sizes (plus one sort).
 */
export function applyDeltas(base: DomainSnapshot, deltas: readonly ConfigEntry[]): DomainSnapshot {
  if (deltas.length === 0) return base;
  const records = new Map<number, ZoneRecord>();
  for (const r of base.zone.records) records.set(r.id, r);
  const rules = new Map<number, Rule>();
  for (const r of base.ruleSet.rules) rules.set(r.id, r);
  let last = base;
  for (const delta of deltas) {
    const d = delta.snapshot;
    if (!d) throw new Error(`config delta ${delta.version} for ${delta.domain} carries no snapshot`);
    for (const id of delta.removedRecordIds ?? []) records.delete(id);
    for (const r of d.zone.records) records.set(r.id, r);
    for (const id of delta.removedRuleIds ?? []) rules.delete(id);
    for (const r of d.ruleSet.rules) rules.set(r.id, r);
    last = d;
  }
  return {
    ...last,
    zone: { ...last.zone, records: [...records.values()].sort((a, b) => a.id - b.id) },
    ruleSet: { ...last.ruleSet, rules: [...rules.values()].sort((a, b) => a.priority - b.priority || a.id - b.id) },
  };
}

/** applyDeltas with one delta. */
export function applyDelta(base: DomainSnapshot, delta: ConfigEntry): DomainSnapshot {
  return applyDeltas(base, [delta]);
}
