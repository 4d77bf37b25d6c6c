// Billing rows → API bodies (money as integer rials, timestamps ISO 8601 UTC).
import type { invoiceItems, invoices, payments, walletTransactions } from '../../db/schema.js';
import type { Static } from '@sinclair/typebox';
import { applyOverrides } from '../../plans/entitlements.js';
import type { Subscription } from './schemas.js';
import type { PlanRow, PlanTermRow, SubscriptionRow } from './service.js';

type InvoiceRow = typeof invoices.$inferSelect;
type ItemRow = typeof invoiceItems.$inferSelect;
type PaymentRow = typeof payments.$inferSelect;
type TransactionRow = typeof walletTransactions.$inferSelect;

const iso = (d: Date | null | undefined) => (d ? d.toISOString() : null);

/** The allowance window containing `now`: whole quota_reset_days periods counted from the term start. */
export function quotaWindow(
  startedAt: Date,
  resetDays: number,
  dayMs: number,
  now = new Date(),
): { start: Date; end: Date } {
  const period = resetDays * dayMs;
  const n = Math.max(0, Math.floor((now.getTime() - startedAt.getTime()) / period));
  const start = new Date(startedAt.getTime() + n * period);
  return { start, end: new Date(start.getTime() + period) };
}

export function presentPlan(plan: PlanRow) {
  return {
    id: plan.id,
    slug: plan.slug,
    name: plan.name,
    price_rials: plan.priceRials,
    traffic_price_rials_per_gb: plan.trafficPriceRialsPerGb,
    features: plan.features,
  };
}

export function presentTerm(term: PlanTermRow) {
  return {
    id: term.id,
    plan_id: term.planId,
    name: term.name,
    duration_days: term.durationDays,
    price_rials: term.priceRials,
    quota_reset_days: term.quotaResetDays,
  };
}

/** Support-set overrides, each `override_<field>`, only those set. */
export function presentOverrides(overrides: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [field, value] of Object.entries(overrides))
    if (value !== null && value !== undefined) out[`override_${field}`] = value;
  return out;
}

export interface SubscriptionView {
  sub: SubscriptionRow;
  plan: PlanRow;
  term: PlanTermRow | null;
}

/**
 * A subscription. `single`: with effective_features, and the quota window when it is active or in grace (spec
 * Subscription); `usedBytes` (the domain subscription read only) adds quota_period_used_bytes.
 */
export function presentSubscription(
  { sub, plan, term }: SubscriptionView,
  opts: { single?: { dayMs: number; now?: Date }; usedBytes?: number } = {},
) {
  const body: Record<string, unknown> = {
    id: sub.id,
    user_id: sub.userId,
    domain_id: sub.domainId,
    domain_name: sub.domainName,
    plan_id: plan.id,
    plan_term_id: sub.planTermId,
    plan: presentPlan(plan),
    plan_term: term ? presentTerm(term) : null,
    status: sub.status,
    started_at: sub.startedAt.toISOString(),
    expires_at: iso(sub.expiresAt),
    grace_until: iso(sub.graceUntil),
    auto_renew: sub.autoRenew,
    quota_reset_days: sub.quotaResetDays,
    is_trial: sub.isTrial,
    ...(sub.cancelledAt ? { cancelled_at: sub.cancelledAt.toISOString() } : {}),
    ...(sub.cancelReason ? { cancel_reason: sub.cancelReason } : {}),
    created_at: sub.createdAt.toISOString(),
    updated_at: sub.updatedAt.toISOString(),
  };
  if (opts.single) {
    body.effective_features = applyOverrides(plan.slug, plan.features, sub.overrides);
    if (sub.status === 'active' || sub.status === 'grace') {
      const w = quotaWindow(sub.startedAt, sub.quotaResetDays, opts.single.dayMs, opts.single.now);
      body.quota_period_start = w.start.toISOString();
      body.quota_period_end = w.end.toISOString();
      if (opts.usedBytes !== undefined) body.quota_period_used_bytes = opts.usedBytes;
    }
  }
  return { ...body, ...presentOverrides(sub.overrides) } as Static<typeof Subscription>;
}

export function presentInvoice(inv: InvoiceRow, items: readonly ItemRow[]) {
  return {
    id: inv.id,
    number: inv.number,
    user_id: inv.userId,
    domain_id: inv.domainId,
    subscription_id: inv.subscriptionId,
    payment_id: inv.paymentId,
    domain_name: inv.domainName,
    kind: inv.kind,
    status: inv.status,
    subtotal_rials: inv.subtotalRials,
    tax_rials: inv.taxRials,
    total_rials: inv.totalRials,
    tax_percent: inv.taxPercent,
    ...(inv.periodStart ? { period_start: inv.periodStart.toISOString() } : {}),
    ...(inv.periodEnd ? { period_end: inv.periodEnd.toISOString() } : {}),
    issued_at: inv.issuedAt.toISOString(),
    created_at: inv.createdAt.toISOString(),
    updated_at: inv.updatedAt.toISOString(),
    paid_at: iso(inv.paidAt),
    notes: inv.notes,
    items: items.map((i) => ({
      id: i.id,
      invoice_id: i.invoiceId,
      description: i.description,
      quantity: i.quantity,
      unit_price_rials: i.unitPriceRials,
      total_rials: i.totalRials,
    })),
  };
}

export function presentPayment(p: PaymentRow) {
  return {
    id: p.id,
    amount_rials: p.amountRials,
    status: p.status,
    gateway: p.gateway,
    authority: p.authority,
    ref_code: p.refCode,
    ref_id: p.refId,
    purpose: p.purpose,
    description: p.description,
    sandbox: p.sandbox,
    paid_at: iso(p.paidAt),
    created_at: p.createdAt.toISOString(),
    updated_at: p.updatedAt.toISOString(),
  };
}

export function presentTransaction(t: TransactionRow) {
  return {
    id: t.id,
    kind: t.kind,
    amount_rials: t.amountRials,
    balance_after_rials: t.balanceAfterRials,
    description: t.description,
    invoice_id: t.invoiceId,
    payment_id: t.paymentId,
    created_at: t.createdAt.toISOString(),
  };
}
