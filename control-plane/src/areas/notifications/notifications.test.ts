// The notification feed through the API (list, unread count, mark read), notify/notifyDomain, and the domain events
// that write to it (state changes, verification, certificates, uptime incidents, deletion).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { eq, sql } from 'drizzle-orm';
import { startTestControlPlane } from '../../../../test/helpers/control-plane.js';
import { chainFor } from '../../../../test/helpers/certs.js';
import { domains, notifications, uptimeMinuteCounts } from '../../db/schema.js';
import { applyVerified, setState } from '../domain-lifecycle/transitions.js';
import { storeIssuedCertificate } from '../ssl/service.js';
import { recordAttempt } from '../../internal/acme-plan.js';
import { evaluateDomain } from '../uptime/detector.js';
import { NOTIFICATION_CATEGORIES, NOTIFICATION_CATEGORY_IDS } from './categories.js';
import { MAX_NOTIFICATIONS_PER_USER, notify, notifyDomain } from './store.js';
import { COMMANDS } from '../../admin/commands.js';

interface Item {
  id: number;
  category: string;
  kind: string;
  title: string;
  body: string;
  domain: string | null;
  data: Record<string, unknown>;
  read: boolean;
  read_at: string | null;
}
interface Page {
  notifications: Item[];
  unread: number;
  next_cursor: string | null;
}

test('notification feed: list, pages, filters, unread count, mark read; bounded; per user', async (t) => {
  const cp = await startTestControlPlane(t);
  const db = cp.database.db;
  const alice = await cp.user();
  const bob = await cp.user();
  const readOnly = await cp.key(alice.id, { readOnly: true });

  await t.test('an empty feed', async () => {
    const res = await cp.call(alice.key, 'GET', '/notifications');
    assert.deepEqual([res.statusCode, res.json()], [200, { notifications: [], unread: 0, next_cursor: null }]);
    const count = await cp.call(alice.key, 'GET', '/notifications/unread-count');
    assert.deepEqual([count.statusCode, count.json()], [200, { unread: 0 }]);
  });

  for (let i = 1; i <= 5; i++)
    await notify(db, {
      userId: alice.id,
      category: i % 2 ? 'billing' : 'account',
      kind: `test.n${i}`,
      title: `n${i}`,
      body: `body ${i}`,
      data: { i },
    });
  await notify(db, { userId: bob.id, category: 'account', kind: 'test.bob', title: 'for bob' });

  await t.test('newest first, paged by cursor, filtered by category and unread', async () => {
    const all = (await cp.call(alice.key, 'GET', '/notifications')).json<Page>();
    assert.deepEqual(
      all.notifications.map((n) => n.title),
      ['n5', 'n4', 'n3', 'n2', 'n1'],
    );
    assert.equal(all.unread, 5);
    assert.deepEqual(
      { ...all.notifications[0], id: 0, created_at: undefined },
      {
        id: 0,
        category: 'billing',
        kind: 'test.n5',
        title: 'n5',
        body: 'body 5',
        domain: null,
        data: { i: 5 },
        read: false,
        read_at: null,
        created_at: undefined,
      },
    );
    const first = (await cp.call(alice.key, 'GET', '/notifications?limit=2')).json<Page>();
    assert.deepEqual(
      first.notifications.map((n) => n.title),
      ['n5', 'n4'],
    );
    assert.ok(first.next_cursor);
    const second = (await cp.call(alice.key, 'GET', `/notifications?limit=2&cursor=${first.next_cursor}`)).json<Page>();
    assert.deepEqual(
      second.notifications.map((n) => n.title),
      ['n3', 'n2'],
    );
    const third = (await cp.call(alice.key, 'GET', `/notifications?limit=2&cursor=${second.next_cursor}`)).json<Page>();
    assert.deepEqual([third.notifications.map((n) => n.title), third.next_cursor], [['n1'], null]);
    const billing = (await cp.call(alice.key, 'GET', '/notifications?category=billing')).json<Page>();
    assert.deepEqual(
      billing.notifications.map((n) => n.title),
      ['n5', 'n3', 'n1'],
    );
    const bobs = (await cp.call(bob.key, 'GET', '/notifications')).json<Page>();
    assert.deepEqual(
      bobs.notifications.map((n) => n.title),
      ['for bob'],
      'each user sees only their own',
    );
  });

  await t.test('mark read: by ids (another user’s ids left alone), then all', async () => {
    const mine = (await cp.call(alice.key, 'GET', '/notifications')).json<Page>().notifications;
    const bobsId = (await cp.call(bob.key, 'GET', '/notifications')).json<Page>().notifications[0].id;
    const res = await cp.call(alice.key, 'POST', '/notifications/read', { ids: [mine[0].id, mine[1].id, bobsId] });
    assert.deepEqual([res.statusCode, res.json()], [200, { marked: 2, unread: 3 }]);
    const again = await cp.call(alice.key, 'POST', '/notifications/read', { ids: [mine[0].id] });
    assert.deepEqual(again.json(), { marked: 0, unread: 3 }, 'already read: nothing marked');
    assert.deepEqual((await cp.call(bob.key, 'GET', '/notifications/unread-count')).json(), { unread: 1 });
    const unread = (await cp.call(alice.key, 'GET', '/notifications?unread=true')).json<Page>();
    assert.deepEqual(
      unread.notifications.map((n) => n.title),
      ['n3', 'n2', 'n1'],
    );
    const read = (await cp.call(alice.key, 'GET', '/notifications')).json<Page>().notifications[0];
    assert.equal(read.read, true);
    assert.ok(read.read_at && !Number.isNaN(Date.parse(read.read_at)));
    const all = await cp.call(alice.key, 'POST', '/notifications/read', { all: true });
    assert.deepEqual(all.json(), { marked: 3, unread: 0 });
    assert.deepEqual((await cp.call(bob.key, 'GET', '/notifications/unread-count')).json(), { unread: 1 });
  });

  await t.test('a read-only key may read the feed but not mark it', async () => {
    assert.equal((await cp.call(readOnly.key, 'GET', '/notifications')).statusCode, 200);
    assert.equal((await cp.call(readOnly.key, 'GET', '/notifications/unread-count')).statusCode, 200);
    const res = await cp.call(readOnly.key, 'POST', '/notifications/read', { all: true });
    assert.deepEqual([res.statusCode, res.json()], [403, { error: 'read-only API key' }]);
    assert.equal((await cp.call(null, 'GET', '/notifications')).statusCode, 401);
  });

  await t.test('bad input is 400 with an error text; nothing marked', async () => {
    await notify(db, { userId: alice.id, category: 'account', kind: 'test.unread', title: 'still unread' });
    for (const q of [
      'limit=0',
      'limit=101',
      'limit=x',
      'cursor=0',
      'cursor=-1',
      'cursor=abc',
      `cursor=${'9'.repeat(17)}`,
      'category=nope',
      'unread=maybe',
      'other=1',
    ]) {
      const res = await cp.call(alice.key, 'GET', `/notifications?${q}`);
      assert.equal(res.statusCode, 400, q);
      assert.equal(typeof res.json().error, 'string', q);
    }
    const ids = Array.from({ length: 101 }, (_, i) => i + 1);
    for (const body of [
      {},
      { ids: [] },
      { ids },
      { ids: [1, 1] },
      { ids: [0] },
      { ids: ['1'] },
      { ids: [1.5] },
      { all: false },
      { all: true, ids: [1] },
      { all: true, extra: 1 },
      [1],
      'x'.repeat(1000),
    ]) {
      const res = await cp.call(alice.key, 'POST', '/notifications/read', body);
      assert.equal(res.statusCode, 400, JSON.stringify(body).slice(0, 50));
      assert.equal(typeof res.json().error, 'string');
    }
    assert.deepEqual((await cp.call(alice.key, 'GET', '/notifications/unread-count')).json(), { unread: 1 });
  });

  await t.test('notify bounds what it stores: long texts cut, large data dropped, one per dedupe key', async () => {
    await notify(db, {
      userId: bob.id,
      category: 'account',
      kind: 'test.long',
      title: 't'.repeat(10_000),
      body: 'b'.repeat(100_000),
      data: { blob: 'x'.repeat(10_000) },
    });
    const [n] = (await cp.call(bob.key, 'GET', '/notifications?limit=1')).json<Page>().notifications;
    assert.deepEqual([n.title.length, n.body.length, n.data], [200, 2000, {}]);
    const once = { userId: bob.id, category: 'account' as const, kind: 'test.once', title: 'once', dedupeKey: 'k1' };
    assert.equal(await notify(db, once), true);
    assert.equal(await notify(db, once), false);
    const titles = (await cp.call(bob.key, 'GET', '/notifications')).json<Page>().notifications.map((x) => x.title);
    assert.equal(titles.filter((x) => x === 'once').length, 1);
  });

  await t.test(`at most ${MAX_NOTIFICATIONS_PER_USER} are kept per user: the oldest go`, async () => {
    const carol = await cp.user();
    // Filled by one statement, then one more notify prunes to the cap.
    await db.execute(sql`INSERT INTO notifications (user_id, category, kind, title)
      SELECT ${carol.id}, 'account', 'test.bulk', 'bulk ' || g FROM generate_series(1, ${MAX_NOTIFICATIONS_PER_USER + 20}) g`);
    await notify(db, { userId: carol.id, category: 'account', kind: 'test.last', title: 'last' });
    const rows = await db.select().from(notifications).where(eq(notifications.userId, carol.id));
    assert.equal(rows.length, MAX_NOTIFICATIONS_PER_USER);
    assert.equal(Math.min(...rows.map((r) => Number(r.title.slice(5)) || Infinity)), 22, 'the 21 oldest went');
    assert.deepEqual((await cp.call(carol.key, 'GET', '/notifications/unread-count')).json(), {
      unread: MAX_NOTIFICATIONS_PER_USER,
    });
    const page = (await cp.call(carol.key, 'GET', '/notifications?limit=100')).json<Page>();
    assert.equal(page.notifications.length, 100);
  });
});

test('notifyDomain: the owner and the members whose role receives the category', async (t) => {
  const cp = await startTestControlPlane(t);
  const db = cp.database.db;
  const owner = await cp.user();
  const admin = await cp.user();
  const editor = await cp.user();
  const viewer = await cp.user();
  const name = await cp.domain(owner.key, 'fanout.example.org');
  await cp.addMember(name, admin.id, 'admin');
  await cp.addMember(name, editor.id, 'editor');
  await cp.addMember(name, viewer.id, 'viewer');
  const [dom] = await db.select().from(domains).where(eq(domains.name, name));
  const sorted = (ids: number[]) => [...ids].sort((a, b) => a - b);

  const domainEvent = await notifyDomain(db, dom.id, { category: 'domain', kind: 'test.d', title: 'd' });
  assert.deepEqual(sorted(domainEvent), sorted([owner.id, admin.id]));
  const uptime = await notifyDomain(db, dom.id, { category: 'uptime', kind: 'test.u', title: 'u' });
  assert.deepEqual(sorted(uptime), sorted([owner.id, admin.id, editor.id]));
  const billing = await notifyDomain(db, dom.id, { category: 'billing', kind: 'test.b', title: 'b' });
  assert.deepEqual(billing, [owner.id]);
  assert.deepEqual(await notifyDomain(db, dom.id, { category: 'support', kind: 'test.s', title: 's' }), []);
  const [n] = (await cp.call(editor.key, 'GET', '/notifications')).json<Page>().notifications;
  assert.equal(n.domain, name, 'the domain is named by default');
  assert.deepEqual((await cp.call(viewer.key, 'GET', '/notifications/unread-count')).json(), { unread: 0 });
  // A dedupe key: once per recipient.
  const k = { category: 'uptime' as const, kind: 'test.k', title: 'k', dedupeKey: 'same' };
  assert.equal((await notifyDomain(db, dom.id, k)).length, 3);
  assert.equal((await notifyDomain(db, dom.id, k)).length, 0);

  // The list of categories is the one the API validates against.
  assert.deepEqual(
    NOTIFICATION_CATEGORIES.map((c) => c.id),
    [...NOTIFICATION_CATEGORY_IDS],
  );
});

test('domain events reach the feed: state changes, verification, certificates, uptime incidents, deletion', async (t) => {
  const cp = await startTestControlPlane(t);
  const db = cp.database.db;
  const owner = await cp.user();
  const editor = await cp.user();
  const kinds = async (key: string) =>
    (await cp.call(key, 'GET', '/notifications?limit=100'))
      .json<Page>()
      .notifications.map((n) => `${n.kind} ${n.domain}`)
      .reverse();

  const ext = await cp.domain(owner.key, 'verify-me.example.org', 'external');
  await applyVerified(cp.app, ext, 'cname');
  await applyVerified(cp.app, ext, 'cname'); // already active: no second notice
  await setState(cp.app, ext, 'disabled');
  assert.deepEqual(await kinds(owner.key), [`domain.verified ${ext}`, `domain.disabled ${ext}`]);

  const name = await cp.domain(owner.key, 'events.example.org');
  await cp.addMember(name, editor.id, 'editor');
  const [dom] = await db.select().from(domains).where(eq(domains.name, name));
  const { intermediate, leaf } = chainFor([name]);
  await storeIssuedCertificate(cp.app, name, {
    certPem: leaf.certPem,
    chainPem: intermediate.certPem,
    keyPem: leaf.keyPem,
  });
  const failed = { status: 'failed' as const, hostnames: [name], error: 'rate limited by the CA' };
  await recordAttempt(db, dom, failed);
  await recordAttempt(db, dom, failed); // a retry failing again: no second notice
  await recordAttempt(db, dom, { status: 'pending', hostnames: [name] });
  await recordAttempt(db, dom, failed); // a new attempt failing: told again

  // An uptime incident: a monitored proxied record and two failing closed minutes.
  const monitored = { type: 'A', name: 'shop', proxied: true, monitor: true, destination: '192.0.2.10' };
  const rec = await cp.call(owner.key, 'POST', `/domains/${name}/records/`, monitored);
  assert.equal(rec.statusCode, 200, rec.body);
  const now = Date.now();
  const minute = (ago: number) => new Date(now - (now % 60_000) - ago * 60_000);
  await db.insert(uptimeMinuteCounts).values(
    [4, 3].map((ago) => ({
      domainId: dom.id,
      hostname: `shop.${name}`,
      minute: minute(ago),
      total: 100,
      errors: 90,
    })),
  );
  await evaluateDomain(cp.app, dom.id);
  await evaluateDomain(cp.app, dom.id); // judged again: one incident, one notice
  const ownerKinds = await kinds(owner.key);
  assert.deepEqual(ownerKinds.slice(2), [
    `ssl.issued ${name}`,
    `ssl.failed ${name}`,
    `ssl.failed ${name}`,
    `uptime.opened ${name}`,
  ]);
  assert.deepEqual(await kinds(editor.key), [`uptime.opened ${name}`], 'an editor hears of outages only');
  const opened = (await cp.call(owner.key, 'GET', '/notifications?category=uptime')).json<Page>().notifications[0];
  assert.equal(opened.title, `shop.${name} is failing`);
  assert.equal(typeof opened.data.incident_id, 'number');

  const del = await cp.call(owner.key, 'DELETE', `/domains/${name}`);
  assert.equal(del.statusCode, 200, del.body);
  assert.equal((await kinds(owner.key)).at(-1), `domain.deleted ${name}`, 'the notice outlives the domain');
});

test('account and plan events from the admin command line reach the feed', async (t) => {
  const cp = await startTestControlPlane(t);
  const owner = await cp.user();
  const admin = await cp.user();
  const name = await cp.domain(owner.key, 'plans.example.org');
  await cp.addMember(name, admin.id, 'admin');
  const lines: string[] = [];
  const ctx = { db: cp.database.db, configLog: cp.app.configLog, out: (l: string) => lines.push(l) };
  const run = (...argv: string[]) => COMMANDS[`${argv[0]} ${argv[1]}`](ctx, argv.slice(2));
  const feed = async (key: string) =>
    (await cp.call(key, 'GET', '/notifications')).json<Page>().notifications.map((n) => `${n.kind} ${n.title}`);

  await run('key', 'create', owner.email, '--read-only', '--expires', '30');
  const created = lines.at(-1)!;
  const [first] = (await cp.call(owner.key, 'GET', '/notifications')).json<Page>().notifications;
  assert.equal(first.kind, 'account.key_created');
  assert.equal(first.title, `A new API key was created (${created.slice(0, 8)}…)`);
  assert.equal(first.body, 'Read-only, expires in 30 days. If you did not ask for it, revoke it.');
  await run('key', 'revoke', String(first.data.key_id));
  assert.deepEqual((await feed(owner.key))[0], `account.key_revoked API key ${created.slice(0, 8)}… was revoked`);
  await assert.rejects(run('key', 'revoke', String(first.data.key_id)), { message: /no active key/ });
  assert.equal((await feed(owner.key)).length, 2, 'a refused revoke tells nobody');

  await run('plan', 'set', name, 'pro');
  const plan = `billing.plan_changed ${name} is now on the pro plan`;
  assert.equal((await feed(owner.key))[0], plan);
  assert.deepEqual(await feed(admin.key), [], 'billing goes to the owner (and the payer), not to admins');
});
