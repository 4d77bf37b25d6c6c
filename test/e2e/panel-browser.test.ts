// The web panel in a real browser: Debian's chromium (CHROMIUM_PATH, default /usr/bin/chromium; .ci/run installs it)
// driven by playwright-core against a control plane listening on 127.0.0.1. Signs in, creates a key and sees it
// once, uses it, revokes it and sees the API refuse it; adds a domain and records, imports a zone file, toggles a
// rule. Screenshots of each page go to test-artifacts/panel/ (ignored by git).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startPanelBrowser } from '../helpers/panel-browser.js';

/** The first page's JavaScript budget (issue 20). */
const JS_BUDGET_BYTES = 200 * 1024;

test('the web panel in chromium: sign-in, API keys, domains, records, zone import, rules', async (t) => {
  const pb = await startPanelBrowser(t, 'panel@browser.example');
  const { cp, owner, base, context, page, problems } = pb;
  const PASSWORD = pb.password;
  const shot = (_page: unknown, name: string) => pb.shot(name);

  await t.test('the page: strict CSP, JavaScript under the budget', async () => {
    const html = await fetch(`${base}/panel/`);
    assert.equal(html.status, 200);
    const csp = html.headers.get('content-security-policy') ?? '';
    assert.match(csp, /default-src 'none'/);
    assert.match(csp, /script-src 'self'(;|$)/);
    assert.doesNotMatch(csp, /unsafe/);
    const js = await fetch(`${base}/panel/assets/panel.js`);
    const bytes = (await js.arrayBuffer()).byteLength;
    t.diagnostic(`panel.js: ${bytes} bytes (budget ${JS_BUDGET_BYTES})`);
    assert.ok(bytes < JS_BUDGET_BYTES, `panel.js is ${bytes} bytes`);
  });

  await t.test('sign in with the keyboard; a wrong password shows the API error', async () => {
    await page.goto(`${base}/panel/`);
    await page.getByLabel('Email').fill(owner.email);
    await page.getByLabel('Password').fill('wrong password');
    await page.keyboard.press('Enter');
    await page.getByRole('alert').filter({ hasText: 'invalid email or password' }).waitFor();
    await shot(page, '01-sign-in');
    await page.getByLabel('Password').fill(PASSWORD);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Domains' }).waitFor();
    const cookies = await context.cookies();
    const session = cookies.find((c) => c.name === 'session');
    assert.ok(session?.httpOnly);
    assert.equal(session?.sameSite, 'Lax');
  });

  let key = '';
  await t.test('Settings → API keys: create a key, see it once, use it, see its use, revoke it', async () => {
    await page.getByRole('link', { name: 'Settings' }).click();
    await page.getByRole('heading', { name: 'API keys' }).waitFor();
    await page.getByLabel('Name').fill('ci deploy');
    await page.getByLabel('Expires').selectOption('90');
    await page.getByRole('button', { name: 'Create key' }).click();
    const shown = page.getByTestId('new-key');
    await shown.waitFor();
    key = await shown.inputValue();
    assert.match(key, /^svc_[A-Za-z0-9]{65}$/);
    await shot(page, '02-api-key-created');
    await page.getByRole('button', { name: 'I have copied it' }).click();
    await page.reload();
    await page.getByRole('cell', { name: 'ci deploy' }).waitFor();
    assert.ok(!(await page.content()).includes(key), 'the key is shown once');

    // Used from outside the browser, as curl would.
    const used = await fetch(`${base}/domains/`, { headers: { authorization: `Bearer ${key}` } });
    assert.equal(used.status, 200);
    await page.reload();
    const row = page.locator('tr', { has: page.getByRole('cell', { name: 'ci deploy' }) });
    await row.getByRole('cell', { name: 'Never used' }).waitFor({ state: 'detached' });
    await row.getByRole('button', { name: 'Usage' }).click();
    await page.getByText('Requests per day, last 30 days: 1 in all').waitFor();
    await shot(page, '03-api-keys-usage');

    await row.getByRole('button', { name: 'Revoke' }).click();
    await row.getByRole('cell', { name: 'revoked' }).waitFor();
    const refused = await fetch(`${base}/domains/`, { headers: { authorization: `Bearer ${key}` } });
    assert.equal(refused.status, 401);
    assert.deepEqual(await refused.json(), { error: 'invalid API key' });
  });

  await t.test('domains: add a domain, add and edit records, import a zone file with a preview', async () => {
    await page.getByRole('link', { name: 'Domains' }).click();
    await page.getByLabel('Domain name').fill('panel-browser.example');
    await page.getByRole('button', { name: 'Add domain' }).click();
    await page.getByRole('link', { name: 'panel-browser.example' }).click();
    await page.getByRole('heading', { name: /panel-browser\.example/ }).waitFor();
    await page.getByText('ns1.platform.test').waitFor();
    await shot(page, '04-domain-overview');
    await page.goto(`${base}/panel/`);
    await page.getByRole('cell', { name: 'pending' }).waitFor();
    await shot(page, '05-domains');

    await page.goto(`${base}/panel/domains/panel-browser.example/dns`);
    const add = page.getByRole('form', { name: 'Add record' });
    await add.getByLabel('Name', { exact: true }).fill('www');
    await add.getByLabel('Content', { exact: true }).fill('192.0.2.10');
    await add.getByRole('button', { name: 'Add record' }).click();
    await page.getByRole('cell', { name: '192.0.2.10' }).waitFor();
    // A bad record: the API's own error text.
    await add.getByLabel('Name', { exact: true }).fill('bad');
    await add.getByLabel('Content', { exact: true }).fill('not-an-address');
    await add.getByRole('button', { name: 'Add record' }).click();
    await page.getByRole('alert').filter({ hasText: 'destination' }).waitFor();
    await page.getByRole('button', { name: 'Edit A www' }).click();
    await page.getByRole('form', { name: 'Save record' }).getByLabel('TTL', { exact: true }).fill('600');
    await page.getByRole('button', { name: 'Save record' }).click();
    await page.getByRole('cell', { name: '600', exact: true }).waitFor();

    await page
      .getByLabel('Or paste it')
      .fill('api 300 IN A 192.0.2.20\nmail 300 IN MX 10 mx.example.net.\n@ 300 IN TXT "v=spf1 -all"\n');
    await page.getByRole('button', { name: 'Preview' }).click();
    await page.getByText('3 records to import').waitFor();
    await shot(page, '06-zone-import-preview');
    await page.getByRole('button', { name: 'Import 3 records' }).click();
    await page.getByText('Imported 3 records.').waitFor();
    await page.getByRole('cell', { name: '192.0.2.20' }).waitFor();
    await shot(page, '07-dns-records');
    const listed = await cp.call(owner.key, 'GET', '/domains/panel-browser.example/records/');
    assert.equal(listed.json<unknown[]>().length, 4);
  });

  await t.test('rules: a redirect rule is listed and toggled off and on', async () => {
    const created = await cp.call(owner.key, 'POST', '/domains/panel-browser.example/rules/redirect/', {
      target: 'https://www.panel-browser.example/',
    });
    assert.equal(created.statusCode, 200, created.body);
    const id = created.json<{ id: number }>().id;
    await page.goto(`${base}/panel/domains/panel-browser.example/rules`);
    const toggle = page.getByRole('checkbox', { name: `Rule ${id}` });
    await toggle.waitFor();
    assert.equal(await toggle.isChecked(), true);
    await toggle.click();
    await page.locator(`tr[data-rule-id="${id}"]`).getByText('Off').waitFor();
    const rule = await cp.call(owner.key, 'GET', `/domains/panel-browser.example/rules/redirect/${id}`);
    assert.equal(rule.json<{ enabled: boolean }>().enabled, false);
    await shot(page, '08-rules');
    await toggle.click();
    await page.locator(`tr[data-rule-id="${id}"]`).getByText('On').waitFor();

    await page.getByRole('link', { name: 'Analytics' }).click();
    // No traffic yet: every chart drawn empty (panel-browser-domain.test.ts draws them from shipped logs).
    await page.getByText('Requests per hour: 0 in all').waitFor();
    await page.getByRole('region', { name: 'Top countries' }).getByText('No requests in this period.').waitFor();
    assert.equal(await page.locator('main .error').count(), 0, await page.locator('main').innerText());
    await shot(page, '09-analytics');
  });

  await t.test('no script errors and no CSP violations on any page', () => {
    assert.deepEqual(problems, []);
  });
});
