// Billing writes that support and payments make (the admin command line): plans and terms, top-ups, manual
// invoices, subscriptions. Each is one transaction; a subscription change runs through changeDomain (the plan decides
// what nodes enforce) and records its lifecycle workflow in the outbox.
import { randomBytes, randomInt } from 'node:crypto';
import { and, eq, inArray } from 'drizzle-orm';
import type { Db, Tx } from '../../db/index.js';
import {
  billingProfiles,
  payments,
  planTerms,
  plans,
  subscriptions,
  type CancelReason,
  type InvoiceStatus,
} from '../../db/schema.js';
import { changeDomain, type DomainRow, type WriteTarget } from '../../config-log/index.js';
import { ApiError } from '../../errors.js';
import { FREE_PLAN_SLUG, LIVE_STATUSES } from '../../plans/entitlements.js';
import { cancelSubscriptions, planBySlug } from '../../plans/subscriptions.js';
import type { BillingConfig } from './config.js';
import { issueInvoice, MAX_RIALS, type InvoiceItemInput } from './invoices.js';
import { credit, debit, linkInvoice } from './wallet.js';
import { lifecycleNudge, lifecycleStarts } from './lifecycle-starts.js';
import { payerOf } from './store.js';
import { enqueueWorkflows } from '../../workflow-outbox/outbox.js';
import { notify } from '../notifications/store.js';

export type SubscriptionRow = typeof subscriptions.$inferSelect;
export type PlanRow = typeof plans.$inferSelect;
export type PlanTermRow = typeof planTerms.$inferSelect;

function money(n: number, what: string, min = 0): number {
  if (!Number.isSafeInteger(n) || n < min || n > MAX_RIALS)
    throw new ApiError(
      'CP_ERR_INVALID_INPUT',
      `${what} must be an integer from ${min} to ${MAX_RIALS} rials, got ${n}`,
    );
  return n;
}

/** A new plan whose features are copied from `like` (support edits them with plan overrides per domain). */
export async function createPlan(
  db: Db,
  p: { slug: string; name: string; priceRials: number; trafficPriceRialsPerGb: number; like: string },
): Promise<PlanRow> {
  if (!/^[a-z][a-z0-9-]{0,31}$/.test(p.slug))
    throw new ApiError(
      'CP_ERR_INVALID_INPUT',
      `plan slug must be 1-32 lower-case letters, digits or -, got "${p.slug}"`,
    );
  const base = await planBySlug(db, p.like);
  const [row] = await db
    .insert(plans)
    .values({
      slug: p.slug,
      name: p.name,
      priceRials: money(p.priceRials, 'price'),
      trafficPriceRialsPerGb: money(p.trafficPriceRialsPerGb, 'traffic price'),
      features: base.features,
    })
    .onConflictDoNothing()
    .returning();
  if (!row) throw new ApiError('CP_ERR_CONFLICT', `plan ${p.slug} already exists`);
  return row;
}

export async function createPlanTerm(
  db: Db,
  planSlug: string,
  t: { name: string; durationDays: number; priceRials: number; quotaResetDays: number },
): Promise<PlanTermRow> {
  const plan = await planBySlug(db, planSlug);
  if (!Number.isInteger(t.durationDays) || t.durationDays < 1 || t.durationDays > 3660)
    throw new ApiError('CP_ERR_INVALID_INPUT', `duration must be 1 to 3660 days, got ${t.durationDays}`);
  if (!Number.isInteger(t.quotaResetDays) || t.quotaResetDays < 1 || t.quotaResetDays > 366)
    throw new ApiError('CP_ERR_INVALID_INPUT', `quota reset must be 1 to 366 days, got ${t.quotaResetDays}`);
  const [row] = await db
    .insert(planTerms)
    .values({
      planId: plan.id,
      name: t.name,
      durationDays: t.durationDays,
      priceRials: money(t.priceRials, 'price'),
      quotaResetDays: t.quotaResetDays,
    })
    .returning();
  return row;
}

export async function setBillingProfile(
  db: Db,
  userId: number,
  p: { phoneNumber?: string; address?: string; birthDate?: string | null },
): Promise<void> {
  if (p.birthDate && !/^\d{4}-\d{2}-\d{2}$/.test(p.birthDate))
    throw new ApiError('CP_ERR_INVALID_INPUT', `birth date must be YYYY-MM-DD, got "${p.birthDate}"`);
  for (const [k, v] of Object.entries(p))
    if (typeof v === 'string' && v.length > 500)
      throw new ApiError('CP_ERR_INVALID_INPUT', `${k} must be at most 500 characters`);
  await db
    .insert(billingProfiles)
    .values({ userId, ...p })
    .onConflictDoUpdate({ target: billingProfiles.userId, set: { ...p, updatedAt: new Date() } });
}

/**
 * A wallet top-up as the payment gateway reports it: the payment, its `topup` invoice (no VAT) and, once paid, the
 * credit. A pending payment's invoice is unpaid, a failed one's cancelled.
 */
export async function topUp(
  db: Db,
  cfg: BillingConfig,
  userId: number,
  amount: number,
  opts: { status: 'paid' | 'pending' | 'failed'; gateway: string; sandbox: boolean },
) {
  money(amount, 'amount', 1);
  return db.transaction(async (tx) => {
    const now = new Date();
    const paid = opts.status === 'paid';
    const [payment] = await tx
      .insert(payments)
      .values({
        userId,
        amountRials: amount,
        status: opts.status,
        gateway: opts.gateway,
        authority: `A${randomBytes(18).toString('hex').toUpperCase()}`,
        refCode: paid ? '100' : opts.status === 'failed' ? '-51' : '',
        refId: paid ? String(randomInt(100_000_000, 999_999_999)) : '',
        purpose: 'topup',
        description: 'Wallet top-up',
        sandbox: opts.sandbox,
        paidAt: paid ? now : null,
      })
      .returning();
    const status: InvoiceStatus = paid ? 'paid' : opts.status === 'failed' ? 'cancelled' : 'unpaid';
    const invoice = await issueInvoice(
      tx,
      {
        userId,
        kind: 'topup',
        status,
        paymentId: payment.id,
        items: [{ description: 'Wallet top-up', quantity: 1, unitPriceRials: amount }],
        issuedAt: now,
      },
      cfg.vatPercent,
    );
    const transaction = paid
      ? await credit(tx, userId, amount, {
          kind: 'topup',
          description: 'Wallet top-up',
          invoiceId: invoice.id,
          paymentId: payment.id,
        })
      : null;
    if (paid) {
      // Subscriptions in grace that renew from this wallet try again at once.
      const waiting = await tx
        .select({ id: subscriptions.id })
        .from(subscriptions)
        .where(
          and(eq(subscriptions.userId, userId), eq(subscriptions.status, 'grace'), eq(subscriptions.autoRenew, true)),
        );
      await enqueueWorkflows(
        tx,
        waiting.map((w) => lifecycleNudge(w.id)),
      );
    }
    return { payment, invoice, transaction };
  });
}

/** An invoice issued by support (`manual`, taxed), paid or not. */
export async function manualInvoice(
  db: Db,
  cfg: BillingConfig,
  userId: number,
  opts: {
    items: InvoiceItemInput[];
    domain?: DomainRow;
    notes?: string;
    issuedAt?: Date;
    status: 'paid' | 'unpaid';
  },
) {
  if ((opts.notes ?? '').length > 2000)
    throw new ApiError('CP_ERR_INVALID_INPUT', 'notes must be at most 2000 characters');
  return db.transaction((tx) =>
    issueInvoice(
      tx,
      {
        userId,
        kind: 'manual',
        status: opts.status,
        items: opts.items,
        domainId: opts.domain?.id ?? null,
        domainName: opts.domain?.name ?? '',
        notes: opts.notes,
        issuedAt: opts.issuedAt,
      },
      cfg.vatPercent,
    ),
  );
}

export async function termById(tx: Tx | Db, id: number): Promise<PlanTermRow> {
  const [term] = await tx.select().from(planTerms).where(eq(planTerms.id, id));
  if (!term) throw new ApiError('CP_ERR_NOT_FOUND', `no plan term with id ${id}`);
  return term;
}

/**
 * Charges a term from the payer's wallet and issues its paid `subscription` invoice; null (nothing charged, nothing
 * issued) when the balance does not cover price + VAT.
 */
export async function chargeTerm(
  tx: Tx,
  cfg: BillingConfig,
  sub: SubscriptionRow,
  plan: PlanRow,
  term: PlanTermRow,
  what: 'purchase' | 'renewal',
  now = new Date(),
) {
  const items = [
    {
      description: `${plan.name} plan, ${term.name} (${what}), ${sub.domainName}`,
      quantity: 1,
      unitPriceRials: term.priceRials,
    },
  ];
  const total = term.priceRials + Math.floor((term.priceRials * cfg.vatPercent + 50) / 100);
  let transaction = null;
  if (total > 0) {
    transaction = await debit(tx, sub.userId, total, { kind: 'charge', description: items[0].description });
    if (!transaction) return null;
  }
  const invoice = await issueInvoice(
    tx,
    {
      userId: sub.userId,
      kind: 'subscription',
      status: 'paid',
      domainId: sub.domainId,
      domainName: sub.domainName,
      subscriptionId: sub.id,
      items,
      issuedAt: now,
    },
    cfg.vatPercent,
  );
  if (transaction) await linkInvoice(tx, transaction.id, invoice.id);
  return invoice;
}

export interface NewSubscription {
  planSlug: string;
  termId?: number;
  trial?: boolean;
  autoRenew?: boolean;
  /** Issue the purchase invoice unpaid instead of charging the wallet (support collects the money another way). */
  unpaid?: boolean;
}

/**
 * Gives a domain a new subscription: the live one is cancelled (`plan_switch`), the new one starts now for its term
 * (a trial without a term lasts BILLING_TRIAL_DAYS), the term is charged from the payer's wallet (the nominated
 * billing member, else the owner; 400 when the balance is short) and invoiced, and its lifecycle workflow is queued.
 */
export async function createSubscription(
  target: WriteTarget,
  cfg: BillingConfig,
  domainId: number,
  s: NewSubscription,
): Promise<{ subscription: SubscriptionRow; invoiceNumber: string | null }> {
  return changeDomain(target, domainId, async (tx, domain) => {
    const plan = await planBySlug(tx, s.planSlug);
    const term = s.termId !== undefined ? await termById(tx, s.termId) : null;
    if (term && term.planId !== plan.id)
      throw new ApiError('CP_ERR_INVALID_INPUT', `plan term ${term.id} belongs to another plan`);
    if (!term && !s.trial && plan.priceRials > 0)
      throw new ApiError('CP_ERR_INVALID_INPUT', `plan ${plan.slug} is paid: name a plan term (or give a trial)`);
    const now = new Date();
    const days = term ? term.durationDays : s.trial ? cfg.trialDays : null;
    await cancelSubscriptions(tx, domain.id, 'plan_switch');
    const [sub] = await tx
      .insert(subscriptions)
      .values({
        domainId: domain.id,
        domainName: domain.name,
        userId: (await payerOf(tx, domain.id)) ?? domain.ownerId,
        planId: plan.id,
        planTermId: term?.id ?? null,
        status: 'active',
        isTrial: s.trial === true,
        autoRenew: s.autoRenew === true && !s.trial,
        quotaResetDays: term?.quotaResetDays ?? 30,
        startedAt: now,
        expiresAt: days === null ? null : new Date(now.getTime() + days * cfg.dayMs),
      })
      .returning();
    let invoiceNumber: string | null = null;
    if (term && !s.trial) {
      if (s.unpaid) {
        const inv = await issueInvoice(
          tx,
          {
            userId: sub.userId,
            kind: 'subscription',
            status: 'unpaid',
            domainId: domain.id,
            domainName: domain.name,
            subscriptionId: sub.id,
            items: [
              {
                description: `${plan.name} plan, ${term.name} (purchase), ${domain.name}`,
                quantity: 1,
                unitPriceRials: term.priceRials,
              },
            ],
            issuedAt: now,
          },
          cfg.vatPercent,
        );
        invoiceNumber = inv.number;
      } else {
        const inv = await chargeTerm(tx, cfg, sub, plan, term, 'purchase', now);
        if (!inv)
          throw new ApiError(
            'CP_ERR_INVALID_INPUT',
            `the wallet of user ${sub.userId} does not cover ${plan.name} ${term.name} (price ${term.priceRials} rials + VAT); top it up or pass --unpaid`,
          );
        invoiceNumber = inv.number;
      }
    }
    await notify(tx, {
      userId: sub.userId,
      category: 'billing',
      kind: 'billing.subscribed',
      title: `${domain.name} is on ${plan.name}${s.trial ? ' (trial)' : term ? `, ${term.name}` : ''}`,
      domain: domain.name,
      data: { subscription_id: sub.id, ...(invoiceNumber ? { invoice_number: invoiceNumber } : {}) },
    });
    return {
      value: { subscription: sub, invoiceNumber },
      change: { whole: true },
      workflows: lifecycleStarts(sub, plan),
    };
  });
}

/** Turns renewal from the wallet on or off for the domain's live subscription (its lifecycle judges again). */
export async function setAutoRenew(db: Db, domainId: number, on: boolean): Promise<SubscriptionRow> {
  return db.transaction(async (tx) => {
    const [row] = await tx
      .update(subscriptions)
      .set({ autoRenew: on, updatedAt: new Date() })
      .where(and(eq(subscriptions.domainId, domainId), inArray(subscriptions.status, LIVE_STATUSES)))
      .returning();
    if (!row) throw new ApiError('CP_ERR_NOT_FOUND', 'the domain has no active subscription');
    if (row.status === 'grace') await enqueueWorkflows(tx, [lifecycleNudge(row.id)]);
    return row;
  });
}

/** A system cancellation of the domain's live subscription (spec reasons); the domain falls back to the free plan. */
export async function cancelLiveSubscription(
  target: WriteTarget,
  domainId: number,
  reason: CancelReason,
): Promise<void> {
  await changeDomain(target, domainId, async (tx, domain) => {
    const [live] = await tx
      .select()
      .from(subscriptions)
      .where(and(eq(subscriptions.domainId, domainId), inArray(subscriptions.status, LIVE_STATUSES)));
    if (!live) throw new ApiError('CP_ERR_NOT_FOUND', 'the domain has no active subscription');
    const free = await planBySlug(tx, FREE_PLAN_SLUG);
    if (live.planId === free.id && !live.expiresAt)
      throw new ApiError('CP_ERR_CONFLICT', `${domain.name} is on the free plan, which is not cancelled`);
    await cancelSubscriptions(tx, domainId, reason);
    await notify(tx, {
      userId: live.userId,
      category: 'billing',
      kind: 'billing.cancelled',
      title: `${domain.name}: the subscription was cancelled (${reason}); the domain is on the free plan`,
      domain: domain.name,
      data: { subscription_id: live.id, cancel_reason: reason },
    });
    await tx
      .insert(subscriptions)
      .values({ domainId, domainName: domain.name, userId: domain.ownerId, planId: free.id, status: 'active' });
    return { value: undefined, change: { whole: true } };
  });
}
