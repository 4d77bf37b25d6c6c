// Domain subscriptions: the free one every new domain gets, plan changes and support-set overrides (admin CLI).
import { and, eq, inArray } from 'drizzle-orm';
import type { Db, Tx } from '../db/index.js';
import { plans, subscriptions, type CancelReason } from '../db/schema.js';
import { ApiError } from '../errors.js';
import { BOOLEAN_FIELDS, FREE_PLAN_SLUG, LIMIT_FIELDS, LIVE_STATUSES, type OverridableField } from './entitlements.js';

export async function planBySlug(db: Db | Tx, slug: string) {
  const [plan] = await db.select().from(plans).where(eq(plans.slug, slug)).limit(1);
  if (!plan) throw new ApiError('CP_ERR_INVALID_INPUT', `unknown plan "${slug}"`);
  return plan;
}

export async function createFreeSubscription(
  tx: Tx,
  domain: { id: number; name: string },
  userId: number,
): Promise<void> {
  const plan = await planBySlug(tx, FREE_PLAN_SLUG);
  await tx
    .insert(subscriptions)
    .values({ domainId: domain.id, domainName: domain.name, userId, planId: plan.id, status: 'active' });
}

/** A system cancellation (spec Subscription states): the domain's live subscriptions become `cancelled`, rows kept. */
export async function cancelSubscriptions(tx: Tx, domainId: number, reason: CancelReason): Promise<void> {
  const now = new Date();
  await tx
    .update(subscriptions)
    .set({ status: 'cancelled', cancelledAt: now, cancelReason: reason, autoRenew: false, updatedAt: now })
    .where(and(eq(subscriptions.domainId, domainId), inArray(subscriptions.status, LIVE_STATUSES)));
}

/** Moves the domain's live subscription to another plan (overrides are kept). Returns the plan slug. */
export async function setPlan(db: Db, domainId: number, slug: string): Promise<string> {
  const plan = await planBySlug(db, slug);
  const rows = await db
    .update(subscriptions)
    .set({ planId: plan.id, updatedAt: new Date() })
    .where(and(eq(subscriptions.domainId, domainId), inArray(subscriptions.status, LIVE_STATUSES)))
    .returning({ id: subscriptions.id });
  if (rows.length === 0) throw new ApiError('CP_ERR_NOT_FOUND', 'the domain has no active subscription');
  return plan.slug;
}

const OVERRIDABLE: readonly string[] = [...LIMIT_FIELDS, ...BOOLEAN_FIELDS, 'disabled_rule_types'];

/** The plan field an override name refers to (`override_max_records` or `max_records`), or ApiError 400. */
export function overridableField(field: string): OverridableField {
  const name = field.replace(/^override_/, '');
  if (!OVERRIDABLE.includes(name))
    throw new ApiError('CP_ERR_INVALID_INPUT', `unknown plan field "${field}"; overridable: ${OVERRIDABLE.join(', ')}`);
  return name as OverridableField;
}

/** Parses an override value given as text (CLI): integers, booleans, or a JSON array for disabled_rule_types. */
export function parseOverride(
  field: string,
  raw: string,
): { field: OverridableField; value: number | boolean | string } {
  const name = overridableField(field);
  if ((LIMIT_FIELDS as readonly string[]).includes(name)) {
    const n = Number(raw);
    if (!Number.isInteger(n) || n < 0)
      throw new ApiError('CP_ERR_INVALID_INPUT', `${name} takes a non-negative integer, got "${raw}"`);
    return { field: name as OverridableField, value: n };
  }
  if ((BOOLEAN_FIELDS as readonly string[]).includes(name)) {
    if (raw !== 'true' && raw !== 'false')
      throw new ApiError('CP_ERR_INVALID_INPUT', `${name} takes true or false, got "${raw}"`);
    return { field: name as OverridableField, value: raw === 'true' };
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    parsed = undefined;
  }
  if (!Array.isArray(parsed) || parsed.some((t) => typeof t !== 'string')) {
    throw new ApiError(
      'CP_ERR_INVALID_INPUT',
      "disabled_rule_types takes a JSON array of rule types, e.g. '[\"waf\"]' ('[]' lifts every restriction)",
    );
  }
  return { field: 'disabled_rule_types', value: JSON.stringify(parsed) };
}

/** Sets (value) or clears (null) one override on the domain's live subscription. */
export async function setOverride(
  db: Db,
  domainId: number,
  field: OverridableField,
  value: number | boolean | string | null,
): Promise<Record<string, unknown>> {
  return db.transaction(async (tx) => {
    const [sub] = await tx
      .select()
      .from(subscriptions)
      .where(and(eq(subscriptions.domainId, domainId), inArray(subscriptions.status, LIVE_STATUSES)))
      .limit(1)
      .for('update');
    if (!sub) throw new ApiError('CP_ERR_NOT_FOUND', 'the domain has no active subscription');
    const overrides = { ...sub.overrides };
    if (value === null) delete overrides[field];
    else overrides[field] = value;
    await tx.update(subscriptions).set({ overrides, updatedAt: new Date() }).where(eq(subscriptions.id, sub.id));
    return overrides;
  });
}
