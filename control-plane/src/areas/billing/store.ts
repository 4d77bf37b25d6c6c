// SQL of the billing reads: subscriptions with plan and term, invoices with items, wallet, payments, plan summary.
import { and, asc, count, desc, eq, inArray, or, type SQL } from 'drizzle-orm';
import type { Db, Tx } from '../../db/index.js';
import {
  domainBillingMembers,
  domainMembers,
  domains,
  invoiceItems,
  invoices,
  payments,
  planTerms,
  plans,
  subscriptions,
  walletTransactions,
  wallets,
} from '../../db/schema.js';
import { LIVE_STATUSES } from '../../plans/entitlements.js';
import type { SubscriptionView } from './present.js';

export interface Paging {
  page: number;
  perPage: number;
}
const offsetOf = (p: Paging) => (p.page - 1) * p.perPage;

/** Subscriptions matching `where` with their plan and term, newest first. */
export async function subscriptionViews(
  db: Db | Tx,
  where: SQL | undefined,
  paging?: Paging,
): Promise<SubscriptionView[]> {
  const q = db
    .select({ sub: subscriptions, plan: plans, term: planTerms })
    .from(subscriptions)
    .innerJoin(plans, eq(plans.id, subscriptions.planId))
    .leftJoin(planTerms, eq(planTerms.id, subscriptions.planTermId))
    .where(where)
    .orderBy(desc(subscriptions.id));
  return paging ? q.limit(paging.perPage).offset(offsetOf(paging)) : q;
}

export async function countSubscriptions(db: Db, where: SQL | undefined): Promise<number> {
  const [r] = await db.select({ n: count() }).from(subscriptions).where(where);
  return Number(r.n);
}

/** The domain's live (active or grace) subscription. */
export async function liveSubscription(db: Db, domainId: number): Promise<SubscriptionView | null> {
  const [v] = await subscriptionViews(
    db,
    and(eq(subscriptions.domainId, domainId), inArray(subscriptions.status, LIVE_STATUSES)),
  );
  return v ?? null;
}

type InvoiceRow = typeof invoices.$inferSelect;
type ItemRow = typeof invoiceItems.$inferSelect;

async function withItems(db: Db, rows: InvoiceRow[]): Promise<Array<{ inv: InvoiceRow; items: ItemRow[] }>> {
  if (rows.length === 0) return [];
  const items = await db
    .select()
    .from(invoiceItems)
    .where(
      inArray(
        invoiceItems.invoiceId,
        rows.map((r) => r.id),
      ),
    )
    .orderBy(asc(invoiceItems.id));
  return rows.map((inv) => ({ inv, items: items.filter((i) => i.invoiceId === inv.id) }));
}

/** Invoices matching `where`, newest first, with their items, and how many match. */
export async function invoicePage(db: Db, where: SQL | undefined, paging: Paging) {
  const rows = await db
    .select()
    .from(invoices)
    .where(where)
    .orderBy(desc(invoices.issuedAt), desc(invoices.id))
    .limit(paging.perPage)
    .offset(offsetOf(paging));
  const [n] = await db.select({ n: count() }).from(invoices).where(where);
  return { rows: await withItems(db, rows), total: Number(n.n) };
}

export async function invoiceWithItems(db: Db, where: SQL) {
  const [row] = await db.select().from(invoices).where(where).limit(1);
  if (!row) return null;
  return (await withItems(db, [row]))[0];
}

export async function wallet(db: Db, userId: number) {
  const [w] = await db.select().from(wallets).where(eq(wallets.userId, userId));
  return w ?? null;
}

export async function transactionPage(db: Db, userId: number, paging: Paging) {
  const where = eq(walletTransactions.userId, userId);
  const rows = await db
    .select()
    .from(walletTransactions)
    .where(where)
    .orderBy(desc(walletTransactions.id))
    .limit(paging.perPage)
    .offset(offsetOf(paging));
  const [n] = await db.select({ n: count() }).from(walletTransactions).where(where);
  return { rows, total: Number(n.n) };
}

export async function transaction(db: Db, userId: number, id: number) {
  const [t] = await db
    .select()
    .from(walletTransactions)
    .where(and(eq(walletTransactions.userId, userId), eq(walletTransactions.id, id)));
  return t ?? null;
}

export async function payment(db: Db, userId: number, id: number) {
  const [p] = await db
    .select()
    .from(payments)
    .where(and(eq(payments.userId, userId), eq(payments.id, id)));
  return p ?? null;
}

/** The top-up's invoice and wallet credit (none while the payment is not paid). */
export async function topupParts(db: Db, paymentId: number) {
  const inv = await invoiceWithItems(db, and(eq(invoices.paymentId, paymentId), eq(invoices.kind, 'topup'))!);
  const [t] = await db.select().from(walletTransactions).where(eq(walletTransactions.paymentId, paymentId)).limit(1);
  return { invoice: inv, transaction: t ?? null };
}

/** Every domain the user can see (owned or shared), by name, with the caller's role and its live subscription. */
export async function planSummaryPage(db: Db, userId: number, paging: Paging) {
  const visible = or(eq(domains.ownerId, userId), eq(domainMembers.userId, userId));
  const rows = await db
    .select({ domain: domains, memberRole: domainMembers.role })
    .from(domains)
    .leftJoin(domainMembers, and(eq(domainMembers.domainId, domains.id), eq(domainMembers.userId, userId)))
    .where(visible)
    .orderBy(asc(domains.name))
    .limit(paging.perPage)
    .offset(offsetOf(paging));
  const [n] = await db
    .select({ n: count() })
    .from(domains)
    .leftJoin(domainMembers, and(eq(domainMembers.domainId, domains.id), eq(domainMembers.userId, userId)))
    .where(visible);
  const ids = rows.map((r) => r.domain.id);
  const live = ids.length
    ? await subscriptionViews(
        db,
        and(inArray(subscriptions.domainId, ids), inArray(subscriptions.status, LIVE_STATUSES)),
      )
    : [];
  return {
    rows: rows.map((r) => ({
      domain: r.domain,
      role: r.domain.ownerId === userId ? 'owner' : (r.memberRole ?? 'viewer'),
      live: live.find((v) => v.sub.domainId === r.domain.id) ?? null,
    })),
    total: Number(n.n),
  };
}

/** Every plan with its traffic allowance and price per GB over it. */
export async function pricing(db: Db) {
  return db.select().from(plans).orderBy(asc(plans.priceRials), asc(plans.id));
}

/**
 * Who pays for the domain now: the member nominated with PUT /domains/{domain}/billing-member, else the owner; null
 * when the domain no longer exists.
 */
export async function payerOf(db: Db | Tx, domainId: number): Promise<number | null> {
  const [row] = await db
    .select({ owner: domains.ownerId, nominated: domainBillingMembers.userId })
    .from(domains)
    .leftJoin(domainBillingMembers, eq(domainBillingMembers.domainId, domains.id))
    .where(eq(domains.id, domainId));
  return row ? (row.nominated ?? row.owner) : null;
}
