// Billing reads (spec "Billing and account reads", Further operations "Billing"): wallet, transactions, top-up
// results, statements, subscriptions, plan summary, traffic usage and pricing, invoices; per domain the subscription,
// its history, entitlements, traffic usage and invoices. Everything is a GET: what moves money is not for API keys.
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Static } from '@sinclair/typebox';
import { and, eq, inArray, ne, type SQL } from 'drizzle-orm';
import { loadDomain } from '../../auth/domain-access.js';
import { invoices, subscriptions } from '../../db/schema.js';
import { ApiError } from '../../errors.js';
import { errorResponses, idSegment } from '../../openapi/schemas.js';
import { LIVE_STATUSES, applyOverrides } from '../../plans/entitlements.js';
import { parseDomainName } from '../domains/domain-name.js';
import { DomainParams } from '../domains/schemas.js';
import { currentUsage, presentUsage } from './metering.js';
import {
  presentInvoice,
  presentOverrides,
  presentPayment,
  presentSubscription,
  presentTransaction,
} from './present.js';
import {
  AccountTrafficUsage,
  DomainIdParams,
  Entitlements,
  IdParams,
  InvoiceDetail,
  InvoiceList,
  InvoiceListQuery,
  PageQuery,
  PlanSummaryList,
  StatementList,
  StatementQuery,
  Subscription,
  SubscriptionList,
  SubscriptionListQuery,
  TopupResult,
  TrafficUsage,
  Wallet,
  TransactionList,
  WalletTransaction,
} from './schemas.js';
import * as store from './store.js';
import lifecycleRoutes from './lifecycle-routes.js';

const tags = ['billing'];
const NOT_FOUND = {
  invoice: 'invoice not found',
  subscription: 'subscription not found',
  transaction: 'transaction not found',
  payment: 'payment not found',
};

const paging = (q: { page?: number; per_page?: number }) => ({ page: q.page ?? 1, perPage: q.per_page ?? 20 });
const pageOf = (p: { page: number; perPage: number }, total: number) => ({
  page: p.page,
  per_page: p.perPage,
  total_count: total,
});

/** Traffic statements (kind period) are read as statements, never as invoices (spec GET /invoices/{id}: 404). */
const notStatement = ne(invoices.kind, 'period');

export default async function billingRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  await app.register(lifecycleRoutes);
  const dayMs = () => app.config.billing.dayMs;

  /** An invoice with its holder, subscription (when it has one) and payment (a top-up's). */
  async function invoiceDetail(where: SQL) {
    const found = await store.invoiceWithItems(app.db, where);
    if (!found) throw new ApiError('CP_ERR_NOT_FOUND', NOT_FOUND.invoice);
    const { inv, items } = found;
    const [view] = inv.subscriptionId
      ? await store.subscriptionViews(app.db, eq(subscriptions.id, inv.subscriptionId))
      : [];
    const pay = inv.paymentId ? await store.payment(app.db, inv.userId, inv.paymentId) : null;
    return {
      invoice: presentInvoice(inv, items),
      user: inv.holder,
      ...(view ? { subscription: presentSubscription(view) } : {}),
      ...(pay ? { payment: presentPayment(pay) } : {}),
    };
  }

  /** A page of invoices within `scope` (an account's or a domain's), statements left out, filtered by kind/status. */
  async function invoiceList(scope: SQL, query: Static<typeof InvoiceListQuery>) {
    const p = paging(query);
    const conds = [scope, notStatement];
    if (query.kind) conds.push(eq(invoices.kind, query.kind));
    if (query.status) conds.push(eq(invoices.status, query.status));
    const { rows, total } = await store.invoicePage(app.db, and(...conds), p);
    return { invoices: rows.map((r) => presentInvoice(r.inv, r.items)), ...pageOf(p, total) };
  }

  /** A page of subscriptions within `scope`, optionally of one status. */
  async function subscriptionList(scope: SQL, query: Static<typeof SubscriptionListQuery>) {
    const p = paging(query);
    const where = and(scope, query.status ? eq(subscriptions.status, query.status) : undefined);
    const [views, total] = await Promise.all([
      store.subscriptionViews(app.db, where, p),
      store.countSubscriptions(app.db, where),
    ]);
    return { subscriptions: views.map((v) => presentSubscription(v)), ...pageOf(p, total) };
  }

  /** One subscription within `scope`, as a single read (effective features, quota window). */
  async function oneSubscription(scope: SQL, id: number) {
    const [view] = await store.subscriptionViews(app.db, and(eq(subscriptions.id, id), scope));
    if (!view) throw new ApiError('CP_ERR_NOT_FOUND', NOT_FOUND.subscription);
    return presentSubscription(view, { single: { dayMs: dayMs() } });
  }

  // ---- Wallet ----
  app.get(
    '/wallet',
    { schema: { summary: 'Wallet balance', tags, response: { 200: Wallet, ...errorResponses(403) } } },
    async (request) => {
      const w = await store.wallet(app.db, request.principal.userId);
      return {
        user_id: request.principal.userId,
        balance_rials: w?.balanceRials ?? 0,
        currency: 'IRR' as const,
        updated_at: w ? w.updatedAt.toISOString() : null,
      };
    },
  );

  app.get(
    '/wallet/transactions',
    {
      schema: {
        summary: 'Wallet transactions, newest first',
        tags,
        querystring: PageQuery,
        response: { 200: TransactionList, ...errorResponses(400, 403) },
      },
    },
    async (request) => {
      const p = paging(request.query);
      const { rows, total } = await store.transactionPage(app.db, request.principal.userId, p);
      return { transactions: rows.map(presentTransaction), ...pageOf(p, total) };
    },
  );

  app.get(
    `/wallet/transactions/${idSegment('id')}`,
    {
      schema: {
        summary: 'One wallet transaction',
        tags,
        params: IdParams,
        response: { 200: WalletTransaction, ...errorResponses(400, 403, 404) },
      },
    },
    async (request) => {
      const t = await store.transaction(app.db, request.principal.userId, request.params.id);
      if (!t) throw new ApiError('CP_ERR_NOT_FOUND', NOT_FOUND.transaction);
      return presentTransaction(t);
    },
  );

  app.get(
    `/wallet/topups/${idSegment('id')}`,
    {
      schema: {
        summary: 'The result of a top-up payment: the payment, its invoice and the wallet credit',
        description: '`id` is the payment id. Topping up (POST /wallet/topup) is not available to API keys.',
        tags,
        params: IdParams,
        response: { 200: TopupResult, ...errorResponses(400, 403, 404) },
      },
    },
    async (request) => {
      const pay = await store.payment(app.db, request.principal.userId, request.params.id);
      if (!pay || pay.purpose !== 'topup') throw new ApiError('CP_ERR_NOT_FOUND', NOT_FOUND.payment);
      const { invoice, transaction } = await store.topupParts(app.db, pay.id);
      return {
        payment: presentPayment(pay),
        invoice: invoice ? presentInvoice(invoice.inv, invoice.items) : null,
        transaction: transaction ? presentTransaction(transaction) : null,
      };
    },
  );

  // ---- Statements and invoices of the account ----
  app.get(
    '/statements',
    {
      schema: {
        summary: 'Period statements: metered traffic of closed billing periods (invoices of kind period, no VAT)',
        tags,
        querystring: StatementQuery,
        response: { 200: StatementList, ...errorResponses(400, 403) },
      },
    },
    async (request) => {
      const p = paging(request.query);
      const conds = [eq(invoices.userId, request.principal.userId), eq(invoices.kind, 'period')];
      if (request.query.domain !== undefined) {
        const parsed = parseDomainName(request.query.domain);
        if (!parsed.ok) throw new ApiError('CP_ERR_INVALID_INPUT', `invalid domain name "${request.query.domain}"`);
        conds.push(eq(invoices.domainName, parsed.name));
      }
      const { rows, total } = await store.invoicePage(app.db, and(...conds), p);
      return { statements: rows.map((r) => presentInvoice(r.inv, r.items)), ...pageOf(p, total) };
    },
  );

  app.get(
    '/invoices',
    {
      schema: {
        summary: "The account's invoices (subscription, top-up, manual), newest first",
        description: 'Traffic statements are listed by GET /statements.',
        tags,
        querystring: InvoiceListQuery,
        response: { 200: InvoiceList, ...errorResponses(400, 403) },
      },
    },
    async (request) => invoiceList(eq(invoices.userId, request.principal.userId), request.query),
  );

  app.get(
    `/invoices/${idSegment('id')}`,
    {
      schema: {
        summary: 'One invoice with its holder, subscription and payment',
        description: '404 for an invoice of another account and for traffic statements.',
        tags,
        params: IdParams,
        response: { 200: InvoiceDetail, ...errorResponses(400, 403, 404) },
      },
    },
    async (request) =>
      invoiceDetail(
        and(eq(invoices.id, request.params.id), eq(invoices.userId, request.principal.userId), notStatement)!,
      ),
  );

  // ---- Subscriptions of the account ----
  app.get(
    '/subscriptions',
    {
      schema: {
        summary: 'Subscriptions the account pays for, newest first',
        tags,
        querystring: SubscriptionListQuery,
        response: { 200: SubscriptionList, ...errorResponses(400, 403) },
      },
    },
    async (request) => subscriptionList(eq(subscriptions.userId, request.principal.userId), request.query),
  );

  app.get(
    '/subscriptions/current',
    {
      schema: {
        summary: 'Current subscription (removed)',
        description:
          'Removed: answers 410. Read the subscription of a domain with GET /domains/{domain}/subscription, or ' +
          "the account's with GET /subscriptions.",
        deprecated: true,
        tags,
        // What it answered before its removal, kept so the document still describes the operation.
        response: { 200: Subscription, ...errorResponses(403, 410) },
      },
    },
    async () => {
      throw new ApiError(
        'CP_ERR_GONE',
        'this endpoint was removed: use GET /domains/{domain}/subscription or GET /subscriptions',
      );
    },
  );

  app.get(
    '/subscriptions/summary',
    {
      schema: {
        summary: 'Plan summary per domain: every domain the caller can see with its live plan',
        tags,
        querystring: PageQuery,
        response: { 200: PlanSummaryList, ...errorResponses(400, 403) },
      },
    },
    async (request) => {
      const p = paging(request.query);
      const { rows, total } = await store.planSummaryPage(app.db, request.principal.userId, p);
      return {
        domains: rows.map(({ domain, role, live }) => ({
          domain_id: domain.id,
          domain_name: domain.name,
          role,
          subscription_id: live?.sub.id ?? null,
          plan: live ? { id: live.plan.id, slug: live.plan.slug, name: live.plan.name } : null,
          plan_term_id: live?.sub.planTermId ?? null,
          status: live?.sub.status ?? null,
          is_trial: live?.sub.isTrial ?? false,
          auto_renew: live?.sub.autoRenew ?? false,
          expires_at: live?.sub.expiresAt?.toISOString() ?? null,
          grace_until: live?.sub.graceUntil?.toISOString() ?? null,
        })),
        ...pageOf(p, total),
      };
    },
  );

  app.get(
    `/subscriptions/${idSegment('id')}`,
    {
      schema: {
        summary: 'One subscription the account pays for, with effective features and quota window',
        tags,
        params: IdParams,
        response: { 200: Subscription, ...errorResponses(400, 403, 404) },
      },
    },
    async (request) => oneSubscription(eq(subscriptions.userId, request.principal.userId), request.params.id),
  );

  app.get(
    '/usage/traffic',
    {
      schema: {
        summary: 'Traffic usage of the domains the account pays for, and the traffic pricing of every plan',
        tags,
        querystring: PageQuery,
        response: { 200: AccountTrafficUsage, ...errorResponses(400, 403) },
      },
    },
    async (request) => {
      const p = paging(request.query);
      const where = and(
        eq(subscriptions.userId, request.principal.userId),
        inArray(subscriptions.status, LIVE_STATUSES),
      );
      const [views, total, plans] = await Promise.all([
        store.subscriptionViews(app.db, where, p),
        store.countSubscriptions(app.db, where),
        store.pricing(app.db),
      ]);
      const now = new Date();
      const domains = [];
      for (const v of views) domains.push(presentUsage(v, await currentUsage(app, v, now)));
      return {
        domains,
        pricing: plans.map((pl) => ({
          plan_id: pl.id,
          slug: pl.slug,
          name: pl.name,
          max_traffic_gb: applyOverrides(pl.slug, pl.features, {}).max_traffic_gb,
          traffic_price_rials_per_gb: pl.trafficPriceRialsPerGb,
        })),
        ...pageOf(p, total),
      };
    },
  );

  // ---- Per domain ----
  app.get(
    '/domains/:domain/subscription',
    {
      schema: {
        summary: "The domain's current subscription with effective features, quota window and bytes used in it",
        tags,
        params: DomainParams,
        response: { 200: Subscription, ...errorResponses(403, 404) },
      },
    },
    async (request) => {
      const { domain } = await loadDomain(request, request.params.domain, 'domain.view');
      const view = await store.liveSubscription(app.db, domain.id);
      if (!view) throw new ApiError('CP_ERR_NOT_FOUND', 'the domain has no active subscription');
      const { usedBytes } = await currentUsage(app, view);
      return presentSubscription(view, { single: { dayMs: dayMs() }, usedBytes });
    },
  );

  app.get(
    '/domains/:domain/subscriptions',
    {
      schema: {
        summary: "The domain's subscription history, newest first",
        tags,
        params: DomainParams,
        querystring: SubscriptionListQuery,
        response: { 200: SubscriptionList, ...errorResponses(400, 403, 404) },
      },
    },
    async (request) => {
      const { domain } = await loadDomain(request, request.params.domain, 'domain.view');
      return subscriptionList(eq(subscriptions.domainId, domain.id), request.query);
    },
  );

  app.get(
    `/domains/:domain/subscriptions/${idSegment('id')}`,
    {
      schema: {
        summary: 'One subscription of the domain, with effective features and quota window',
        tags,
        params: DomainIdParams,
        response: { 200: Subscription, ...errorResponses(400, 403, 404) },
      },
    },
    async (request) => {
      const { domain } = await loadDomain(request, request.params.domain, 'domain.view');
      return oneSubscription(eq(subscriptions.domainId, domain.id), request.params.id);
    },
  );

  app.get(
    '/domains/:domain/entitlements',
    {
      schema: {
        summary: "The domain's plan entitlements: its plan's features with support-set overrides applied",
        tags,
        params: DomainParams,
        response: { 200: Entitlements, ...errorResponses(403, 404) },
      },
    },
    async (request) => {
      const { domain } = await loadDomain(request, request.params.domain, 'domain.view');
      const view = await store.liveSubscription(app.db, domain.id);
      const plan = view?.plan ?? (await store.pricing(app.db)).find((p) => p.slug === 'free')!;
      const overrides = view?.sub.overrides ?? {};
      return {
        domain_id: domain.id,
        domain_name: domain.name,
        subscription_id: view?.sub.id ?? null,
        plan: { id: plan.id, slug: plan.slug, name: plan.name },
        effective_features: applyOverrides(plan.slug, plan.features, overrides),
        ...presentOverrides(overrides),
      };
    },
  );

  app.get(
    '/domains/:domain/usage/traffic',
    {
      schema: {
        summary: "The domain's billable traffic in its current quota window, its allowance and the price over it",
        tags,
        params: DomainParams,
        response: { 200: TrafficUsage, ...errorResponses(403, 404) },
      },
    },
    async (request) => {
      const { domain } = await loadDomain(request, request.params.domain, 'domain.view');
      const view = await store.liveSubscription(app.db, domain.id);
      if (!view) throw new ApiError('CP_ERR_NOT_FOUND', 'the domain has no active subscription');
      return presentUsage(view, await currentUsage(app, view));
    },
  );

  app.get(
    '/domains/:domain/invoices',
    {
      schema: {
        summary: "The domain's invoices, newest first (owner and admin: domain.settings)",
        tags,
        params: DomainParams,
        querystring: InvoiceListQuery,
        response: { 200: InvoiceList, ...errorResponses(400, 403, 404) },
      },
    },
    async (request) => {
      const { domain } = await loadDomain(request, request.params.domain, 'domain.settings');
      return invoiceList(eq(invoices.domainId, domain.id), request.query);
    },
  );

  app.get(
    `/domains/:domain/invoices/${idSegment('id')}`,
    {
      schema: {
        summary: 'One invoice of the domain with its holder, subscription and payment (domain.settings)',
        tags,
        params: DomainIdParams,
        response: { 200: InvoiceDetail, ...errorResponses(400, 403, 404) },
      },
    },
    async (request) => {
      const { domain } = await loadDomain(request, request.params.domain, 'domain.settings');
      return invoiceDetail(and(eq(invoices.id, request.params.id), eq(invoices.domainId, domain.id), notStatement)!);
    },
  );
}
