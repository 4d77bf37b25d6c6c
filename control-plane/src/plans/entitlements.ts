// A domain's effective plan features: its active subscription's plan with the support-set overrides applied.
import { and, eq, inArray, sql, type SQL } from 'drizzle-orm';
import type { Db, Tx } from '../db/index.js';
import { plans, subscriptions } from '../db/schema.js';
import { ApiError } from '../errors.js';

export const LIMIT_FIELDS = [
  'max_records',
  'max_traffic_gb',
  'max_rules_per_set',
  'max_gateway_requests_30d',
  'max_gateway_gb_30d',
  'max_cache_cap_mb',
  'max_cache_disk_gb',
  'max_cache_ttl_days',
  'max_email_rules',
  'max_email_forwards_per_day',
  'max_email_sends_per_day',
  'max_custom_rules',
] as const;
export const BOOLEAN_FIELDS = [
  'gateways_enabled',
  'logs_enabled',
  'monitoring_enabled',
  'rules_enabled',
  'cache_purge_enabled',
  'custom_ssl_enabled',
  'ws_enabled',
  'host_header_edit_enabled',
  'uptime_sms_enabled',
  'dedicated_support_enabled',
  'shield_enabled',
  'bot_cache_enabled',
  'under_attack_allowed',
  'email_routing_enabled',
  'email_sending_enabled',
  // Not named by the spec's override list, but gated features of ours (spec Global conventions §7).
  'analytics_enabled',
  'waf_enabled',
] as const;
export type LimitField = (typeof LIMIT_FIELDS)[number];
export type BooleanField = (typeof BOOLEAN_FIELDS)[number];
export type OverridableField = LimitField | BooleanField | 'disabled_rule_types';

export type EffectiveFeatures = Record<LimitField, number> &
  Record<BooleanField, boolean> & {
    disabled_rule_types: string[];
    /** Slug of the plan the features come from. */
    plan: string;
  };

export const FREE_PLAN_SLUG = 'free';
/** Subscription statuses under which the plan keeps working. */
export const LIVE_STATUSES = ['active', 'grace'];

/** Applies overrides (stored under the plain plan field name) to a plan's features. */
export function applyOverrides(
  planSlug: string,
  features: Record<string, unknown>,
  overrides: Record<string, unknown>,
): EffectiveFeatures {
  const out: Record<string, unknown> = { ...features };
  for (const [field, value] of Object.entries(overrides)) {
    if (value === null || value === undefined) continue;
    out[field] = field === 'disabled_rule_types' && typeof value === 'string' ? JSON.parse(value) : value;
  }
  for (const f of LIMIT_FIELDS) out[f] = Number(out[f] ?? 0);
  for (const f of BOOLEAN_FIELDS) out[f] = out[f] === true;
  out.disabled_rule_types = Array.isArray(out.disabled_rule_types) ? out.disabled_rule_types.map(String) : [];
  out.plan = planSlug;
  return out as EffectiveFeatures;
}

/** A domain's live plan as stored: what applyOverrides takes. */
export interface LivePlan {
  slug: string;
  features: Record<string, unknown>;
  overrides: Record<string, unknown>;
}

/** The domain's live plan as one JSON value (null without one), for a statement that reads more in the same trip. */
export function livePlanJson(domainId: number): SQL {
  return sql`(SELECT json_build_object('slug', p.slug, 'features', p.features, 'overrides', s.overrides)
    FROM subscriptions s JOIN plans p ON p.id = s.plan_id
    WHERE s.domain_id = ${domainId} AND s.status IN (${sql.join(
      LIVE_STATUSES.map((status) => sql`${status}`),
      sql`, `,
    )}) LIMIT 1)`;
}

/** The effective features of a live plan read by livePlanJson; without one, the free plan's. */
export async function featuresOf(db: Db | Tx, plan: LivePlan | null): Promise<EffectiveFeatures> {
  if (plan) return applyOverrides(plan.slug, plan.features, plan.overrides);
  const [free] = await db.select().from(plans).where(eq(plans.slug, FREE_PLAN_SLUG)).limit(1);
  return applyOverrides(FREE_PLAN_SLUG, free?.features ?? {}, {});
}

export async function effectiveFeatures(db: Db | Tx, domainId: number): Promise<EffectiveFeatures> {
  const [row] = await db
    .select({ slug: plans.slug, features: plans.features, overrides: subscriptions.overrides })
    .from(subscriptions)
    .innerJoin(plans, eq(plans.id, subscriptions.planId))
    .where(and(eq(subscriptions.domainId, domainId), inArray(subscriptions.status, LIVE_STATUSES)))
    .limit(1);
  return featuresOf(db, row ?? null);
}

/** ApiError 403 naming the missing feature unless the plan includes it. */
export function requireFeature(features: EffectiveFeatures, featureName: BooleanField): void {
  if (features[featureName] !== true) {
    throw new ApiError(
      'CP_ERR_PLAN_LIMIT',
      `your plan (${features.plan}) does not include the ${featureName} feature`,
      {
        feature: featureName,
      },
    );
  }
}

/** ApiError 403 when a rule type is disabled on the plan. */
export function requireRuleType(features: EffectiveFeatures, ruleType: string): void {
  if (features.disabled_rule_types.includes(ruleType)) {
    throw new ApiError('CP_ERR_PLAN_LIMIT', `your plan (${features.plan}) does not include rules of type ${ruleType}`, {
      feature: `rule_type:${ruleType}`,
    });
  }
}
