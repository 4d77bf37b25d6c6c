// The web panel in chromium, a domain's page beyond the first browser test (panel-browser.test.ts; the two files run
// in parallel): rules edited with each type's form (a refused save shows the API's error), reordered by drag and with
// the keyboard; the analytics charts drawn from shipped request logs; a phone-sized screen; Settings → Sessions and
// Password. Screenshots in test-artifacts/panel/.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { signIn, startPanelBrowser } from '../helpers/panel-browser.js';
import { shipper, type Rec } from '../../control-plane/src/areas/analytics/test-log.js';

const DOMAIN = 'panel-rules.example';

test('the web panel in chromium: rules forms, drag reorder, analytics', async (t) => {
  const pb = await startPanelBrowser(t, 'rules@browser.example');
  const { cp, owner, page, base } = pb;
  await cp.domain(owner.key, DOMAIN);
  await signIn(page, base, owner.email, pb.password);
  const rulesOf = async (type: string) =>
    (await cp.call(owner.key, 'GET', `/domains/${DOMAIN}/rules/${type}/`)).json<Record<string, unknown>[]>();

  await t.test('overview: check-ns answer, SSL status and coverage, developer mode, cache purge', async () => {
    const proxied = await cp.call(owner.key, 'POST', `/domains/${DOMAIN}/records/`, {
      name: 'www',
      type: 'A',
      destination: '192.0.2.10',
      proxied: true,
    });
    assert.equal(proxied.statusCode, 200, proxied.body);
    await page.goto(`${base}/panel/domains/${DOMAIN}`);
    await page.getByText('Set these nameservers at your registrar').waitFor();
    await page.getByRole('button', { name: 'Check nameservers now' }).click();
    // The answer in words: the delegation's state, or the API's error (in tests no workflow service runs: 503).
    const nsAnswer = page.locator('main [role=alert], main [role=status]').filter({ hasText: /\S/ }).first();
    await nsAnswer.waitFor();
    t.diagnostic(`check-ns: ${await nsAnswer.innerText()}`);
    const ssl = page.getByRole('region', { name: 'SSL' });
    await ssl.getByText('Status: missing').waitFor();
    await ssl.getByRole('cell', { name: `www.${DOMAIN}` }).waitFor();
    await page.getByRole('button', { name: 'Turn on for 3 hours' }).click();
    await page.getByRole('status').filter({ hasText: 'Developer mode is on for 3 hours.' }).waitFor();
    await page.getByText(/On until .*: the cache is bypassed\./).waitFor();
    await page.getByRole('button', { name: 'Purge everything' }).click();
    await page.locator('[role=status], [role=alert]').filter({ hasText: /purg/i }).first().waitFor();
    await shot('09b-domain-overview');
    await page.getByRole('button', { name: 'Turn off' }).click();
    await page.getByRole('status').filter({ hasText: 'Developer mode is off.' }).waitFor();
  });

  await t.test('rules: a redirect made with its form; a refused save shows the API error', async () => {
    await page.goto(`${base}/panel/domains/${DOMAIN}/rules`);
    await page.getByRole('button', { name: 'New Redirect rule' }).click();
    const form = page.getByRole('form', { name: 'New Redirect rule' });
    await form.getByLabel('Target (required)').fill('ftp://files.example/');
    await form.getByRole('button', { name: 'Save rule' }).click();
    const refused = form.getByRole('alert');
    await refused.waitFor();
    t.diagnostic(`refused save: ${await refused.innerText()}`);
    assert.match(await refused.innerText(), /target/);
    await shot('10-rule-refused');
    await form.getByLabel('Target (required)').fill('https://www.panel-rules.example/$1');
    await form.getByLabel('Status').selectOption('301');
    await form.getByLabel('Keep the query string').uncheck();
    await form.getByText('Where it applies').click();
    await form.getByLabel('Paths', { exact: true }).fill('/old/*\n/older/*');
    await form.getByRole('button', { name: 'Save rule' }).click();
    await page.getByRole('status').filter({ hasText: 'Redirect rule created.' }).waitFor();
    const [made] = await rulesOf('redirect');
    assert.equal(made!.target, 'https://www.panel-rules.example/$1');
    assert.equal(made!.status_code, 301);
    assert.equal(made!.keep_query, false);
    assert.deepEqual(made!.path_includes, ['/old/*', '/older/*']);
    await page.getByRole('cell', { name: /Target: https:\/\/www\.panel-rules\.example\/\$1/ }).waitFor();

    // Edit: the form starts from the rule; the JSON view carries the rest.
    await page.getByRole('button', { name: `Edit rule ${String(made!.id)}` }).click();
    const edit = page.getByRole('form', { name: `Edit Redirect rule ${String(made!.id)}` });
    assert.equal(await edit.getByLabel('Target (required)').inputValue(), 'https://www.panel-rules.example/$1');
    await edit.getByLabel('Status').selectOption('308');
    await edit.getByText('Advanced: the rule as JSON').click();
    await edit.getByRole('button', { name: 'Edit as JSON' }).click();
    const json = edit.getByLabel('Rule (JSON, as the API takes it)');
    assert.match(await json.inputValue(), /"status_code": 308/);
    await json.fill((await json.inputValue()).replace('"priority": 100', '"priority": 5'));
    await edit.getByRole('button', { name: 'Back to the form' }).click();
    await edit.getByRole('button', { name: 'Save rule' }).click();
    await page
      .getByRole('status')
      .filter({ hasText: `Rule ${String(made!.id)} saved.` })
      .waitFor();
    const [saved] = await rulesOf('redirect');
    assert.equal(saved!.status_code, 308);
    assert.equal(saved!.priority, 5);
  });

  await t.test('rules: other types through their forms (rate limit, headers, basic auth)', async () => {
    await page.getByLabel('Rule type').selectOption({ label: 'Rate limit' });
    await page.getByRole('button', { name: 'New Rate limit rule' }).click();
    let form = page.getByRole('form', { name: 'New Rate limit rule' });
    await form.getByLabel('Requests (required)').fill('100');
    await form.getByLabel('Per (s) (required)').fill('60');
    await form.getByLabel('Counted per').selectOption('ip_path');
    await form.getByLabel('Above the limit').selectOption('captcha');
    await shot('11-rule-form-rate-limit');
    await form.getByRole('button', { name: 'Save rule' }).click();
    await page.getByRole('status').filter({ hasText: 'Rate limit rule created.' }).waitFor();
    const [limit] = await rulesOf('rate_limit');
    assert.deepEqual([limit!.requests, limit!.period_s, limit!.key, limit!.action], [100, 60, 'ip_path', 'captcha']);

    await page.getByLabel('Rule type').selectOption({ label: 'Headers' });
    await page.getByRole('button', { name: 'New Headers rule' }).click();
    form = page.getByRole('form', { name: 'New Headers rule' });
    await form.getByLabel('Response headers').fill('set X-Frame-Options: DENY\nremove Server');
    await form.getByRole('button', { name: 'Save rule' }).click();
    await page.getByRole('status').filter({ hasText: 'Headers rule created.' }).waitFor();
    const [headers] = await rulesOf('header');
    assert.deepEqual(headers!.response_headers, [
      { op: 'set', name: 'x-frame-options', value: 'DENY' },
      { op: 'remove', name: 'server' },
    ]);

    await page.getByLabel('Rule type').selectOption({ label: 'Basic auth' });
    await page.getByRole('button', { name: 'New Basic auth rule' }).click();
    form = page.getByRole('form', { name: 'New Basic auth rule' });
    await form.getByLabel('Realm').fill('Staff');
    await form.getByLabel('Users').fill('staff:correct horse battery');
    await form.getByLabel('SSO accounts').fill(owner.email);
    await form.getByRole('button', { name: 'Save rule' }).click();
    await page.getByRole('status').filter({ hasText: 'Basic auth rule created.' }).waitFor();
    const [auth] = await rulesOf('basic_auth');
    assert.equal(auth!.realm, 'Staff');
    assert.deepEqual((auth!.sso as { emails: string[] }).emails, [owner.email]);
    assert.ok(!JSON.stringify(auth).includes('correct horse'), 'the password is never read back');
  });

  await t.test('rules: reordered by drag, and with the keyboard', async () => {
    for (const target of ['https://two.example/', 'https://three.example/'])
      assert.equal(
        (await cp.call(owner.key, 'POST', `/domains/${DOMAIN}/rules/redirect/`, { target })).statusCode,
        200,
      );
    const order = async () => (await rulesOf('redirect')).map((r) => r.target);
    assert.deepEqual(await order(), [
      'https://www.panel-rules.example/$1',
      'https://two.example/',
      'https://three.example/',
    ]);
    await page.getByLabel('Rule type').selectOption({ label: 'Redirect' });
    const rows = page.locator('table.rules tbody tr');
    await rows.nth(2).waitFor();
    // The third rule dragged by its handle onto the first row.
    await rows.nth(2).locator('td.handle').dragTo(rows.nth(0));
    await page.getByRole('status').filter({ hasText: 'moved to position 1.' }).waitFor();
    assert.deepEqual(await order(), [
      'https://three.example/',
      'https://www.panel-rules.example/$1',
      'https://two.example/',
    ]);
    await shot('12-rules-reordered');
    // The keyboard way: focus the move button, press Enter.
    const second = (await rulesOf('redirect'))[1]!.id;
    await page.getByRole('button', { name: `Move rule ${String(second)} down` }).focus();
    await page.keyboard.press('Enter');
    await page
      .getByRole('status')
      .filter({ hasText: `Rule ${String(second)} moved to position 3.` })
      .waitFor();
    assert.deepEqual(await order(), [
      'https://three.example/',
      'https://two.example/',
      'https://www.panel-rules.example/$1',
    ]);
  });

  await t.test(
    'analytics: requests, bandwidth, cache ratio, status codes, top countries from shipped logs',
    async () => {
      const now = Date.now();
      const records: Rec[] = [];
      // 40 requests over the last three hours: 30 from 8.8.8.8 (US), 10 from 193.0.6.139 (NL); 10 cache HITs and 10
      // MISSes (50 % from the cache); 32 answered 200 and 8 answered 404; 1000 bytes each.
      for (let i = 0; i < 40; i++)
        records.push({
          t: now - 3 * 3_600_000 + i * 240_000,
          host: `www.${DOMAIN}`,
          path: '/',
          method: 'GET',
          status: i % 5 === 4 ? 404 : 200,
          bytes: 1000,
          cache: i < 10 ? 'HIT' : i < 20 ? 'MISS' : '',
          rules: [],
          ms: 1,
          upstreamMs: i < 10 ? -1 : 5,
          peer: i % 4 === 3 ? '193.0.6.139' : '8.8.8.8',
        });
      await shipper(cp)('edge-panel', records);
      // The key's own budget before and after the panel's reads: browser traffic is counted apart (spec: it does not
      // consume the key's 300/min).
      const remaining = async () =>
        Number((await cp.call(owner.key, 'GET', '/domains/')).headers['ratelimit-remaining']);
      const before = await remaining();

      await page.goto(`${base}/panel/domains/${DOMAIN}/analytics`);
      await page.getByText('Requests per hour: 40 in all').waitFor();
      await page.getByText('Bytes sent to clients per hour: 40 KB in all').waitFor();
      const cache = page.getByRole('region', { name: 'Cache' });
      await cache.getByText('50.0 %', { exact: true }).waitFor();
      const statuses = page.getByRole('region', { name: 'Status codes' });
      await statuses.getByRole('listitem', { name: '4xx: 8 20.0 %' }).waitFor();
      await statuses.getByRole('listitem', { name: '2xx: 32 80.0 %' }).waitFor();
      const countries = page.getByRole('region', { name: 'Top countries' });
      await countries.getByRole('listitem', { name: 'US: 30 75.0 %' }).waitFor();
      await countries.getByRole('listitem', { name: 'NL: 10 25.0 %' }).waitFor();
      await shot('13-analytics');
      await page.getByLabel('Period').selectOption({ label: 'Last 30 days' });
      await page.getByText('Requests per day: 40 in all').waitFor();

      assert.equal(await remaining(), before - 1, 'the panel did not use the key budget');
    },
  );

  await t.test('a phone-sized screen: no sideways scrolling on the domain, DNS and rules pages', async () => {
    const phone = await pb.newPage({ width: 390, height: 844 });
    await signIn(phone.page, base, owner.email, pb.password);
    for (const tab of ['overview', 'dns', 'rules', 'analytics']) {
      await phone.page.goto(`${base}/panel/domains/${DOMAIN}/${tab}`);
      await phone.page.getByRole('heading', { name: DOMAIN }).waitFor();
      await phone.page.waitForLoadState('networkidle');
      const [scroll, width] = await phone.page.evaluate(() => {
        const d = (globalThis as unknown as { document: { documentElement: { scrollWidth: number } } }).document;
        return [d.documentElement.scrollWidth, (globalThis as unknown as { innerWidth: number }).innerWidth];
      });
      await pb.shot(`14-phone-${tab}`, phone.page);
      assert.ok(scroll <= width, `${tab}: the page is ${scroll} px wide on a ${width} px screen`);
    }
    // Signed out, so that the sessions test below sees two browsers.
    await phone.page.getByRole('button', { name: 'Sign out' }).click();
    await phone.page.getByRole('form', { name: 'Sign in' }).waitFor();
    await phone.context.close();
  });

  await t.test('CSRF: a write from the signed-in page without the token is refused', async () => {
    await page.goto(`${base}/panel/`);
    await page.getByRole('heading', { name: 'Domains' }).waitFor();
    const [status, body] = await page.evaluate(async () => {
      const res = await fetch('/domains/', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'csrf-less.example' }),
      });
      return [res.status, await res.text()];
    });
    assert.equal(status, 403);
    assert.match(body, /X-CSRF-Token/);
    assert.equal((await cp.call(owner.key, 'GET', '/domains/csrf-less.example')).statusCode, 404);
  });

  await t.test('settings: sessions listed, other sessions signed out; password changed', async () => {
    // A second browser of the same person.
    const laptop = await pb.newPage();
    await signIn(laptop.page, base, owner.email, pb.password);

    await page.goto(`${base}/panel/`);
    await page.getByRole('link', { name: 'Settings' }).click();
    await page.getByRole('link', { name: 'Sessions' }).click();
    await page.getByRole('heading', { name: 'Sessions' }).waitFor();
    const rows = page.locator('tr[data-session-id]');
    await rows.nth(1).waitFor();
    assert.equal(await rows.count(), 2);
    await page.getByText('This browser').waitFor();
    await shot('15-sessions');
    await page.getByRole('button', { name: 'Sign out all other sessions' }).click();
    await page.getByRole('status').filter({ hasText: '1 other session ended' }).waitFor();
    // The message shows before the list is read again: wait for the ended session's row to go.
    await rows.nth(1).waitFor({ state: 'detached' });
    assert.equal(await rows.count(), 1);
    // The laptop's next request finds its session ended and shows the sign-in page.
    await laptop.page.getByRole('link', { name: 'Settings' }).click();
    await laptop.page.getByRole('status').filter({ hasText: 'Your session has ended' }).waitFor();
    await laptop.page.getByRole('form', { name: 'Sign in' }).waitFor();
    await laptop.context.close();

    await page.getByRole('link', { name: 'Password' }).click();
    const form = page.getByRole('form', { name: 'Password' });
    await form.getByLabel('Current password').fill('not my password');
    await form.getByLabel('New password', { exact: true }).fill('a new panel password');
    await form.getByLabel('New password again').fill('a new panel password');
    await form.getByRole('button', { name: 'Change password' }).click();
    await form.getByRole('alert').filter({ hasText: 'the current password is wrong' }).waitFor();
    await form.getByLabel('Current password').fill(pb.password);
    await form.getByLabel('New password again').fill('a different one');
    await form.getByRole('button', { name: 'Change password' }).click();
    await form.getByRole('alert').filter({ hasText: 'differ' }).waitFor();
    await form.getByLabel('New password', { exact: true }).fill('short');
    await form.getByLabel('New password again').fill('short');
    await form.getByRole('button', { name: 'Change password' }).click();
    await form.getByRole('alert').filter({ hasText: 'password must be at least 10 characters' }).waitFor();
    await shot('16-password');
    await form.getByLabel('New password', { exact: true }).fill('a new panel password');
    await form.getByLabel('New password again').fill('a new panel password');
    await form.getByRole('button', { name: 'Change password' }).click();
    await page.getByRole('status').filter({ hasText: 'Your password is changed' }).waitFor();
    await signIn(page, base, owner.email, 'a new panel password');
  });

  await t.test('no script errors and no CSP violations on any page', () => {
    assert.deepEqual(pb.problems, []);
  });

  function shot(name: string) {
    return pb.shot(name);
  }
});
