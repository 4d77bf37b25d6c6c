// GET /domains/{domain}/subscription (spec Billing reads): the live subscription with effective features, quota window and overrides.
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type, type TSchema } from '@sinclair/typebox';
import { and, eq, inArray } from 'drizzle-orm';
import { plans, subscriptions } from '../../db/schema.js';
import { loadDomain } from '../../auth/domain-access.js';
import { ApiError } from '../../errors.js';
import { applyOverrides, BOOLEAN_FIELDS, LIMIT_FIELDS, LIVE_STATUSES } from '../../plans/entitlements.js';
import { errorResponses, Nullable } from '../../openapi/schemas.js';
import { DomainParams } from './schemas.js';
import { billableBytes } from '../analytics/usage.js';

/** Allowances reset every 30 days from the start of the term (frozen at purchase; spec quota_reset_days). */
export const QUOTA_RESET_DAYS = 30;
const DAY_MS = 86_400_000;
const Timestamp = Type.String({ format: 'date-time' });

const featureProps: Record<string, TSchema> = { plan: Type.String() };
const overrideProps: Record<string, TSchema> = {};
for (const f of LIMIT_FIELDS) {
  featureProps[f] = Type.Integer();
  overrideProps[`override_${f}`] = Type.Optional(Type.Integer());
}
for (const f of BOOLEAN_FIELDS) {
  featureProps[f] = Type.Boolean();
  overrideProps[`override_${f}`] = Type.Optional(Type.Boolean());
}
featureProps.disabled_rule_types = Type.Array(Type.String());
overrideProps.override_disabled_rule_types = Type.Optional(
  Type.String({ description: 'A JSON array; "[]" lifts every restriction' }),
);

export const EffectiveFeatures = Type.Object(featureProps, { title: 'EffectiveFeatures' });

export const Subscription = Type.Object(
  {
    id: Type.Integer(),
    user_id: Type.Integer(),
    domain_id: Type.Integer(),
    domain_name: Type.String(),
    plan_id: Type.Integer(),
    plan_term_id: Nullable(Type.Integer()),
    plan: Type.Object({}, { additionalProperties: true }),
    plan_term: Nullable(Type.Object({}, { additionalProperties: true })),
    status: Type.String(),
    started_at: Timestamp,
    expires_at: Nullable(Timestamp),
    grace_until: Nullable(Timestamp),
    auto_renew: Type.Boolean(),
    quota_reset_days: Type.Integer(),
    is_trial: Type.Boolean(),
    cancelled_at: Type.Optional(Timestamp),
    cancel_reason: Type.Optional(
      Type.String({
        description: 'System cancellations only: domain_deleted, recycled_domain_id, plan_switch, trial_ended',
      }),
    ),
    created_at: Timestamp,
    updated_at: Timestamp,
    effective_features: EffectiveFeatures,
    quota_period_start: Timestamp,
    quota_period_end: Timestamp,
    quota_period_used_bytes: Type.Integer(),
    ...overrideProps,
  },
  { title: 'Subscription' },
);

/** The allowance window containing `now`: whole QUOTA_RESET_DAYS periods counted from the term start. */
export function quotaWindow(startedAt: Date, now = new Date()): { start: Date; end: Date } {
  const period = QUOTA_RESET_DAYS * DAY_MS;
  const n = Math.max(0, Math.floor((now.getTime() - startedAt.getTime()) / period));
  const start = new Date(startedAt.getTime() + n * period);
  return { start, end: new Date(start.getTime() + period) };
}

export default async function subscriptionRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  app.get(
    '/domains/:domain/subscription',
    {
      schema: {
        summary: "The domain's current subscription with effective features and quota window",
        tags: ['billing'],
        params: DomainParams,
        response: { 200: Subscription, ...errorResponses(403, 404) },
      },
    },
    async (request) => {
      const { domain } = await loadDomain(request, request.params.domain, 'domain.view');
      const [row] = await app.db
        .select({ sub: subscriptions, plan: plans })
        .from(subscriptions)
        .innerJoin(plans, eq(plans.id, subscriptions.planId))
        .where(and(eq(subscriptions.domainId, domain.id), inArray(subscriptions.status, LIVE_STATUSES)))
        .limit(1);
      if (!row) throw new ApiError('CP_ERR_NOT_FOUND', 'the domain has no active subscription');
      const { sub, plan } = row;
      const window = quotaWindow(sub.startedAt);
      // Billable bytes of the window so far, from the analytics store; a store that cannot answer leaves it at 0.
      const used = await billableBytes(app, domain.id, window.start).catch((err: unknown) => {
        request.log.warn({ err }, 'quota_period_used_bytes: analytics store did not answer');
        return 0;
      });
      const overrides: Record<string, unknown> = {};
      for (const [field, value] of Object.entries(sub.overrides)) {
        if (value !== null && value !== undefined) overrides[`override_${field}`] = value;
      }
      return {
        id: sub.id,
        user_id: sub.userId,
        domain_id: domain.id,
        domain_name: sub.domainName,
        plan_id: plan.id,
        plan_term_id: null,
        plan: { id: plan.id, slug: plan.slug, name: plan.name, price_rials: plan.priceRials, features: plan.features },
        plan_term: null,
        status: sub.status,
        started_at: sub.startedAt.toISOString(),
        expires_at: sub.expiresAt?.toISOString() ?? null,
        grace_until: null,
        auto_renew: sub.autoRenew,
        quota_reset_days: QUOTA_RESET_DAYS,
        is_trial: sub.isTrial,
        ...(sub.cancelledAt ? { cancelled_at: sub.cancelledAt.toISOString() } : {}),
        ...(sub.cancelReason ? { cancel_reason: sub.cancelReason } : {}),
        created_at: sub.createdAt.toISOString(),
        updated_at: sub.updatedAt.toISOString(),
        effective_features: applyOverrides(plan.slug, plan.features, sub.overrides),
        quota_period_start: window.start.toISOString(),
        quota_period_end: window.end.toISOString(),
        quota_period_used_bytes: used,
        ...overrides,
      };
    },
  );
}
