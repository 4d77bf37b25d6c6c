// Billing reads through the API (issue 16 item 3): wallet, transactions, top-up results, statements, subscriptions,
// plan summary, traffic usage and pricing, invoices; per domain the subscription, history, entitlements, usage and
// invoices. Data that only support or payments create is made with the admin commands, as an operator would.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { eq } from 'drizzle-orm';
import { startTestControlPlane, type TestControlPlane } from '../helpers/control-plane.js';
import { executeCommand } from '../../control-plane/src/admin/commands.js';
import { issueInvoice } from '../../control-plane/src/areas/billing/invoices.js';
import { advanceSubscription } from '../../control-plane/src/areas/billing/lifecycle.js';
import { domains, invoices, subscriptions, wallets, workflowOutbox } from '../../control-plane/src/db/schema.js';

type Json = Record<string, any>;

async function eventuallyValue<T>(probe: () => Promise<T | undefined>, ms = 20_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 100));
  }
}

function adminOf(cp: TestControlPlane, billing = cp.config.billing) {
  return async (...argv: string[]): Promise<{ code: number; out: string[]; err: string[] }> => {
    const out: string[] = [];
    const err: string[] = [];
    const ctx = { db: cp.database.db, configLog: cp.app.configLog, out: (l: string) => out.push(l), billing };
    const code = await executeCommand(ctx, argv, (l) => err.push(l));
    return { code, out, err };
  };
}

test('billing reads: wallet, invoices, subscriptions, usage, with permission and plan cases', async (t) => {
  const cp = await startTestControlPlane(t);
  const admin = adminOf(cp);
  const ok = async (...argv: string[]) => {
    const r = await admin(...argv);
    assert.equal(r.code, 0, `${argv.join(' ')}: ${r.err.join('\n')}`);
    return r.out.join('\n');
  };
  const get = async (key: string, url: string, status = 200): Promise<Json> => {
    const res = await cp.call(key, 'GET', url);
    assert.equal(res.statusCode, status, `GET ${url}: ${res.body}`);
    return res.json();
  };

  const owner = await cp.user('owner@example.org');
  const ownerRo = await cp.key(owner.id, { readOnly: true });
  const other = await cp.user('other@example.org');
  const viewer = await cp.user('viewer@example.org');
  const adminMember = await cp.user('admin@example.org');
  const d = await cp.domain(owner.key, 'shop.example.org');
  const d2 = await cp.domain(owner.key, 'blog.example.org');
  await cp.domain(other.key, 'other.example.net');
  await cp.addMember(d, viewer.id, 'viewer');
  await cp.addMember(d, adminMember.id, 'admin');

  await t.test('wallet: empty, then a paid, a pending and a failed top-up; transactions; top-up results', async () => {
    assert.deepEqual(await get(owner.key, '/wallet'), {
      user_id: owner.id,
      balance_rials: 0,
      currency: 'IRR',
      updated_at: null,
    });
    await ok('billing-profile', 'set', 'owner@example.org', '--phone', '+989121234567', '--address', 'Tehran');
    const paid = await ok('wallet', 'topup', 'owner@example.org', '5000000', '--gateway', 'zarinpal', '--sandbox');
    await ok('wallet', 'topup', 'owner@example.org', '700000', '--status', 'pending');
    await ok('wallet', 'topup', 'owner@example.org', '900000', '--status', 'failed');
    assert.match(paid, /balance 5000000 rials/);
    const w = await get(ownerRo.key, '/wallet');
    assert.equal(w.balance_rials, 5_000_000);

    const list = await get(owner.key, '/wallet/transactions');
    assert.equal(list.total_count, 1);
    assert.equal(list.page, 1);
    assert.equal(list.per_page, 20);
    const [tx] = list.transactions;
    assert.equal(tx.kind, 'topup');
    assert.equal(tx.amount_rials, 5_000_000);
    assert.equal(tx.balance_after_rials, 5_000_000);
    assert.deepEqual(await get(owner.key, `/wallet/transactions/${tx.id}`), tx);
    await get(other.key, `/wallet/transactions/${tx.id}`, 404);

    const result = await get(owner.key, `/wallet/topups/${tx.payment_id}`);
    assert.equal(result.payment.status, 'paid');
    assert.equal(result.payment.gateway, 'zarinpal');
    assert.equal(result.payment.sandbox, true);
    assert.equal(result.payment.amount_rials, 5_000_000);
    assert.ok(result.payment.paid_at);
    assert.equal(result.invoice.kind, 'topup');
    assert.equal(result.invoice.status, 'paid');
    assert.equal(result.invoice.tax_rials, 0, 'no VAT on a top-up');
    assert.equal(result.invoice.total_rials, 5_000_000);
    assert.equal(result.transaction.id, tx.id);
    await get(other.key, `/wallet/topups/${tx.payment_id}`, 404);

    const pending = await get(owner.key, `/wallet/topups/${tx.payment_id + 1}`);
    assert.equal(pending.payment.status, 'pending');
    assert.equal(pending.invoice.status, 'unpaid');
    assert.equal(pending.transaction, null);
    const failed = await get(owner.key, `/wallet/topups/${tx.payment_id + 2}`);
    assert.equal(failed.payment.status, 'failed');
    assert.equal(failed.invoice.status, 'cancelled');
    assert.equal(failed.transaction, null);
    assert.deepEqual(await get(other.key, '/wallet'), {
      user_id: other.id,
      balance_rials: 0,
      currency: 'IRR',
      updated_at: null,
    });
  });

  let termId = 0;
  let proSubId = 0;
  let freeSubId = 0;
  await t.test(
    'subscription: a paid term charged from the wallet with VAT, invoiced; real term, quota cadence, grace',
    async () => {
      const before = await get(owner.key, `/domains/${d}/subscription`);
      freeSubId = before.id;
      assert.equal(before.plan_term_id, null);
      assert.equal(before.quota_reset_days, 30);
      const created = await ok(
        'plan',
        'term-create',
        'pro',
        'Monthly',
        '--days',
        '30',
        '--price',
        '2500000',
        '--quota-reset-days',
        '15',
      );
      termId = Number(/plan term (\d+)/.exec(created)![1]);
      await ok('subscription', 'create', d, 'pro', '--term', String(termId), '--auto-renew');

      const sub = await get(owner.key, `/domains/${d}/subscription`);
      proSubId = sub.id;
      assert.equal(sub.status, 'active');
      assert.equal(sub.plan_id, sub.plan.id);
      assert.equal(sub.plan.slug, 'pro');
      assert.equal(sub.plan.traffic_price_rials_per_gb, 15000);
      assert.equal(sub.plan_term_id, termId);
      assert.deepEqual(sub.plan_term, {
        id: termId,
        plan_id: sub.plan.id,
        name: 'Monthly',
        duration_days: 30,
        price_rials: 2_500_000,
        quota_reset_days: 15,
      });
      assert.equal(sub.quota_reset_days, 15);
      assert.equal(sub.auto_renew, true);
      assert.equal(sub.is_trial, false);
      assert.equal(sub.grace_until, null);
      assert.equal(Date.parse(sub.expires_at) - Date.parse(sub.started_at), 30 * 86_400_000);
      assert.equal(sub.quota_period_start, sub.started_at);
      assert.equal(Date.parse(sub.quota_period_end) - Date.parse(sub.quota_period_start), 15 * 86_400_000);
      assert.equal(sub.quota_period_used_bytes, 0);
      assert.equal(sub.effective_features.plan, 'pro');
      assert.equal(sub.effective_features.max_records, 1000);

      // 2,500,000 + 10 % VAT = 2,750,000 taken from 5,000,000.
      assert.equal((await get(owner.key, '/wallet')).balance_rials, 2_250_000);
      const charges = (await get(owner.key, '/wallet/transactions')).transactions.filter(
        (x: Json) => x.kind === 'charge',
      );
      assert.equal(charges.length, 1);
      assert.equal(charges[0].amount_rials, -2_750_000);
      const inv = await get(owner.key, `/invoices/${charges[0].invoice_id}`);
      assert.equal(inv.invoice.kind, 'subscription');
      assert.equal(inv.invoice.status, 'paid');
      assert.equal(inv.invoice.subtotal_rials, 2_500_000);
      assert.equal(inv.invoice.tax_rials, 250_000);
      assert.equal(inv.invoice.tax_percent, 10);
      assert.equal(inv.invoice.total_rials, 2_750_000);
      assert.equal(inv.invoice.subscription_id, proSubId);
      assert.equal(inv.invoice.domain_name, d);
      assert.deepEqual(
        inv.invoice.items.map((i: Json) => [i.quantity, i.unit_price_rials, i.total_rials]),
        [[1, 2_500_000, 2_500_000]],
      );
      assert.equal(inv.subscription.id, proSubId);
      assert.equal(inv.subscription.effective_features, undefined, 'the invoice shows the subscription as listed');
      assert.equal(inv.payment, undefined);
      assert.deepEqual(inv.user, {
        id: owner.id,
        email: 'owner@example.org',
        phone_number: '+989121234567',
        name: '',
        address: 'Tehran',
        birth_date: null,
      });
    },
  );

  await t.test(
    'subscription history, one subscription, the account subscriptions: fields where the spec puts them',
    async () => {
      const history = await get(viewer.key, `/domains/${d}/subscriptions`);
      assert.equal(history.total_count, 2);
      const [pro, free] = history.subscriptions;
      assert.equal(pro.id, proSubId);
      assert.equal(free.id, freeSubId);
      assert.equal(free.status, 'cancelled');
      assert.equal(free.cancel_reason, 'plan_switch');
      assert.ok(free.cancelled_at);
      for (const s of history.subscriptions) {
        assert.equal(s.effective_features, undefined, 'lists carry no effective_features');
        assert.equal(s.quota_period_start, undefined);
        assert.equal(s.quota_period_used_bytes, undefined);
      }
      assert.equal(pro.cancel_reason, undefined, 'cancel_reason only when cancelled');
      assert.equal((await get(owner.key, `/domains/${d}/subscriptions?status=cancelled`)).total_count, 1);

      const one = await get(viewer.key, `/domains/${d}/subscriptions/${proSubId}`);
      assert.equal(one.effective_features.plan, 'pro');
      assert.ok(one.quota_period_start && one.quota_period_end);
      assert.equal(one.quota_period_used_bytes, undefined, 'only on the domain subscription read');
      const cancelled = await get(viewer.key, `/domains/${d}/subscriptions/${freeSubId}`);
      assert.equal(cancelled.effective_features.plan, 'free');
      assert.equal(cancelled.quota_period_start, undefined, 'no quota window on a cancelled subscription');
      await get(owner.key, `/domains/${d2}/subscriptions/${proSubId}`, 404);
      await get(other.key, `/domains/${d}/subscriptions`, 404);

      const mine = await get(owner.key, '/subscriptions');
      assert.equal(mine.total_count, 3); // shop: free (cancelled) and pro; blog: free
      assert.deepEqual(await get(owner.key, `/subscriptions/${proSubId}`), one);
      await get(other.key, `/subscriptions/${proSubId}`, 404);
      assert.equal((await get(other.key, '/subscriptions')).total_count, 1);
      assert.equal((await get(viewer.key, '/subscriptions')).total_count, 0, 'a viewer pays for nothing');
    },
  );

  await t.test('plan summary per domain: every visible domain with the caller role and live plan', async () => {
    const own = await get(owner.key, '/subscriptions/summary');
    assert.deepEqual(
      own.domains.map((x: Json) => [x.domain_name, x.role, x.plan?.slug, x.status, x.plan_term_id, x.auto_renew]),
      [
        [d2, 'owner', 'free', 'active', null, false],
        [d, 'owner', 'pro', 'active', termId, true],
      ],
    );
    const seen = await get(viewer.key, '/subscriptions/summary');
    assert.deepEqual(
      seen.domains.map((x: Json) => [x.domain_name, x.role, x.plan?.slug]),
      [[d, 'viewer', 'pro']],
    );
    assert.equal((await get(owner.key, '/subscriptions/summary?per_page=1&page=2')).domains[0].domain_name, d);
  });

  await t.test(
    'entitlements: the plan with overrides applied, override_ fields only when set; plan cases',
    async () => {
      let e = await get(viewer.key, `/domains/${d}/entitlements`);
      assert.equal(e.plan.slug, 'pro');
      assert.equal(e.subscription_id, proSubId);
      assert.equal(e.effective_features.max_records, 1000);
      assert.deepEqual(e.effective_features.disabled_rule_types, ['fingerprint']);
      assert.equal(e.override_max_records, undefined);
      await ok('plan', 'override', d, 'max_records', '7777');
      e = await get(viewer.key, `/domains/${d}/entitlements`);
      assert.equal(e.effective_features.max_records, 7777);
      assert.equal(e.override_max_records, 7777);
      const free = await get(owner.key, `/domains/${d2}/entitlements`);
      assert.equal(free.plan.slug, 'free');
      assert.equal(free.effective_features.custom_ssl_enabled, false);
      assert.deepEqual(free.effective_features.disabled_rule_types, [
        'waf',
        'bot_route',
        'fingerprint',
        'origin_pool',
        'optimize',
      ]);
      await get(other.key, `/domains/${d}/entitlements`, 404);
    },
  );

  await t.test('traffic usage and pricing: the window, the allowance, the price per GB over it', async () => {
    const u = await get(viewer.key, `/domains/${d}/usage/traffic`);
    assert.equal(u.plan, 'pro');
    assert.equal(u.subscription_id, proSubId);
    assert.equal(u.used_bytes, 0);
    assert.equal(u.included_bytes, 1000 * 1e9);
    assert.equal(u.overage_bytes, 0);
    assert.equal(u.traffic_price_rials_per_gb, 15000);
    assert.equal(u.estimated_overage_rials, 0);
    const account = await get(owner.key, '/usage/traffic');
    assert.deepEqual(
      account.domains.map((x: Json) => [x.domain_name, x.plan]).sort(),
      [
        [d2, 'free'],
        [d, 'pro'],
      ].sort(),
    );
    assert.deepEqual(
      account.pricing.map((p: Json) => [p.slug, p.max_traffic_gb, p.traffic_price_rials_per_gb]),
      [
        ['free', 100, 0],
        ['pro', 1000, 15000],
        ['business', 10000, 12000],
        ['enterprise', 100000, 10000],
      ],
    );
    assert.equal((await get(viewer.key, '/usage/traffic')).domains.length, 0);
  });

  let manualId = 0;
  let periodId = 0;
  await t.test(
    'invoices: manual (taxed), statements (period, no VAT, 404 as an invoice), holder, other accounts 404',
    async () => {
      const out = await ok(
        'invoice',
        'create',
        'owner@example.org',
        '--item',
        'Migration help|2|100000',
        '--item',
        'Audit|1|55',
        '--domain',
        d,
        '--notes',
        'by support',
      );
      assert.match(out, /200055 \+ VAT 20006 = 220061 rials/); // 10 % of 200,055 = 20,005.5 → 20,006
      const list = await get(owner.key, '/invoices');
      assert.deepEqual(list.invoices.map((i: Json) => i.kind).sort(), [
        'manual',
        'subscription',
        'topup',
        'topup',
        'topup',
      ]);
      const manual = list.invoices.find((i: Json) => i.kind === 'manual');
      manualId = manual.id;
      assert.equal(manual.notes, 'by support');
      assert.equal(manual.tax_percent, 10);
      assert.deepEqual(
        manual.items.map((i: Json) => i.description),
        ['Migration help', 'Audit'],
      );
      assert.equal((await get(owner.key, '/invoices?kind=topup&status=paid')).total_count, 1);
      const detail = await get(owner.key, `/invoices/${manualId}`);
      assert.deepEqual(detail.invoice, manual);
      assert.equal(detail.subscription, undefined);
      assert.equal(detail.payment, undefined);
      const topupInvoice = list.invoices.find((i: Json) => i.kind === 'topup' && i.status === 'paid');
      const topup = await get(owner.key, `/invoices/${topupInvoice.id}`);
      assert.equal(topup.payment.id, topupInvoice.payment_id);
      assert.equal(topup.payment.amount_rials, 5_000_000);
      await get(other.key, `/invoices/${manualId}`, 404);
      assert.equal((await get(other.key, '/invoices')).total_count, 0);

      // A traffic statement (what the lifecycle issues when a window with metered traffic closes).
      const [dom] = await cp.database.db.select().from(domains).where(eq(domains.name, d));
      const period = await cp.database.db.transaction((tx) =>
        issueInvoice(
          tx,
          {
            userId: owner.id,
            kind: 'period',
            status: 'unpaid',
            domainId: dom.id,
            domainName: d,
            subscriptionId: proSubId,
            items: [{ description: 'Traffic over the allowance', quantity: 3, unitPriceRials: 15000 }],
            periodStart: new Date('2026-10-01T00:00:00Z'),
            periodEnd: new Date('2026-10-16T00:00:00Z'),
          },
          10,
        ),
      );
      periodId = period.id;
      await get(owner.key, `/invoices/${periodId}`, 404);
      await get(owner.key, `/domains/${d}/invoices/${periodId}`, 404);
      const statements = await get(owner.key, '/statements');
      assert.equal(statements.total_count, 1);
      const [st] = statements.statements;
      assert.equal(st.kind, 'period');
      assert.equal(st.tax_rials, 0, 'no VAT on a period invoice');
      assert.equal(st.total_rials, 45000);
      assert.equal(st.period_start, '2026-10-01T00:00:00.000Z');
      assert.equal((await get(owner.key, `/statements?domain=${d2}`)).total_count, 0);
      assert.equal((await get(owner.key, `/statements?domain=${d.toUpperCase()}`)).total_count, 1);
      assert.equal((await get(other.key, '/statements')).total_count, 0);
      assert.equal(
        (await get(owner.key, '/invoices')).invoices.some((i: Json) => i.kind === 'period'),
        false,
      );
    },
  );

  await t.test('domain invoices: owner and admin (domain.settings); viewer 403; other accounts 404', async () => {
    const own = await get(owner.key, `/domains/${d}/invoices`);
    assert.deepEqual(own.invoices.map((i: Json) => i.kind).sort(), ['manual', 'subscription']);
    assert.deepEqual(await get(adminMember.key, `/domains/${d}/invoices`), own);
    const denied = await get(viewer.key, `/domains/${d}/invoices`, 403);
    assert.equal(denied.error, 'your role (viewer) lacks the domain.settings permission on this domain');
    await get(viewer.key, `/domains/${d}/invoices/${manualId}`, 403);
    await get(other.key, `/domains/${d}/invoices`, 404);
    const one = await get(adminMember.key, `/domains/${d}/invoices/${manualId}`);
    assert.equal(one.invoice.id, manualId);
    assert.equal(one.user.email, 'owner@example.org');
    await get(owner.key, `/domains/${d2}/invoices/${manualId}`, 404);
    assert.equal((await get(owner.key, `/domains/${d2}/invoices`)).total_count, 0);
  });

  await t.test(
    'money-moving surfaces 403 for every key; the removed current-subscription read answers 410',
    async () => {
      for (const key of [owner.key, ownerRo.key]) {
        for (const url of [
          '/wallet/topup',
          '/subscriptions/purchase',
          '/subscriptions/switch',
          '/subscriptions/auto-renew',
          `/domains/${d}/subscriptions/purchase`,
          `/domains/${d}/subscriptions/switch`,
          `/domains/${d}/subscriptions/auto-renew`,
        ]) {
          const res = await cp.call(key, 'POST', url, {});
          assert.equal(res.statusCode, 403, url);
        }
        assert.equal((await cp.call(key, 'GET', '/billing/subscription/current')).statusCode, 403);
      }
      const gone = await cp.call(owner.key, 'GET', '/subscriptions/current');
      assert.equal(gone.statusCode, 410);
      assert.match(gone.json().error, /removed: use GET \/domains\/\{domain\}\/subscription/);
      // A read-only key reads everything.
      for (const url of ['/wallet', '/invoices', '/statements', '/subscriptions', `/domains/${d}/invoices`])
        await get(ownerRo.key, url);
    },
  );

  await t.test('bad input: paging bounds, ids, domain filter → 400; nothing else read', async () => {
    for (const url of [
      '/invoices?page=0',
      '/invoices?per_page=101',
      '/invoices?per_page=abc',
      '/invoices?kind=period',
      '/subscriptions?status=weird',
      '/wallet/transactions/99999999999',
      '/invoices/2147483648',
      `/statements?domain=${'a'.repeat(300)}`,
      '/statements?domain=not..valid',
    ])
      await get(owner.key, url, 400);
    await get(owner.key, '/invoices/0', 400);
    assert.equal((await cp.call(owner.key, 'GET', '/invoices/abc')).statusCode, 404);
  });

  await t.test(
    'admin: a term the wallet cannot cover stores nothing; a system cancellation falls back to free',
    async () => {
      const created = await ok('plan', 'term-create', 'business', 'Yearly', '--days', '365', '--price', '900000000');
      const id = /plan term (\d+)/.exec(created)![1];
      const balance = (await get(owner.key, '/wallet')).balance_rials;
      const countInvoices = async () => (await cp.database.db.select().from(invoices)).length;
      const n = await countInvoices();
      const r = await admin('subscription', 'create', d, 'business', '--term', id);
      assert.equal(r.code, 1);
      assert.match(r.err.join('\n'), /does not cover Business Yearly/);
      assert.equal((await get(owner.key, '/wallet')).balance_rials, balance);
      assert.equal(await countInvoices(), n);
      assert.equal((await get(owner.key, `/domains/${d}/subscription`)).id, proSubId);
      // Another plan's term is refused; a paid plan needs a term.
      assert.equal((await admin('subscription', 'create', d, 'pro', '--term', id)).code, 1);
      assert.equal((await admin('subscription', 'create', d, 'pro')).code, 1);
      // Unpaid: support collects otherwise; the invoice waits unpaid.
      await ok('subscription', 'create', d2, 'business', '--term', id, '--unpaid');
      const unpaid = await get(owner.key, '/invoices?status=unpaid&kind=subscription');
      assert.equal(unpaid.invoices[0].total_rials, 990_000_000);
      await ok('subscription', 'cancel', d2, 'recycled_domain_id');
      const hist = await get(owner.key, `/domains/${d2}/subscriptions`);
      assert.deepEqual(
        hist.subscriptions.map((s: Json) => [s.plan.slug, s.status, s.cancel_reason ?? null]),
        [
          ['free', 'active', null],
          ['business', 'cancelled', 'recycled_domain_id'],
          ['free', 'cancelled', 'plan_switch'],
        ],
      );
      assert.equal((await admin('subscription', 'cancel', d2, 'domain_deleted')).code, 2);
      assert.equal(
        (await admin('subscription', 'cancel', d2, 'plan_switch')).code,
        1,
        'the free plan is not cancelled',
      );
      await ok('subscription', 'auto-renew', d, 'off');
      assert.equal((await get(owner.key, `/domains/${d}/subscription`)).auto_renew, false);
      const [w] = await cp.database.db.select().from(wallets).where(eq(wallets.userId, owner.id));
      assert.equal(w.balanceRials, balance);
      const live = await cp.database.db.select().from(subscriptions).where(eq(subscriptions.domainName, d2));
      assert.equal(live.filter((s) => s.status === 'active').length, 1);
    },
  );

  await t.test(
    'a control plane that starts with Temporal ensures the lifecycle of every live subscription',
    async () => {
      const queued = async () =>
        (await cp.database.db.select().from(workflowOutbox))
          .filter((e) => e.workflowType === 'subscriptionLifecycle')
          .map((e) => e.workflowId);
      assert.ok((await queued()).includes(`subscription:${proSubId}`), 'queued by the purchase');
      await cp.database.db.delete(workflowOutbox); // as if Temporal had taken them and then lost its state
      const other = await cp.withEnv({ TEMPORAL_ADDRESS: '127.0.0.1:9' });
      await other.ready();
      const ids = await eventuallyValue(async () => {
        const q = await queued();
        return q.length > 0 ? q : undefined;
      });
      assert.deepEqual(ids, [`subscription:${proSubId}`], 'the live paid subscription; free ones have no lifecycle');
    },
  );

  await t.test(
    'the lifecycle judged at later times: the nominated payer renews; then grace, expiry onto free',
    async () => {
      await ok('subscription', 'auto-renew', d, 'on');
      const put = await cp.call(owner.key, 'PUT', `/domains/${d}/billing-member`, { user_id: adminMember.id });
      assert.equal(put.statusCode, 200, put.body);
      await ok('wallet', 'topup', 'admin@example.org', '3000000');
      const sub = await get(owner.key, `/domains/${d}/subscription`);
      const start = Date.parse(sub.started_at);
      const DAY = 86_400_000;
      assert.equal(Date.parse(sub.expires_at), start + 30 * DAY);

      // A second after the term: renewed from the payer's wallet, the term extended from its old end.
      let r = await advanceSubscription(cp.app, proSubId, new Date(start + 30 * DAY + 1000));
      assert.deepEqual(r, { status: 'active', next_at_ms: start + 45 * DAY }, 'next: the quota window closing');
      const renewed = await get(adminMember.key, `/subscriptions/${proSubId}`);
      assert.equal(renewed.user_id, adminMember.id, 'the nominated payer pays from now on');
      assert.equal(Date.parse(renewed.expires_at), start + 60 * DAY);
      assert.equal((await get(adminMember.key, '/wallet')).balance_rials, 250_000);
      const [inv] = (await get(adminMember.key, '/invoices?kind=subscription')).invoices;
      assert.equal(inv.total_rials, 2_750_000);
      assert.equal((await get(adminMember.key, `/invoices/${inv.id}`)).user.email, 'admin@example.org');
      assert.equal((await get(owner.key, '/statements')).total_count, 1, 'windows without traffic bill nothing');
      // Judged again at the same moment: nothing more happens.
      assert.deepEqual(await advanceSubscription(cp.app, proSubId, new Date(start + 30 * DAY + 1000)), r);

      // The second term's end: 250,000 does not cover it; grace for BILLING_GRACE_DAYS.
      r = await advanceSubscription(cp.app, proSubId, new Date(start + 60 * DAY + 1000));
      assert.deepEqual(r, { status: 'grace', next_at_ms: start + 67 * DAY }, 'next: the end of grace');
      const grace = await get(owner.key, `/domains/${d}/subscription`);
      assert.equal(grace.status, 'grace');
      assert.equal(Date.parse(grace.grace_until), start + 67 * DAY);
      assert.ok(grace.quota_period_start, 'a subscription in grace shows its quota window');
      // Grace over: expired, the domain on the free plan.
      r = await advanceSubscription(cp.app, proSubId, new Date(start + 67 * DAY + 1000));
      assert.deepEqual(r, { status: 'expired', next_at_ms: null });
      assert.equal((await get(owner.key, `/domains/${d}/subscription`)).plan.slug, 'free');
      const kinds = (await get(adminMember.key, '/notifications')).notifications.map((n: Json) => n.kind);
      for (const k of ['billing.renewed', 'billing.renewal_failed', 'billing.expired']) assert.ok(kinds.includes(k), k);
      assert.equal(await advanceSubscription(cp.app, 999_999, new Date()), null);
    },
  );

  await t.test(
    'admin: a new plan and its terms, listed; wallet and invoices listed; bad arguments are usage errors',
    async () => {
      assert.match(
        await ok(
          'plan',
          'create',
          'starter',
          'Starter',
          '--price',
          '900000',
          '--traffic-price',
          '20000',
          '--like',
          'pro',
        ),
        /created plan starter/,
      );
      assert.equal((await admin('plan', 'create', 'starter', 'Again')).code, 1, 'a plan slug is unique');
      assert.equal((await admin('plan', 'create', 'Bad Slug', 'x')).code, 1);
      await ok(
        'plan',
        'term-create',
        'starter',
        'Quarter',
        '--days',
        '90',
        '--price',
        '2400000',
        '--quota-reset-days',
        '30',
      );
      assert.match(await ok('plan', 'terms'), /\tstarter\tQuarter\t90\t2400000\t30/);
      const pricing = (await get(owner.key, '/usage/traffic')).pricing;
      assert.deepEqual(
        pricing.find((p: Json) => p.slug === 'starter'),
        {
          plan_id: pricing.find((p: Json) => p.slug === 'starter').plan_id,
          slug: 'starter',
          name: 'Starter',
          max_traffic_gb: 1000,
          traffic_price_rials_per_gb: 20000,
        },
      );
      assert.match(await ok('wallet', 'show', 'other@example.org'), /other@example.org: 0 rials/);
      assert.match(await ok('invoice', 'list', 'owner@example.org'), /\tmanual\tpaid\t220061\tshop.example.org\t/);
      for (const argv of [
        ['plan', 'term-create', 'starter', 'X', '--price', '1'],
        ['plan', 'term-create', 'starter', 'X', '--days', 'many', '--price', '1'],
        ['wallet', 'topup', 'owner@example.org', '100', '--status', 'maybe'],
        ['invoice', 'create', 'owner@example.org'],
        ['invoice', 'create', 'owner@example.org', '--item', 'no price'],
        ['invoice', 'create', 'owner@example.org', '--item', 'x|1|1', '--issued-at', 'yesterday'],
        ['subscription', 'auto-renew', d, 'maybe'],
      ])
        assert.equal((await admin(...argv)).code, 2, argv.join(' '));
      for (const argv of [
        ['plan', 'term-create', 'starter', 'X', '--days', '0', '--price', '1'],
        ['wallet', 'topup', 'owner@example.org', '0'],
        ['invoice', 'create', 'owner@example.org', '--item', 'x|0|1'],
        ['invoice', 'create', 'owner@example.org', '--item', `x|1|${10 ** 15}`],
        ['billing-profile', 'set', 'owner@example.org', '--birth-date', '1 May'],
      ])
        assert.equal((await admin(...argv)).code, 1, argv.join(' '));
    },
  );

  await t.test('VAT rate is configurable (BILLING_VAT_PERCENT); trials carry no invoice', async () => {
    const admin9 = adminOf(cp, { ...cp.config.billing, vatPercent: 9 });
    const r = await admin9('invoice', 'create', 'other@example.org', '--item', 'Consulting|1|1000000');
    assert.equal(r.code, 0, r.err.join('\n'));
    assert.match(r.out[0], /1000000 \+ VAT 90000 = 1090000 rials/);
    await ok('subscription', 'create', 'other.example.net', 'pro', '--trial');
    const s = await get(other.key, '/domains/other.example.net/subscription');
    assert.equal(s.is_trial, true);
    assert.equal(s.auto_renew, false);
    assert.equal(Date.parse(s.expires_at) - Date.parse(s.started_at), 14 * 86_400_000);
    assert.equal((await get(other.key, '/invoices?kind=subscription')).total_count, 0);
  });
});
