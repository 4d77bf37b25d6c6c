// The web panel in a real browser for the e2e tests: Debian's chromium (CHROMIUM_PATH, default /usr/bin/chromium;
// .ci/run installs it) driven by playwright-core against a control plane listening on 127.0.0.1, with a user who has
// a password. Screenshots go to test-artifacts/panel/ (ignored by git; CI keeps them as artifacts).
import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { startTestControlPlane, type TestControlPlane } from './control-plane.js';
import { setPassword } from '../../control-plane/src/areas/login/store.js';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const ARTIFACTS = new URL('../../test-artifacts/panel/', import.meta.url).pathname;

export interface PanelBrowser {
  cp: TestControlPlane;
  owner: { id: number; email: string; key: string; keyId: number };
  password: string;
  /** http://127.0.0.1:<port> */
  base: string;
  context: BrowserContext;
  page: Page;
  /** Script errors and CSP violations seen on any page (a test asserts none). */
  problems: string[];
  /** A full-page screenshot, test-artifacts/panel/<name>.png. */
  shot(name: string, page?: Page): Promise<void>;
  /** A new context and page in the same browser (another device of the same person, another viewport). */
  newPage(opts?: { width: number; height: number }): Promise<{ context: BrowserContext; page: Page }>;
}

export async function startPanelBrowser(
  t: { after(fn: () => Promise<void> | void): void },
  email: string,
  password = 'panel password 1',
): Promise<PanelBrowser> {
  assert.ok(
    existsSync(CHROMIUM),
    `no browser at ${CHROMIUM}: install Debian's chromium (apt-get install chromium) or set CHROMIUM_PATH`,
  );
  mkdirSync(ARTIFACTS, { recursive: true });
  const cp = await startTestControlPlane(t);
  const owner = await cp.user(email);
  await setPassword(cp.database.db, owner.id, password);
  await cp.app.listen({ host: '127.0.0.1', port: 0 });
  const base = `http://127.0.0.1:${(cp.app.server.address() as AddressInfo).port}`;

  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  t.after(() => browser.close());
  const problems: string[] = [];
  const newPage = async (opts = { width: 1200, height: 800 }) => {
    const context = await browser.newContext({ viewport: opts });
    const page = await context.newPage();
    page.setDefaultTimeout(30_000);
    page.on('console', (m) => {
      if (m.type() === 'error' && !/Failed to load resource/.test(m.text())) problems.push(m.text());
    });
    page.on('pageerror', (e) => problems.push(String(e)));
    page.on('dialog', (d) => void d.accept());
    return { context, page };
  };
  const { context, page } = await newPage();
  return {
    cp,
    owner,
    password,
    base,
    context,
    page,
    problems,
    newPage,
    shot: (name, p = page) => p.screenshot({ path: `${ARTIFACTS}${name}.png`, fullPage: true }).then(() => undefined),
  };
}

/** Signs in on the panel's sign-in page and waits for the domains list. */
export async function signIn(page: Page, base: string, email: string, password: string): Promise<void> {
  await page.goto(`${base}/panel/`);
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.keyboard.press('Enter');
  await page.getByRole('heading', { name: 'Domains' }).waitFor();
}
