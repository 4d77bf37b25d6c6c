// Rule writes and reads: validation (shared validateRule + checks that need the database), storage, plan limits;
// every write goes through changeDomain (domain row locked and read under the lock, one config-log entry naming the
// rules it changed).
import type { FastifyInstance } from 'fastify';
import { and, asc, eq, sql } from 'drizzle-orm';
import {
  CUSTOM_RULE_TYPE,
  describeProblems,
  hashRulePasswords,
  validateRule,
  type NormalisedRule,
  type Problem,
  type StoredRuleType,
  WAF_DEFAULT_MARK,
} from '@platform/shared/match';
import type { Db, Tx } from '../../db/index.js';
import { dnsRecords, rules, type domains } from '../../db/schema.js';
import { ApiError } from '../../errors.js';
import { changeDomain } from '../../config-log/index.js';
import { effectiveFeatures, requireFeature, requireRuleType } from '../../plans/entitlements.js';
import { originAddressProblem, originPolicy } from '../../origins/address-check.js';
import { HostHeaderOwnership } from '../../origins/host-header.js';
import { countryOf } from './geo.js';
import { presentRule, ruleInput, type PresentedRule } from './present.js';

type DomainRow = typeof domains.$inferSelect;
type RuleRow = typeof rules.$inferSelect;

export const RULE_NOT_FOUND = 'rule not found';

export async function listRules(
  app: FastifyInstance,
  domainId: number,
  type: StoredRuleType,
): Promise<PresentedRule[]> {
  const rows = await app.db
    .select()
    .from(rules)
    .where(and(eq(rules.domainId, domainId), eq(rules.type, type)))
    .orderBy(asc(rules.priority), asc(rules.id));
  return rows.map(presentRule);
}

export async function findRule(
  db: FastifyInstance['db'] | Tx,
  domainId: number,
  type: StoredRuleType,
  id: number,
): Promise<RuleRow> {
  const [row] = await db
    .select()
    .from(rules)
    .where(and(eq(rules.id, id), eq(rules.domainId, domainId), eq(rules.type, type)))
    .limit(1);
  if (!row) throw new ApiError('CP_ERR_NOT_FOUND', RULE_NOT_FOUND);
  return row;
}

export async function getRule(
  app: FastifyInstance,
  domainId: number,
  type: StoredRuleType,
  id: number,
): Promise<PresentedRule> {
  return presentRule(await findRule(app.db, domainId, type, id));
}

/** 400 naming every problem; nothing is stored. */
function invalid(problems: Problem[]): never {
  throw new ApiError('CP_ERR_RULE_INVALID', describeProblems(problems), { problems });
}

/** Checks that need the database: record scope (proxied records of this domain) and origin host headers. */
async function checkAgainstDatabase(
  tx: Tx,
  domain: DomainRow,
  type: StoredRuleType,
  rule: NormalisedRule,
): Promise<void> {
  const problems: Problem[] = [];
  if (rule.common.record_ids.length > 0) {
    const recs = await tx
      .select({ id: dnsRecords.id, proxied: dnsRecords.proxied })
      .from(dnsRecords)
      .where(eq(dnsRecords.domainId, domain.id));
    const proxied = new Set(recs.filter((r) => r.proxied).map((r) => r.id));
    rule.common.record_ids.forEach((id, i) => {
      if (!proxied.has(id))
        problems.push({ path: `record_ids[${i}]`, message: `record ${id} is not a proxied record of this domain` });
    });
  }
  const hosts = new HostHeaderOwnership(tx, domain);
  const checkHost = async (path: string, host: unknown) => {
    const message = typeof host === 'string' && host !== '' ? await hosts.problem(host) : undefined;
    if (message) problems.push({ path, message });
  };
  if (type === 'origin_route' || (type === 'bot_route' && rule.fields.action === 'route'))
    await checkHost('host_header', rule.fields.host_header);
  if (type === 'origin_pool')
    for (const [i, o] of (rule.fields.origins as Record<string, unknown>[]).entries())
      await checkHost(`origins[${i}].host_header`, o.host_header);
  if (problems.length > 0) invalid(problems);
}

/** origin_route and origin_pool addresses must be origins the edge would connect to (ALLOWED_PRIVATE_NETWORKS aside). */
function checkOriginAddresses(app: FastifyInstance, type: StoredRuleType, rule: NormalisedRule): void {
  const policy = originPolicy(app.config);
  const problems: Problem[] = [];
  const check = (path: string, origin: Record<string, unknown>) => {
    const message = originAddressProblem(policy, String(origin.address), [Number(origin.port)]);
    if (message) problems.push({ path, message });
  };
  if (type === 'origin_route' || (type === 'bot_route' && rule.fields.action === 'route'))
    check('address', rule.fields);
  if (type === 'origin_pool')
    (rule.fields.origins as Record<string, unknown>[]).forEach((o, i) => check(`origins[${i}].address`, o));
  if (problems.length > 0) invalid(problems);
}

export function validate(type: StoredRuleType, body: Record<string, unknown>): NormalisedRule {
  const r = validateRule(type, body);
  if (!r.ok) invalid(r.problems);
  if (type === 'origin_route') r.value.fields.country = countryOf(String(r.value.fields.address));
  return r.value;
}

/**
 * The slow part, only once every check that needs no lock has passed: the rule's new basic_auth passwords are
 * hashed off the event loop, before the transaction so that no domain lock is held meanwhile. True when it hashed.
 */
async function hashNewPasswords(
  app: FastifyInstance,
  domain: DomainRow,
  type: StoredRuleType,
  rule: NormalisedRule,
  creating: boolean,
): Promise<boolean> {
  if (rule.passwords.length === 0) return false;
  await checkPlan(app.db, domain.id, type, creating);
  await hashRulePasswords(rule);
  return true;
}

/** The PUT body merged onto the stored rule: omitted fields keep their values; setting any host field re-derives host_match_type unless given. */
function mergeBody(existing: RuleRow, body: Record<string, unknown>): Record<string, unknown> {
  const merged: Record<string, unknown> = { ...ruleInput(existing), ...body };
  if (body.host_match_type === undefined && ['host_pattern', 'host_includes', 'host_excludes'].some((k) => k in body))
    delete merged.host_match_type;
  if (body.record_id !== undefined && body.record_ids === undefined) merged.record_ids = [];
  // A routing bot_route rule given another action leaves its origin behind (fields sent with it are still checked).
  if (existing.type === 'bot_route' && body.action !== undefined && body.action !== 'route')
    for (const k of ['address', 'port', 'scheme', 'host_header', 'name', 'country']) if (!(k in body)) delete merged[k];
  // A basic_auth user sent without a password keeps the password stored for that username (hashes are not read back).
  if (Array.isArray(body.users) && Array.isArray(existing.fields.users)) {
    const stored = new Map(
      (existing.fields.users as { username: string; password_hash: string }[]).map((u) => [
        u.username,
        u.password_hash,
      ]),
    );
    merged.users = (body.users as Record<string, unknown>[]).map((u) =>
      u &&
      typeof u === 'object' &&
      u.password === undefined &&
      u.password_hash === undefined &&
      stored.has(String(u.username))
        ? { ...u, password_hash: stored.get(String(u.username)) }
        : u,
    );
  }
  return merged;
}

async function checkPlan(tx: Db | Tx, domainId: number, type: StoredRuleType, creating: boolean): Promise<void> {
  const features = await effectiveFeatures(tx, domainId);
  requireFeature(features, 'rules_enabled');
  requireRuleType(features, type);
  if (creating) {
    const [{ n }] = await tx
      .select({ n: sql<number>`count(*)::int` })
      .from(rules)
      .where(and(eq(rules.domainId, domainId), eq(rules.type, type)));
    // The custom rules group is limited by max_custom_rules; each of the fifteen types by max_rules_per_set.
    const limit = type === CUSTOM_RULE_TYPE ? 'max_custom_rules' : 'max_rules_per_set';
    if (Number(n) >= features[limit]) {
      throw new ApiError(
        'CP_ERR_PLAN_LIMIT',
        `your plan (${features.plan}) allows at most ${features[limit]} ${type} rules (${limit})`,
        { feature: limit },
      );
    }
  }
}

export async function createRule(
  app: FastifyInstance,
  domain: DomainRow,
  type: StoredRuleType,
  body: Record<string, unknown>,
  /** Runs in the rule's transaction, under the domain lock, after the insert (a throw undoes the rule too). */
  onCreated?: (tx: Tx, created: RuleRow) => Promise<void>,
): Promise<PresentedRule> {
  const rule = validate(type, body);
  checkOriginAddresses(app, type, rule);
  await hashNewPasswords(app, domain, type, rule, true);
  const row = await changeDomain(app, domain.id, async (tx, locked) => {
    await checkPlan(tx, locked.id, type, true);
    await checkAgainstDatabase(tx, locked, type, rule);
    const { enabled, priority, ...filters } = rule.common;
    const [created] = await tx
      .insert(rules)
      .values({ domainId: locked.id, type, enabled, priority, filters, fields: rule.fields })
      .returning();
    if (onCreated) await onCreated(tx, created);
    return { value: created, change: { upsertedRules: [created.id] } };
  });
  return presentRule(row);
}

/**
 * PUT: the body is merged onto the rule as read under the domain lock, so a concurrent PUT of other fields is kept.
 * New passwords (they come from the body only) are hashed before the lock; the body then carries their hashes.
 */
export async function updateRule(
  app: FastifyInstance,
  domain: DomainRow,
  type: StoredRuleType,
  id: number,
  body: Record<string, unknown>,
): Promise<PresentedRule> {
  const early = validate(type, mergeBody(await findRule(app.db, domain.id, type, id), body));
  if (await hashNewPasswords(app, domain, type, early, false)) body = { ...body, users: early.fields.users };
  const row = await changeDomain(app, domain.id, async (tx, locked) => {
    const existing = await findRule(tx, locked.id, type, id);
    const rule = validate(type, mergeBody(existing, body));
    // The default protection rule stays the default one through edits (status reports it modified; restore resets it).
    if (existing.fields[WAF_DEFAULT_MARK] === true) rule.fields[WAF_DEFAULT_MARK] = true;
    checkOriginAddresses(app, type, rule);
    await checkPlan(tx, locked.id, type, false);
    await checkAgainstDatabase(tx, locked, type, rule);
    const { enabled, priority, ...filters } = rule.common;
    const [updated] = await tx
      .update(rules)
      .set({ enabled, priority, filters, fields: rule.fields, updatedAt: new Date() })
      .where(eq(rules.id, id))
      .returning();
    return { value: updated, change: { upsertedRules: [id] } };
  });
  return presentRule(row);
}

export async function deleteRule(
  app: FastifyInstance,
  domain: DomainRow,
  type: StoredRuleType,
  id: number,
): Promise<void> {
  await changeDomain(app, domain.id, async (tx) => {
    await findRule(tx, domain.id, type, id);
    await tx.delete(rules).where(eq(rules.id, id));
    return { value: undefined, change: { removedRules: [id] } };
  });
}

export async function setRuleEnabled(
  app: FastifyInstance,
  domain: DomainRow,
  type: StoredRuleType,
  id: number,
  enabled: boolean,
): Promise<PresentedRule> {
  const row = await changeDomain(app, domain.id, async (tx) => {
    await findRule(tx, domain.id, type, id);
    if (enabled) await checkPlan(tx, domain.id, type, false);
    const [updated] = await tx
      .update(rules)
      .set({ enabled, updatedAt: new Date() })
      .where(eq(rules.id, id))
      .returning();
    return { value: updated, change: { upsertedRules: [id] } };
  });
  return presentRule(row);
}

/** Gap between priorities assigned by reorder, so a rule can later be put between two others without a reorder. */
export const REORDER_STEP = 10;

/** Reorder: `ids` lists every rule of the type exactly once, first evaluated first; priorities become 10, 20, 30… */
export async function reorderRules(
  app: FastifyInstance,
  domain: DomainRow,
  type: StoredRuleType,
  ids: number[],
): Promise<PresentedRule[]> {
  await changeDomain(app, domain.id, async (tx) => {
    const rows = await tx
      .select({ id: rules.id })
      .from(rules)
      .where(and(eq(rules.domainId, domain.id), eq(rules.type, type)));
    const have = new Set(rows.map((r) => r.id));
    const given = new Set(ids);
    if (given.size !== ids.length) throw new ApiError('CP_ERR_INVALID_INPUT', 'ids: each rule id may appear only once');
    const missing = [...have].filter((id) => !given.has(id));
    const unknown = ids.filter((id) => !have.has(id));
    if (unknown.length > 0)
      throw new ApiError(
        'CP_ERR_INVALID_INPUT',
        `ids: ${unknown.join(', ')} ${unknown.length === 1 ? 'is not a' : 'are not'} ${type} rule${unknown.length === 1 ? '' : 's'} of this domain`,
      );
    if (missing.length > 0)
      throw new ApiError(
        'CP_ERR_INVALID_INPUT',
        `ids: must list every ${type} rule of the domain; missing ${missing.join(', ')}`,
      );
    const now = new Date();
    for (const [i, id] of ids.entries())
      await tx
        .update(rules)
        .set({ priority: (i + 1) * REORDER_STEP, updatedAt: now })
        .where(eq(rules.id, id));
    return { value: undefined, change: { upsertedRules: ids } };
  });
  return listRules(app, domain.id, type);
}
