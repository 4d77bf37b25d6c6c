// The API shape of a stored rule (spec "Rule"), and the input shape an update merges into.
import type { rules } from '../../db/schema.js';

type RuleRow = typeof rules.$inferSelect;
export type PresentedRule = Record<string, unknown> & { id: number; type: string };

/**
 * The rule as the API returns it: common fields in the spec's order, then the type's own fields, then timestamps.
 * record_id (deprecated single-record scope) is present only when the rule is scoped to exactly one record.
 * basic_auth users are read back by username only: a password hash is never returned, to any role.
 */
export function presentRule(row: RuleRow): PresentedRule {
  const out = storedRule(row);
  if (Array.isArray(out.users))
    out.users = (out.users as { username: string }[]).map((u) => ({ username: u.username }));
  return out;
}

/** The stored rule in the API's shape, basic_auth password hashes included (never sent out). */
function storedRule(row: RuleRow): PresentedRule {
  const f = row.filters as Record<string, unknown> & { record_ids: number[] };
  const out: PresentedRule = { id: row.id, domain_id: row.domainId, type: row.type };
  if (f.record_ids.length === 1) out.record_id = f.record_ids[0];
  Object.assign(out, {
    record_ids: f.record_ids,
    enabled: row.enabled,
    priority: row.priority,
    host_pattern: f.host_pattern,
    host_match_type: f.host_match_type,
    host_includes: f.host_includes,
    host_excludes: f.host_excludes,
    ip_includes: f.ip_includes,
    ip_excludes: f.ip_excludes,
    action_mode: f.action_mode,
    path_match_type: f.path_match_type,
    path_includes: f.path_includes,
    path_excludes: f.path_excludes,
  });
  Object.assign(out, row.fields);
  out.created_at = row.createdAt.toISOString();
  out.updated_at = row.updatedAt.toISOString();
  return out;
}

/** The stored rule as a create body (no id, timestamps or read-only fields): the base an update merges over. */
export function ruleInput(row: RuleRow): Record<string, unknown> {
  const {
    id: _id,
    domain_id: _d,
    type: _t,
    record_id: _r,
    created_at: _c,
    updated_at: _u,
    country: _country,
    ...rest
  } = storedRule(row);
  return rest;
}
