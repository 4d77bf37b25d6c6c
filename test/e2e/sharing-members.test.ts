// Sharing and the payer through the API (issue 16 items 1 and 2): members, notification choices, removal, and
// PUT billing-member / GET payer exactly as the spec's Domains table says, with every role's permission case.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { and, eq } from 'drizzle-orm';
import { startTestControlPlane } from '../helpers/control-plane.js';
import { domainMembers, domains } from '../../control-plane/src/db/schema.js';
import { ROLE_DEFAULTS } from '../../control-plane/src/areas/sharing/notification-options.js';
import { notifyDomain } from '../../control-plane/src/areas/notifications/store.js';

interface Member {
  user_id: number;
  email: string;
  role: string;
  is_owner: boolean;
  is_billing_member: boolean;
  notifications: Record<string, string[]>;
  notifications_customized: boolean;
}
interface BillingMember {
  user_id: number;
  role: string;
  is_owner: boolean;
  nominated: boolean;
  nominated_at: string | null;
}

async function setup(t: Parameters<typeof startTestControlPlane>[0]) {
  const cp = await startTestControlPlane(t);
  const owner = await cp.user('owner@sharing.test');
  const admin = await cp.user('admin@sharing.test');
  const editor = await cp.user('editor@sharing.test');
  const viewer = await cp.user('viewer@sharing.test');
  const stranger = await cp.user('stranger@sharing.test');
  const domain = await cp.domain(owner.key, 'shared.example.org');
  await cp.addMember(domain, admin.id, 'admin');
  await cp.addMember(domain, editor.id, 'editor');
  await cp.addMember(domain, viewer.id, 'viewer');
  return { cp, owner, admin, editor, viewer, stranger, domain, base: `/domains/${domain}` };
}

test('GET members: the owner and every accepted member, for any role; 404 for anyone else', async (t) => {
  const { cp, owner, admin, editor, viewer, stranger, base } = await setup(t);
  for (const who of [owner, admin, editor, viewer]) {
    const res = await cp.call(who.key, 'GET', `${base}/members`);
    assert.equal(res.statusCode, 200, res.body);
    const list = res.json<Member[]>();
    assert.deepEqual(
      list.map((m) => [m.email, m.role, m.is_owner, m.is_billing_member]),
      [
        ['owner@sharing.test', 'owner', true, true],
        ['admin@sharing.test', 'admin', false, false],
        ['editor@sharing.test', 'editor', false, false],
        ['viewer@sharing.test', 'viewer', false, false],
      ],
    );
    assert.deepEqual(list[3]!.notifications, ROLE_DEFAULTS.viewer);
    assert.equal(list[3]!.notifications_customized, false);
  }
  assert.equal((await cp.call(stranger.key, 'GET', `${base}/members`)).statusCode, 404);
  assert.equal((await cp.call(owner.key, 'GET', '/domains/nothing.example.org/members')).statusCode, 404);
  const { key: readOnly } = await cp.key(viewer.id, { readOnly: true });
  assert.equal((await cp.call(readOnly, 'GET', `${base}/members`)).statusCode, 200);
  assert.equal((await cp.call(null, 'GET', `${base}/members`)).statusCode, 401);

  const options = await cp.call(viewer.key, 'GET', `${base}/members/notification-options`);
  assert.equal(options.statusCode, 200);
  const body = options.json<{ categories: { id: string }[]; channels: { id: string }[]; role_defaults: object }>();
  assert.deepEqual(
    body.categories.map((c) => c.id),
    ['domain', 'ssl', 'uptime', 'security', 'billing'],
  );
  assert.deepEqual(
    body.channels.map((c) => c.id),
    ['feed', 'email'],
  );
  assert.deepEqual(body.role_defaults, ROLE_DEFAULTS);
  assert.equal((await cp.call(stranger.key, 'GET', `${base}/members/notification-options`)).statusCode, 404);
});

test('PATCH a member: role with members.manage (owner, admin); own notifications for any role', async (t) => {
  const { cp, owner, admin, editor, viewer, stranger, base } = await setup(t);
  const patch = (key: string, userId: number, body: unknown) =>
    cp.call(key, 'PATCH', `${base}/members/${userId}`, body);

  // Roles: the owner and an admin may change them; an editor or viewer may not (403 naming members.manage).
  let res = await patch(admin.key, editor.id, { role: 'viewer' });
  assert.equal(res.statusCode, 200, res.body);
  assert.equal(res.json<Member>().role, 'viewer');
  res = await patch(owner.key, editor.id, { role: 'editor' });
  assert.equal(res.json<Member>().role, 'editor');
  for (const who of [editor, viewer]) {
    res = await patch(who.key, viewer.id, { role: 'admin' });
    assert.equal(res.statusCode, 403, res.body);
    assert.equal(res.headers['x-error-code'], 'CP_ERR_ROLE');
    assert.match(res.json<{ error: string }>().error, /lacks the members\.manage permission/);
  }
  res = await patch(viewer.key, viewer.id, { role: 'admin' });
  assert.equal(res.statusCode, 403, 'no one raises their own role');
  res = await patch(admin.key, owner.id, { role: 'viewer' });
  assert.equal(res.statusCode, 400);
  assert.match(res.json<{ error: string }>().error, /owner's role cannot be changed/);
  assert.equal((await patch(admin.key, stranger.id, { role: 'viewer' })).statusCode, 404);
  assert.equal((await patch(stranger.key, viewer.id, { role: 'viewer' })).statusCode, 404, 'domain invisible');

  // Notifications: one's own with any role (the owner included), anyone's with members.manage.
  res = await patch(viewer.key, viewer.id, { notifications: { ssl: ['email', 'feed'], uptime: [] } });
  assert.equal(res.statusCode, 200, res.body);
  assert.deepEqual(res.json<Member>().notifications, { ...ROLE_DEFAULTS.viewer, ssl: ['feed', 'email'], uptime: [] });
  assert.equal(res.json<Member>().notifications_customized, true);
  res = await patch(viewer.key, viewer.id, { notifications: { domain: ['feed'] } });
  assert.deepEqual(
    res.json<Member>().notifications,
    { ...ROLE_DEFAULTS.viewer, ssl: ['feed', 'email'], uptime: [], domain: ['feed'] },
    'categories not given keep their choice',
  );
  assert.equal((await patch(viewer.key, editor.id, { notifications: { ssl: [] } })).statusCode, 403);
  assert.equal((await patch(editor.key, viewer.id, { notifications: { ssl: [] } })).statusCode, 403);
  assert.equal((await patch(admin.key, editor.id, { notifications: { ssl: [] } })).statusCode, 200);
  res = await patch(owner.key, owner.id, { notifications: { billing: ['feed'] } });
  assert.equal(res.statusCode, 200, res.body);
  assert.deepEqual(res.json<Member>().notifications.billing, ['feed']);
  res = await patch(viewer.key, viewer.id, { notifications: null });
  assert.deepEqual(res.json<Member>().notifications, ROLE_DEFAULTS.viewer);
  assert.equal(res.json<Member>().notifications_customized, false);

  // Role and notifications at once: both checks, one transaction (a refused role leaves the notifications alone).
  res = await patch(viewer.key, viewer.id, { role: 'admin', notifications: { ssl: ['feed'] } });
  assert.equal(res.statusCode, 403);
  const list = (await cp.call(viewer.key, 'GET', `${base}/members`)).json<Member[]>();
  assert.equal(list.find((m) => m.user_id === viewer.id)!.notifications_customized, false);

  // A read-only key writes nothing.
  const { key: readOnly } = await cp.key(owner.id, { readOnly: true });
  res = await patch(readOnly, editor.id, { role: 'viewer' });
  assert.equal(res.statusCode, 403);
  assert.deepEqual(res.json(), { error: 'read-only API key' });
});

test('PATCH and DELETE members refuse bad input before any work (abuse)', async (t) => {
  const { cp, owner, viewer, base } = await setup(t);
  const cases: Array<[string, unknown]> = [
    ['empty body', {}],
    ['owner is not a member role', { role: 'owner' }],
    ['unknown role', { role: 'superadmin' }],
    ['role of another type', { role: 1 }],
    ['unknown field', { role: 'viewer', email: 'x@y.z' }],
    ['unknown category', { notifications: { payments: ['feed'] } }],
    ['unknown channel', { notifications: { ssl: ['sms'] } }],
    ['a channel twice', { notifications: { ssl: ['feed', 'feed'] } }],
    ['too many channels', { notifications: { ssl: Array.from({ length: 1000 }, () => 'feed') } }],
    ['channels not a list', { notifications: { ssl: 'feed' } }],
    ['notifications not an object', { notifications: ['ssl'] }],
    ['a long role', { role: 'a'.repeat(100_000) }],
  ];
  for (const [what, body] of cases) {
    const res = await cp.call(owner.key, 'PATCH', `${base}/members/${viewer.id}`, body);
    assert.equal(res.statusCode, 400, `${what}: ${res.body}`);
    assert.equal(typeof res.json<{ error: string }>().error, 'string');
  }
  for (const id of ['0', '-1', '2147483648', '99999999999999999999']) {
    const res = await cp.call(owner.key, 'PATCH', `${base}/members/${id}`, { role: 'viewer' });
    assert.ok([400, 404].includes(res.statusCode), `${id}: ${res.statusCode}`);
    assert.ok([400, 404].includes((await cp.call(owner.key, 'DELETE', `${base}/members/${id}`)).statusCode));
  }
  assert.equal((await cp.call(owner.key, 'PATCH', `${base}/members/abc`, { role: 'viewer' })).statusCode, 404);
  // Nothing changed.
  const list = (await cp.call(owner.key, 'GET', `${base}/members`)).json<Member[]>();
  assert.deepEqual(
    list.map((m) => [m.role, m.notifications_customized]),
    [
      ['owner', false],
      ['admin', false],
      ['editor', false],
      ['viewer', false],
    ],
  );
});

test('DELETE a member: members.manage removes others, anyone leaves, the owner stays', async (t) => {
  const { cp, owner, admin, editor, viewer, base } = await setup(t);
  const remove = (key: string, userId: number) => cp.call(key, 'DELETE', `${base}/members/${userId}`);

  let res = await remove(editor.key, viewer.id);
  assert.equal(res.statusCode, 403);
  assert.match(res.json<{ error: string }>().error, /members\.manage/);
  assert.equal((await remove(viewer.key, editor.id)).statusCode, 403);
  res = await remove(admin.key, owner.id);
  assert.equal(res.statusCode, 400);
  assert.match(res.json<{ error: string }>().error, /owner cannot be removed/);
  assert.equal((await remove(owner.key, owner.id)).statusCode, 400);

  // Choices are removed with the membership: a member added again starts from the defaults.
  await cp.call(viewer.key, 'PATCH', `${base}/members/${viewer.id}`, { notifications: { ssl: ['feed'] } });
  res = await remove(viewer.key, viewer.id);
  assert.equal(res.statusCode, 200, res.body);
  assert.deepEqual(res.json(), { message: `user ${viewer.id} removed from shared.example.org` });
  assert.equal((await cp.call(viewer.key, 'GET', base)).statusCode, 404, 'a former member sees nothing');
  assert.equal((await remove(owner.key, viewer.id)).statusCode, 404);

  res = await remove(admin.key, editor.id);
  assert.equal(res.statusCode, 200);
  assert.equal((await cp.call(editor.key, 'GET', base)).statusCode, 404);
  const { key: readOnly } = await cp.key(owner.id, { readOnly: true });
  assert.equal((await remove(readOnly, admin.id)).statusCode, 403);
  res = await remove(admin.key, admin.id);
  assert.equal(res.statusCode, 200, 'an admin leaves');
  assert.deepEqual(
    (await cp.call(owner.key, 'GET', `${base}/members`)).json<Member[]>().map((m) => m.role),
    ['owner'],
  );
  await cp.addMember('shared.example.org', viewer.id, 'viewer');
  const back = (await cp.call(owner.key, 'GET', `${base}/members`)).json<Member[]>()[1]!;
  assert.equal(back.notifications_customized, false);
});

test('PUT billing-member: owner only, accepted members only (not_a_member), clears with null, 0 or the owner', async (t) => {
  const { cp, owner, admin, editor, viewer, stranger, base, domain } = await setup(t);
  const put = (key: string, body: unknown) => cp.call(key, 'PUT', `${base}/billing-member`, body);
  const payer = async () =>
    (await cp.call(viewer.key, 'GET', `${base}/payer`)).json<{ billing_member: BillingMember }>().billing_member;

  // With no nomination the owner pays, and the answer says so.
  let billing = await payer();
  assert.deepEqual(
    [billing.user_id, billing.is_owner, billing.nominated, billing.nominated_at],
    [owner.id, true, false, null],
  );

  let res = await put(owner.key, { user_id: editor.id });
  assert.equal(res.statusCode, 200, res.body);
  billing = res.json<{ billing_member: BillingMember }>().billing_member;
  assert.deepEqual(
    [billing.user_id, billing.role, billing.is_owner, billing.nominated],
    [editor.id, 'editor', false, true],
  );
  assert.ok(billing.nominated_at);
  // The nominee is notified at once, once: a repeated nomination of the same member changes nothing.
  const feed = async () =>
    (await cp.call(editor.key, 'GET', '/notifications?category=billing')).json<{
      notifications: { kind: string; domain: string; data: Record<string, unknown> }[];
    }>().notifications;
  assert.deepEqual(
    (await feed()).map((n) => [n.kind, n.domain, n.data.nominated_by]),
    [['billing.payer_nominated', domain, owner.id]],
  );
  const again = await put(owner.key, { user_id: editor.id });
  assert.equal(again.json<{ billing_member: BillingMember }>().billing_member.nominated_at, billing.nominated_at);
  assert.equal((await feed()).length, 1);
  // In force at once: the payer read and the member list show it.
  assert.equal((await payer()).user_id, editor.id);
  const list = (await cp.call(owner.key, 'GET', `${base}/members`)).json<Member[]>();
  assert.deepEqual(
    list.filter((m) => m.is_billing_member).map((m) => m.user_id),
    [editor.id],
  );

  // Not the owner: 403, even for an admin (billing is not domain.settings); invisible: 404; read-only: 403.
  for (const who of [admin, editor, viewer]) {
    res = await put(who.key, { user_id: null });
    assert.equal(res.statusCode, 403, res.body);
    assert.match(res.json<{ error: string }>().error, /lacks the billing\.manage permission/);
  }
  assert.equal((await put(stranger.key, { user_id: null })).statusCode, 404);
  const { key: readOnly } = await cp.key(owner.id, { readOnly: true });
  res = await put(readOnly, { user_id: null });
  assert.equal(res.statusCode, 403);
  assert.deepEqual(res.json(), { error: 'read-only API key' });
  assert.equal((await payer()).user_id, editor.id, 'nothing changed');

  // No accepted membership: 400 with code not_a_member, nothing changed.
  for (const userId of [stranger.id, 2_000_000_000]) {
    res = await put(owner.key, { user_id: userId });
    assert.equal(res.statusCode, 400, res.body);
    assert.equal(res.json<{ code: string }>().code, 'not_a_member');
    assert.equal(res.headers['x-error-code'], 'not_a_member');
    assert.equal(typeof res.json<{ error: string }>().error, 'string');
  }
  assert.equal((await payer()).user_id, editor.id);

  // Malformed bodies: 400 without the code.
  const malformed: unknown[] = [
    {},
    { user_id: 'x' },
    { user_id: -1 },
    { user_id: 1.5 },
    { user_id: 2 ** 31 },
    { user_id: editor.id, role: 'x' },
    [],
  ];
  for (const body of malformed) {
    res = await put(owner.key, body);
    assert.equal(res.statusCode, 400, `${JSON.stringify(body)}: ${res.body}`);
    assert.equal(res.json<{ code?: string }>().code, undefined);
  }
  assert.equal((await cp.call(owner.key, 'PUT', `${base}/billing-member`, 'not json')).statusCode, 400);

  // Each way of clearing gives the owner back, always as a populated BillingMember.
  for (const clear of [null, 0, owner.id]) {
    await put(owner.key, { user_id: viewer.id });
    assert.equal((await payer()).user_id, viewer.id);
    res = await put(owner.key, { user_id: clear });
    assert.equal(res.statusCode, 200, res.body);
    billing = res.json<{ billing_member: BillingMember }>().billing_member;
    assert.deepEqual([billing.user_id, billing.is_owner, billing.nominated], [owner.id, true, false], String(clear));
  }

  // The nomination goes with the membership: removed through the API, or straight from the table.
  await put(owner.key, { user_id: admin.id });
  await cp.call(owner.key, 'DELETE', `${base}/members/${admin.id}`);
  assert.equal((await payer()).user_id, owner.id);
  await put(owner.key, { user_id: viewer.id });
  const [d] = await cp.database.db.select().from(domains).where(eq(domains.name, domain));
  await cp.database.db
    .delete(domainMembers)
    .where(and(eq(domainMembers.domainId, d!.id), eq(domainMembers.userId, viewer.id)));
  assert.equal(
    (await cp.call(owner.key, 'GET', `${base}/payer`)).json<{ billing_member: BillingMember }>().billing_member.user_id,
    owner.id,
  );
});

test('GET payer: the billing member and the live subscription, for any role', async (t) => {
  const { cp, owner, editor, stranger, base, domain } = await setup(t);
  const res = await cp.call(editor.key, 'GET', `${base}/payer`);
  assert.equal(res.statusCode, 200, res.body);
  const body = res.json<{
    domain: string;
    billing_member: BillingMember;
    subscription: { plan: string; status: string };
  }>();
  assert.equal(body.domain, domain);
  assert.equal(body.billing_member.user_id, owner.id);
  assert.deepEqual([body.subscription.plan, body.subscription.status], ['free', 'active']);
  assert.equal((await cp.call(stranger.key, 'GET', `${base}/payer`)).statusCode, 404);
});

test('notification choices decide whom a domain event reaches (notifyDomain)', async (t) => {
  const { cp, owner, admin, editor, viewer, base, domain } = await setup(t);
  const [d] = await cp.database.db.select().from(domains).where(eq(domains.name, domain));
  const reached = (category: 'uptime' | 'ssl') =>
    notifyDomain(cp.database.db, d!.id, { category, kind: `test.${category}`, title: 't' }).then((ids) =>
      ids.sort((a, b) => a - b),
    );
  const byId = (...ids: number[]) => ids.sort((a, b) => a - b);
  assert.deepEqual(await reached('uptime'), byId(owner.id, admin.id, editor.id), 'the role defaults');
  await cp.call(viewer.key, 'PATCH', `${base}/members/${viewer.id}`, { notifications: { uptime: ['feed'] } });
  await cp.call(editor.key, 'PATCH', `${base}/members/${editor.id}`, { notifications: { uptime: ['email'] } });
  await cp.call(owner.key, 'PATCH', `${base}/members/${owner.id}`, { notifications: { uptime: [] } });
  assert.deepEqual(await reached('uptime'), byId(admin.id, viewer.id), 'each person’s choice');
  assert.deepEqual(await reached('ssl'), byId(owner.id, admin.id), 'other categories keep their defaults');
});
