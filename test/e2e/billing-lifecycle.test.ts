// The subscription lifecycle on a real Temporal dev server (issue 16 item 3, Must show): the control plane and the
// workflows worker as processes, a billing day of 2 seconds. A trial ends on the free plan without grace; a term
// renews from the wallet, then (the wallet short) enters grace and expires onto the free plan; a wallet topped up
// during grace renews at once; a closed quota window with traffic over the allowance is billed by a period invoice.
// The worker is killed while the timers run and started again: no workflow is lost.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pack } from 'msgpackr';
import { ensureNodeToken } from '@platform/shared/node-token';
import { eventually, startLifecycle } from '../helpers/workflows-harness.js';
import { lifecycleAdmin } from '../helpers/lifecycle-admin.js';

type Json = Record<string, any>;
const DAY_MS = 2000;
const BILLING_ENV = { BILLING_DAY_SECONDS: '2', BILLING_GRACE_DAYS: '5', BILLING_TRIAL_DAYS: '2' };
const LONG = 180_000;

test(
  'subscription lifecycle on Temporal: trial → free, renewal → grace → expired, grace → renewed, period invoice; worker killed',
  { timeout: 900_000 },
  async (t) => {
    const lc = await startLifecycle('billing-lifecycle', BILLING_ENV);
    const adm = lifecycleAdmin(lc, BILLING_ENV);
    t.after(async () => {
      await adm.close();
      await lc.close();
    });
    const admin = adm.run;
    /** GET as `key` (null: the harness's own account). */
    const get = async (key: string | null, path: string): Promise<Json> => {
      if (key === null) {
        const r = await lc.api('GET', path);
        assert.equal(r.status, 200, `${path}: ${JSON.stringify(r.body)}`);
        return r.body as Json;
      }
      const res = await fetch(`${lc.apiUrl}${path}`, { headers: { authorization: `Bearer ${key}` } });
      assert.equal(res.status, 200, `${path}: ${res.status}`);
      return (await res.json()) as Json;
    };
    const newAccount = async (email: string, domain: string) => {
      await admin('user', 'create', email);
      const key = (await admin('key', 'create', email)).trim();
      const res = await fetch(`${lc.apiUrl}/domains/`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name: domain }),
      });
      assert.equal(res.status, 200, await res.text());
      return key;
    };
    const termId = async (...argv: string[]) => /plan term (\d+)/.exec(await admin('plan', 'term-create', ...argv))![1];
    const current = (key: string | null, d: string) => get(key, `/domains/${d}/subscription`);
    const historyOf = async (key: string | null, d: string) =>
      (await get(key, `/domains/${d}/subscriptions`)).subscriptions as Json[];

    const ownerEmail: string = (await get(null, '/account/whoami')).user.email;
    for (const d of ['trial.example.org', 'renew.example.org'])
      assert.equal((await lc.api('POST', '/domains/', { name: d })).status, 200);
    const meteredKey = await newAccount('metered@example.org', 'metered.example.org');

    // Fifteen days (30 s): long enough for the setup below before the terms end, even on a loaded machine.
    const fifteenDays = await termId('pro', 'Fifteen days', '--days', '15', '--price', '1000000');
    const month = await termId('pro', 'Month', '--days', '30', '--price', '0', '--quota-reset-days', '10');
    // 2,300,000 covers the purchase and one renewal (1,100,000 each with VAT), not a second.
    await admin('wallet', 'topup', ownerEmail, '2300000');

    // Metered first: every byte over an allowance of 0 GB costs 15,000 rials per started GB; windows of 10 days
    // (20 s). 1.5 GB served in the first window, shipped as an edge node ships its request log.
    await admin('subscription', 'create', 'metered.example.org', 'pro', '--term', month);
    await admin('plan', 'override', 'metered.example.org', 'max_traffic_gb', '0');
    const meteredSub = await current(meteredKey, 'metered.example.org');
    {
      const record = {
        t: Date.parse(meteredSub.started_at) + 500,
        host: 'metered.example.org',
        path: '/big.iso',
        method: 'GET',
        status: 200,
        bytes: 1_500_000_000,
        cache: 'MISS',
        rules: [],
        ms: 5,
        upstreamMs: 3,
        peer: '192.0.2.7',
      };
      const res = await fetch(`${lc.apiUrl}/internal/request-logs`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ensureNodeToken(lc.dataDir)}`, 'content-type': 'application/x-msgpack' },
        body: pack({ node: 'edge-billing', records: [record] }),
      });
      assert.equal(res.status, 200, await res.text());
    }

    const subId = (out: string) => Number(/subscription (\d+):/.exec(out)![1]);
    const trialId = subId(
      await admin('subscription', 'create', 'trial.example.org', 'pro', '--trial', '--term', fifteenDays),
    );
    const renewId = subId(
      await admin('subscription', 'create', 'renew.example.org', 'pro', '--term', fifteenDays, '--auto-renew'),
    );
    const subOf = async (d: string, id: number) => (await historyOf(null, d)).find((x) => x.id === id)!;
    const trial = await subOf('trial.example.org', trialId);
    assert.equal(trial.is_trial, true);
    assert.equal(trial.auto_renew, false);
    assert.equal(Date.parse(trial.expires_at) - Date.parse(trial.started_at), 15 * DAY_MS);
    assert.equal((await get(null, '/invoices?kind=subscription')).total_count, 1, 'a trial is not invoiced');
    const renew = await subOf('renew.example.org', renewId);
    assert.equal(renew.plan_term_id, Number(fifteenDays));
    assert.equal((await get(null, '/wallet')).balance_rials, 1_200_000);

    await t.test('the worker killed while the timers run: nothing moves until it is back', async () => {
      await eventually(
        'the lifecycle workflows to run',
        async () => {
          const d = await lc.temporal.client.workflow.getHandle(`subscription:${renew.id}`).describe();
          if (d.status.name !== 'RUNNING') throw new Error(`subscription:${renew.id} is ${d.status.name}`);
          return true;
        },
        LONG,
      );
      await lc.stopWorker('SIGKILL');
      const killedBeforeTheEnd = Date.now() < Date.parse(trial.expires_at) - 1000;
      const end = Math.max(Date.parse(trial.expires_at), Date.parse(renew.expires_at)) + 1000;
      await new Promise((r) => setTimeout(r, Math.max(0, end - Date.now()))); // past the trial's and the term's end
      if (killedBeforeTheEnd) {
        assert.equal((await current(null, 'trial.example.org')).id, trial.id, 'no worker: the trial goes on');
        assert.equal((await current(null, 'renew.example.org')).expires_at, renew.expires_at, 'and nothing renews');
      } else t.diagnostic('the setup outlasted the terms on this machine: the worker was killed after they ended');
      await lc.startWorker();
    });

    await t.test('trial → the free plan at expiry, no grace; cancel_reason trial_ended', async () => {
      const now = await eventually(
        'the trial to end',
        async () => {
          const cur = await current(null, 'trial.example.org');
          return cur.plan.slug === 'free' ? cur : undefined;
        },
        LONG,
      );
      assert.equal(now.status, 'active');
      assert.equal(now.expires_at, null);
      const ended = (await historyOf(null, 'trial.example.org')).find((s) => s.id === trial.id)!;
      assert.equal(ended.status, 'cancelled');
      assert.equal(ended.cancel_reason, 'trial_ended');
      assert.equal(ended.grace_until, null, 'a trial has no grace');
    });

    await t.test('auto-renew: renewed and invoiced while the wallet covers it, then grace, then expired', async () => {
      await eventually(
        'the renewed subscription to expire',
        async () => ((await current(null, 'renew.example.org')).plan.slug === 'free' ? true : undefined),
        LONG,
      );
      const old = (await historyOf(null, 'renew.example.org')).find((s) => s.id === renew.id)!;
      assert.equal(old.status, 'expired');
      // One renewal: two terms; then grace of 5 days after the second term's end.
      assert.equal(Date.parse(old.expires_at) - Date.parse(old.started_at), 2 * 15 * DAY_MS);
      assert.equal(Date.parse(old.grace_until) - Date.parse(old.expires_at), 5 * DAY_MS);
      const invoices = (await get(null, '/invoices?kind=subscription')).invoices.filter(
        (i: Json) => i.subscription_id === renew.id,
      );
      assert.equal(invoices.length, 2, 'the purchase and one renewal');
      for (const i of invoices) {
        assert.equal(i.status, 'paid');
        assert.equal(i.total_rials, 1_100_000);
      }
      assert.ok(invoices.some((i: Json) => /renewal/.test(i.items[0].description)));
      assert.equal((await get(null, '/wallet')).balance_rials, 100_000);
      const kinds = (await get(null, '/notifications?limit=100')).notifications.map((n: Json) => n.kind);
      for (const k of ['billing.renewed', 'billing.renewal_failed', 'billing.expired', 'billing.trial_ended'])
        assert.ok(kinds.includes(k), `${k} in ${kinds.join(', ')}`);
    });

    await t.test('a closed quota window with traffic over the allowance: a period invoice, no VAT', async () => {
      const statement = await eventually(
        'the period statement',
        async () => (await get(meteredKey, '/statements')).statements[0] as Json | undefined,
        LONG,
      );
      assert.equal(statement.kind, 'period');
      assert.equal(statement.subscription_id, meteredSub.id);
      assert.equal(statement.period_start, meteredSub.started_at);
      assert.equal(Date.parse(statement.period_end) - Date.parse(statement.period_start), 10 * DAY_MS);
      assert.equal(statement.tax_rials, 0);
      assert.deepEqual(
        statement.items.map((i: Json) => [i.quantity, i.unit_price_rials, i.total_rials]),
        [[2, 15000, 30000]],
      );
      assert.equal(statement.status, 'unpaid', 'the wallet is empty');
      // Later windows without traffic bill nothing; the statement is not an invoice on GET /invoices/{id}.
      const res = await fetch(`${lc.apiUrl}/invoices/${statement.id}`, {
        headers: { authorization: `Bearer ${meteredKey}` },
      });
      assert.equal(res.status, 404);
    });

    await t.test('grace → renewed at once when the wallet is topped up (the workflow is signalled)', async () => {
      const key = await newAccount('grace@example.org', 'grace.example.org');
      await admin('wallet', 'topup', 'grace@example.org', '1100000');
      // Four days (8 s): the renewed term lasts long enough to be seen before it ends again.
      const fourDays = await termId('pro', 'Four days', '--days', '4', '--price', '1000000');
      await admin('subscription', 'create', 'grace.example.org', 'pro', '--term', fourDays, '--auto-renew');
      const sub = await current(key, 'grace.example.org');
      const inGrace = await eventually(
        'grace',
        async () => {
          const cur = await current(key, 'grace.example.org');
          return cur.status === 'grace' ? cur : undefined;
        },
        LONG,
      );
      assert.equal(inGrace.id, sub.id);
      assert.equal(Date.parse(inGrace.grace_until) - Date.parse(inGrace.expires_at), 5 * DAY_MS);
      await admin('wallet', 'topup', 'grace@example.org', '1100000');
      const renewed = await eventually(
        'the renewal',
        async () => {
          const cur = await current(key, 'grace.example.org');
          return cur.status === 'active' && cur.id === sub.id ? cur : undefined;
        },
        LONG,
      );
      assert.equal(renewed.grace_until, null);
      assert.equal(Date.parse(renewed.expires_at) - Date.parse(renewed.started_at), 2 * 4 * DAY_MS);
      assert.equal(renewed.plan.slug, 'pro');
      assert.equal((await get(key, '/invoices?kind=subscription')).total_count, 2);
    });
  },
);
