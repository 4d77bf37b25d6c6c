// The subscription lifecycle, judged here and driven by the `subscriptionLifecycle` workflow's timers: the worker
// asks `advance` when something is due, and this moves the subscription as far as the clock says, then names the
// next moment anything is due. Transitions (spec Subscription states):
//   trial, term over          → cancelled (trial_ended), the domain on the free plan, no grace
//   active, term over         → renewed from the wallet when auto_renew and the balance covers price + VAT (a paid
//                               `subscription` invoice), else grace until expires_at + BILLING_GRACE_DAYS
//   grace                     → renewed as soon as auto_renew and the balance allow (each advance tries)
//   grace, grace over         → expired, the domain on the free plan
//   each closed quota window  → a `period` invoice for the metered traffic over the allowance (none when there was
//                               none), paid from the wallet when it covers it, else left unpaid
import type { FastifyInstance } from 'fastify';
import { and, eq, sql } from 'drizzle-orm';
import type { Tx } from '../../db/index.js';
import { subscriptions } from '../../db/schema.js';
import { changeDomain } from '../../config-log/index.js';
import { isApiError } from '../../errors.js';
import { planBySlug } from '../../plans/subscriptions.js';
import { FREE_PLAN_SLUG } from '../../plans/entitlements.js';
import { billableBytes } from '../analytics/usage.js';
import { notify } from '../notifications/store.js';
import type { BillingConfig } from './config.js';
import { issueInvoice } from './invoices.js';
import { GB, meteredCharge } from './metering.js';
import { quotaWindow, type SubscriptionView } from './present.js';
import { chargeTerm, type SubscriptionRow } from './service.js';
import * as store from './store.js';
import { debit, linkInvoice } from './wallet.js';

/** Closed quota windows billed in one advance at most (a long outage of the worker catches up over several). */
const MAX_WINDOWS_PER_ADVANCE = 24;
/** Transitions in one advance at most (a renewal whose new term is already over renews again). */
const MAX_STEPS = 12;

export interface AdvanceResult {
  status: string;
  /** When the workflow should ask again (ms since the epoch); null: nothing more will ever be due. */
  next_at_ms: number | null;
}

const isLive = (s: string) => s === 'active' || s === 'grace';

/** Moves subscription `id` as far as `now` says; null when there is no such subscription. */
export async function advanceSubscription(
  app: FastifyInstance,
  id: number,
  now = new Date(),
): Promise<AdvanceResult | null> {
  const cfg = app.config.billing;
  let [view] = await store.subscriptionViews(app.db, eq(subscriptions.id, id));
  if (!view) return null;
  await billClosedWindows(app, view, now);
  for (let step = 0; step < MAX_STEPS && isLive(view.sub.status); step++) {
    const moved = await transition(app, cfg, view.sub.id, now);
    [view] = await store.subscriptionViews(app.db, eq(subscriptions.id, id));
    if (!moved) break;
  }
  return { status: view.sub.status, next_at_ms: nextDue(view, cfg, now) };
}

/** The next moment anything is due: the term's end, the grace's end, the current quota window's end if metered. */
export function nextDue(view: SubscriptionView, cfg: BillingConfig, now: Date): number | null {
  const { sub, plan } = view;
  if (!isLive(sub.status)) return null;
  const times: number[] = [];
  if (sub.status === 'active' && sub.expiresAt) times.push(sub.expiresAt.getTime());
  if (sub.status === 'grace' && sub.graceUntil) times.push(sub.graceUntil.getTime());
  if (plan.trafficPriceRialsPerGb > 0)
    times.push(quotaWindow(sub.startedAt, sub.quotaResetDays, cfg.dayMs, now).end.getTime());
  return times.length ? Math.min(...times) : null;
}

/**
 * Issues the period invoices of the quota windows that closed while the subscription was live and were not judged
 * yet (`metered_until`), oldest first. The bytes are read before the transaction (the analytics store is not
 * Postgres); the transaction re-checks `metered_until` under the row's lock, so a window is judged once.
 */
async function billClosedWindows(app: FastifyInstance, view: SubscriptionView, now: Date): Promise<void> {
  const { sub, plan } = view;
  if (plan.trafficPriceRialsPerGb <= 0 || !isLive(sub.status)) return;
  const period = sub.quotaResetDays * app.config.billing.dayMs;
  let start = sub.meteredUntil ?? sub.startedAt;
  for (let i = 0; i < MAX_WINDOWS_PER_ADVANCE; i++) {
    const end = new Date(start.getTime() + period);
    if (end.getTime() > now.getTime()) return;
    const used = await billableBytes(app, sub.domainId, start, end);
    const charge = meteredCharge(view, used);
    const windowStart = start;
    await app.db.transaction(async (tx) => {
      const [locked] = await tx.select().from(subscriptions).where(eq(subscriptions.id, sub.id)).for('update');
      if ((locked.meteredUntil?.getTime() ?? locked.startedAt.getTime()) !== windowStart.getTime()) return;
      const payer = (await store.payerOf(tx, locked.domainId)) ?? locked.userId;
      if (charge.rials > 0)
        await issuePeriodInvoice(tx, { ...locked, userId: payer }, windowStart, end, used, charge, plan.name);
      await tx.update(subscriptions).set({ meteredUntil: end }).where(eq(subscriptions.id, sub.id));
    });
    start = end;
  }
}

async function issuePeriodInvoice(
  tx: Tx,
  sub: SubscriptionRow,
  start: Date,
  end: Date,
  usedBytes: number,
  charge: ReturnType<typeof meteredCharge>,
  planName: string,
): Promise<void> {
  const description =
    `Traffic over the ${planName} allowance, ${sub.domainName}, ${start.toISOString()} to ${end.toISOString()}: ` +
    `${usedBytes} bytes used, ${charge.includedBytes / GB} GB included`;
  const paid = await debit(tx, sub.userId, charge.rials, { kind: 'charge', description });
  const invoice = await issueInvoice(
    tx,
    {
      userId: sub.userId,
      kind: 'period',
      status: paid ? 'paid' : 'unpaid',
      domainId: sub.domainId,
      domainName: sub.domainName,
      subscriptionId: sub.id,
      periodStart: start,
      periodEnd: end,
      items: [{ description, quantity: charge.overageGb, unitPriceRials: charge.priceRialsPerGb }],
    },
    0,
  );
  if (paid) await linkInvoice(tx, paid.id, invoice.id);
  await notify(tx, {
    userId: sub.userId,
    category: 'billing',
    kind: 'billing.period_statement',
    title: `Traffic statement ${invoice.number} for ${sub.domainName}: ${invoice.totalRials} rials${paid ? ', paid from your wallet' : ', unpaid'}`,
    domain: sub.domainName,
    data: { invoice_id: invoice.id, subscription_id: sub.id },
    dedupeKey: `period:${sub.id}:${start.getTime()}`,
  });
}

/**
 * One transition that is due at `now`, in the domain's write path (a plan change reaches the nodes whole); false
 * when nothing was due. A subscription whose domain is gone was cancelled with it: nothing to do.
 */
async function transition(app: FastifyInstance, cfg: BillingConfig, id: number, now: Date): Promise<boolean> {
  const [row] = await app.db.select().from(subscriptions).where(eq(subscriptions.id, id));
  try {
    return await changeDomain(app, row.domainId, async (tx, domain) => {
      const [sub] = await tx.select().from(subscriptions).where(eq(subscriptions.id, id)).for('update');
      const [view] = await store.subscriptionViews(tx, eq(subscriptions.id, id));
      const t = now.getTime();
      const ended = sub.status === 'active' && sub.expiresAt !== null && sub.expiresAt.getTime() <= t;
      // Whoever pays for the domain now is charged and told (a payer nominated since the purchase takes the bill).
      const payer = (await store.payerOf(tx, sub.domainId)) ?? sub.userId;
      const note = (kind: string, title: string, extra: Record<string, unknown> = {}, to = payer) =>
        notify(tx, {
          userId: to,
          category: 'billing',
          kind,
          title,
          domain: sub.domainName,
          data: { subscription_id: sub.id, ...extra },
          dedupeKey: `${kind}:${sub.id}:${sub.expiresAt?.getTime() ?? 0}`,
        });

      if (ended && sub.isTrial) {
        await tx
          .update(subscriptions)
          .set({ status: 'cancelled', cancelReason: 'trial_ended', cancelledAt: now, autoRenew: false, updatedAt: now })
          .where(eq(subscriptions.id, id));
        await freePlan(tx, sub, domain.ownerId);
        await note(
          'billing.trial_ended',
          `The ${view.plan.name} trial of ${sub.domainName} ended: it is on the free plan`,
        );
        return { value: true, change: { whole: true } };
      }
      const renewable = sub.autoRenew && view.term !== null;
      if ((ended || sub.status === 'grace') && renewable) {
        const invoice = await chargeTerm(tx, cfg, { ...sub, userId: payer }, view.plan, view.term!, 'renewal', now);
        if (invoice) {
          const from = sub.expiresAt ?? now;
          await tx
            .update(subscriptions)
            .set({
              userId: payer,
              status: 'active',
              graceUntil: null,
              expiresAt: new Date(from.getTime() + view.term!.durationDays * cfg.dayMs),
              updatedAt: now,
            })
            .where(eq(subscriptions.id, id));
          await note(
            'billing.renewed',
            `${sub.domainName}: ${view.plan.name} renewed from your wallet`,
            { invoice_id: invoice.id },
            payer,
          );
          return { value: true };
        }
      }
      if (ended) {
        const graceUntil = new Date(sub.expiresAt!.getTime() + cfg.graceDays * cfg.dayMs);
        await tx
          .update(subscriptions)
          .set({ status: 'grace', graceUntil, updatedAt: now })
          .where(eq(subscriptions.id, id));
        await note(
          renewable ? 'billing.renewal_failed' : 'billing.expired_grace',
          renewable
            ? `${sub.domainName}: your wallet does not cover the ${view.plan.name} renewal; the plan keeps working until ${graceUntil.toISOString()}`
            : `${sub.domainName}: ${view.plan.name} expired; it keeps working until ${graceUntil.toISOString()}`,
        );
        return { value: true };
      }
      if (sub.status === 'grace' && sub.graceUntil !== null && sub.graceUntil.getTime() <= t) {
        await tx
          .update(subscriptions)
          .set({ status: 'expired', autoRenew: false, updatedAt: now })
          .where(eq(subscriptions.id, id));
        await freePlan(tx, sub, domain.ownerId);
        await note('billing.expired', `${sub.domainName}: ${view.plan.name} expired; the domain is on the free plan`);
        return { value: true, change: { whole: true } };
      }
      return { value: false };
    });
  } catch (err) {
    if (isApiError(err) && err.code === 'CP_ERR_NOT_FOUND') return false; // the domain is gone
    throw err;
  }
}

/** The domain's free subscription after a paid one ends (every domain keeps a live subscription). */
async function freePlan(tx: Tx, sub: SubscriptionRow, ownerId: number): Promise<void> {
  const free = await planBySlug(tx, FREE_PLAN_SLUG);
  await tx
    .insert(subscriptions)
    .values({ domainId: sub.domainId, domainName: sub.domainName, userId: ownerId, planId: free.id, status: 'active' });
}

/** Live subscriptions whose lifecycle has something ahead (a term end or metering): the workflows to keep running. */
export async function subscriptionsWithLifecycle(app: FastifyInstance) {
  return store.subscriptionViews(
    app.db,
    and(
      sql`${subscriptions.status} IN ('active', 'grace')`,
      sql`(${subscriptions.expiresAt} IS NOT NULL OR ${subscriptions.graceUntil} IS NOT NULL OR EXISTS (
        SELECT 1 FROM plans p WHERE p.id = ${subscriptions.planId} AND p.traffic_price_rials_per_gb > 0))`,
    ),
  );
}
