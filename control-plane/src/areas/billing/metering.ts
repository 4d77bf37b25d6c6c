// Metered traffic: bytes over the plan's allowance (max_traffic_gb per quota window) at the plan's price per started
// GB (10^9 bytes, as CDNs bill); billed by a `period` invoice when the window closes.
import type { FastifyInstance } from 'fastify';
import { applyOverrides } from '../../plans/entitlements.js';
import { billableBytes } from '../analytics/usage.js';
import { quotaWindow, type SubscriptionView } from './present.js';

export const GB = 1_000_000_000;

export interface MeteredCharge {
  includedBytes: number;
  overageBytes: number;
  /** Started GB over the allowance. */
  overageGb: number;
  priceRialsPerGb: number;
  rials: number;
}

export function meteredCharge(view: SubscriptionView, usedBytes: number): MeteredCharge {
  const features = applyOverrides(view.plan.slug, view.plan.features, view.sub.overrides);
  const includedBytes = features.max_traffic_gb * GB;
  const overageBytes = Math.max(0, usedBytes - includedBytes);
  const overageGb = Math.ceil(overageBytes / GB);
  const priceRialsPerGb = view.plan.trafficPriceRialsPerGb;
  return { includedBytes, overageBytes, overageGb, priceRialsPerGb, rials: overageGb * priceRialsPerGb };
}

/** The current window's usage of a live subscription; a store that cannot answer counts 0 (logged). */
export async function currentUsage(app: FastifyInstance, view: SubscriptionView, now = new Date()) {
  const window = quotaWindow(view.sub.startedAt, view.sub.quotaResetDays, app.config.billing.dayMs, now);
  const usedBytes = await billableBytes(app, view.sub.domainId, window.start, now).catch((err: unknown) => {
    app.log.warn({ err, domainId: view.sub.domainId }, 'billable bytes: analytics store did not answer');
    return 0;
  });
  return { window, usedBytes, charge: meteredCharge(view, usedBytes) };
}

export function presentUsage(view: SubscriptionView, u: Awaited<ReturnType<typeof currentUsage>>) {
  return {
    domain_id: view.sub.domainId,
    domain_name: view.sub.domainName,
    subscription_id: view.sub.id,
    plan: view.plan.slug,
    quota_period_start: u.window.start.toISOString(),
    quota_period_end: u.window.end.toISOString(),
    used_bytes: u.usedBytes,
    included_bytes: u.charge.includedBytes,
    overage_bytes: u.charge.overageBytes,
    traffic_price_rials_per_gb: u.charge.priceRialsPerGb,
    estimated_overage_rials: u.charge.rials,
  };
}
