// Invitations through the API (issue 16 item 1): invite, list, revoke, resend, inspect, accept. A pending invitation
// grants nothing; the link's token is single use, expires, and only its hash is stored.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { eq } from 'drizzle-orm';
import { startTestControlPlane } from '../helpers/control-plane.js';
import { domainInvitations, domains } from '../../control-plane/src/db/schema.js';
import { MAX_MEMBERS_PER_DOMAIN } from '../../control-plane/src/areas/sharing/schemas.js';

interface Invitation {
  id: number;
  email: string;
  role: string;
  sends: number;
  expired: boolean;
  expires_at: string;
  invited_by: { user_id: number; email: string } | null;
  token?: string;
  accept_url?: string;
}

async function setup(t: Parameters<typeof startTestControlPlane>[0]) {
  const cp = await startTestControlPlane(t, { PUBLIC_BASE_URL: 'https://api.example.test' });
  const owner = await cp.user('owner@invite.test');
  const admin = await cp.user('admin@invite.test');
  const editor = await cp.user('editor@invite.test');
  const viewer = await cp.user('viewer@invite.test');
  const domain = await cp.domain(owner.key, 'invite.example.org');
  await cp.addMember(domain, admin.id, 'admin');
  await cp.addMember(domain, editor.id, 'editor');
  await cp.addMember(domain, viewer.id, 'viewer');
  const base = `/domains/${domain}/invitations`;
  return { cp, owner, admin, editor, viewer, domain, base };
}

test('invite → inspect → accept: nothing granted before, the role after, the link works once', async (t) => {
  const { cp, owner, admin, base, domain } = await setup(t);
  const invitee = await cp.user('new.person@invite.test');

  let res = await cp.call(admin.key, 'POST', base, { email: '  New.Person@Invite.TEST ', role: 'editor' });
  assert.equal(res.statusCode, 200, res.body);
  const created = res.json<Invitation>();
  assert.equal(created.email, 'new.person@invite.test');
  assert.deepEqual(created.invited_by, { user_id: admin.id, email: 'admin@invite.test' });
  assert.match(created.token!, /^inv_[A-Za-z0-9_-]{43}$/);
  assert.equal(created.accept_url, `https://api.example.test/invitations/${created.token}`);
  assert.equal(created.expired, false);
  const days = (Date.parse(created.expires_at) - Date.now()) / 86_400_000;
  assert.ok(days > 6.9 && days <= 7, `${days} days`);

  // Only the hash is stored; the list never shows the token.
  const [stored] = await cp.database.db.select().from(domainInvitations);
  assert.equal(stored!.tokenHash, createHash('sha256').update(created.token!).digest('hex'));
  assert.ok(!JSON.stringify(stored).includes(created.token!));
  const list = (await cp.call(owner.key, 'GET', base)).json<Invitation[]>();
  assert.deepEqual(
    list.map((i) => [i.id, i.email, i.role, i.sends]),
    [[created.id, 'new.person@invite.test', 'editor', 1]],
  );
  assert.equal(list[0]!.token, undefined);

  // Pending grants nothing; the invitee's account was told in its feed.
  assert.equal((await cp.call(invitee.key, 'GET', `/domains/${domain}`)).statusCode, 404);
  assert.equal((await cp.call(invitee.key, 'GET', `/domains/${domain}/members`)).statusCode, 404);
  const feed = (await cp.call(invitee.key, 'GET', '/notifications')).json<{ notifications: { kind: string }[] }>();
  assert.deepEqual(
    feed.notifications.map((n) => n.kind),
    ['sharing.invited'],
  );
  // Nor can a pending invitee be the payer.
  res = await cp.call(owner.key, 'PUT', `/domains/${domain}/billing-member`, { user_id: invitee.id });
  assert.equal(res.statusCode, 400);
  assert.equal(res.json<{ code: string }>().code, 'not_a_member');

  // Inspect: the invitee's account only.
  const link = `/invitations/${created.token}`;
  res = await cp.call(invitee.key, 'GET', link);
  assert.equal(res.statusCode, 200, res.body);
  assert.deepEqual(res.json(), {
    domain,
    email: 'new.person@invite.test',
    role: 'editor',
    invited_by: { user_id: admin.id, email: 'admin@invite.test' },
    expires_at: created.expires_at,
    expired: false,
  });
  for (const other of [owner, admin]) {
    res = await cp.call(other.key, 'GET', link);
    assert.equal(res.statusCode, 403);
    assert.equal(res.headers['x-error-code'], 'CP_ERR_NOT_INVITEE');
    assert.equal((await cp.call(other.key, 'POST', `${link}/accept`)).statusCode, 403);
  }
  const { key: readOnly } = await cp.key(invitee.id, { readOnly: true });
  assert.equal((await cp.call(readOnly, 'GET', link)).statusCode, 200);
  res = await cp.call(readOnly, 'POST', `${link}/accept`);
  assert.equal(res.statusCode, 403);
  assert.deepEqual(res.json(), { error: 'read-only API key' });
  assert.equal((await cp.call(null, 'GET', link)).statusCode, 401);

  // Accept: the role, at once; the inviter hears of it; the link is used up.
  res = await cp.call(invitee.key, 'POST', `${link}/accept`);
  assert.equal(res.statusCode, 200, res.body);
  const accepted = res.json<{ domain: string; member: { user_id: number; role: string } }>();
  assert.equal(accepted.domain, domain);
  assert.deepEqual([accepted.member.user_id, accepted.member.role], [invitee.id, 'editor']);
  const detail = await cp.call(invitee.key, 'GET', `/domains/${domain}`);
  assert.equal(detail.json<{ role: string }>().role, 'editor');
  assert.equal((await cp.call(invitee.key, 'POST', `${link}/accept`)).statusCode, 404, 'single use');
  assert.equal((await cp.call(invitee.key, 'GET', link)).statusCode, 404);
  assert.deepEqual((await cp.call(owner.key, 'GET', base)).json(), []);
  const adminFeed = (await cp.call(admin.key, 'GET', '/notifications?category=sharing')).json<{
    notifications: { kind: string }[];
  }>();
  assert.deepEqual(
    adminFeed.notifications.map((n) => n.kind),
    ['sharing.accepted'],
  );
  // Now a member: the owner may nominate them.
  res = await cp.call(owner.key, 'PUT', `/domains/${domain}/billing-member`, { user_id: invitee.id });
  assert.equal(res.statusCode, 200, res.body);
});

test('invitations need members.manage; revoke and resend replace or end the link; expiry', async (t) => {
  const { cp, owner, admin, editor, viewer, base, domain } = await setup(t);
  const stranger = await cp.user('stranger@invite.test');
  const invitee = await cp.user('later@invite.test');

  for (const who of [editor, viewer]) {
    for (const [method, url, body] of [
      ['GET', base, undefined],
      ['POST', base, { email: 'x@invite.test', role: 'viewer' }],
    ] as const) {
      const res = await cp.call(who.key, method, url, body);
      assert.equal(res.statusCode, 403, `${method} ${url}: ${res.body}`);
      assert.match(res.json<{ error: string }>().error, /members\.manage/);
    }
  }
  assert.equal((await cp.call(stranger.key, 'GET', base)).statusCode, 404);
  const { key: readOnly } = await cp.key(owner.id, { readOnly: true });
  assert.equal((await cp.call(readOnly, 'GET', base)).statusCode, 200);
  assert.equal((await cp.call(readOnly, 'POST', base, { email: 'x@invite.test', role: 'viewer' })).statusCode, 403);

  // Conflicts: people already on the domain, an address already invited.
  for (const email of ['owner@invite.test', 'EDITOR@invite.test']) {
    const res = await cp.call(owner.key, 'POST', base, { email, role: 'viewer' });
    assert.equal(res.statusCode, 409, res.body);
    assert.match(res.json<{ error: string }>().error, /already a member/);
  }
  const first = (
    await cp.call(owner.key, 'POST', base, { email: 'later@invite.test', role: 'admin' })
  ).json<Invitation>();
  let res = await cp.call(admin.key, 'POST', base, { email: 'later@invite.test', role: 'viewer' });
  assert.equal(res.statusCode, 409);
  assert.match(res.json<{ error: string }>().error, /already invited/);

  // Resend: a new token, the old one dead, one more send; editors may not.
  const invitation = `${base}/${first.id}`;
  assert.equal((await cp.call(editor.key, 'POST', `${invitation}/resend`)).statusCode, 403);
  assert.equal((await cp.call(editor.key, 'DELETE', invitation)).statusCode, 403);
  res = await cp.call(admin.key, 'POST', `${invitation}/resend`);
  assert.equal(res.statusCode, 200, res.body);
  const resent = res.json<Invitation>();
  assert.notEqual(resent.token, first.token);
  assert.equal(resent.sends, 2);
  assert.equal((await cp.call(invitee.key, 'GET', `/invitations/${first.token}`)).statusCode, 404);
  assert.equal((await cp.call(invitee.key, 'GET', `/invitations/${resent.token}`)).statusCode, 200);

  // Expired: shown as expired, not accepted (409), renewed by a resend.
  await cp.database.db
    .update(domainInvitations)
    .set({ expiresAt: new Date(Date.now() - 1000) })
    .where(eq(domainInvitations.id, first.id));
  res = await cp.call(invitee.key, 'GET', `/invitations/${resent.token}`);
  assert.equal(res.json<{ expired: boolean }>().expired, true);
  res = await cp.call(invitee.key, 'POST', `/invitations/${resent.token}/accept`);
  assert.equal(res.statusCode, 409);
  assert.match(res.json<{ error: string }>().error, /expired/);
  assert.equal((await cp.call(owner.key, 'GET', base)).json<Invitation[]>()[0]!.expired, true);
  const renewed = (await cp.call(owner.key, 'POST', `${invitation}/resend`)).json<Invitation>();
  assert.equal(renewed.expired, false);

  // The sends are bounded.
  await cp.database.db.update(domainInvitations).set({ sends: 10 }).where(eq(domainInvitations.id, first.id));
  res = await cp.call(owner.key, 'POST', `${invitation}/resend`);
  assert.equal(res.statusCode, 400);
  assert.match(res.json<{ error: string }>().error, /revoke it and invite again/);

  // Revoke: the link stops working; a second revoke or another domain's id is 404.
  res = await cp.call(admin.key, 'DELETE', invitation);
  assert.equal(res.statusCode, 200);
  assert.deepEqual(res.json(), { message: `invitation ${first.id} revoked` });
  assert.equal((await cp.call(invitee.key, 'POST', `/invitations/${renewed.token}/accept`)).statusCode, 404);
  assert.equal((await cp.call(admin.key, 'DELETE', invitation)).statusCode, 404);
  assert.equal((await cp.call(admin.key, 'POST', `${invitation}/resend`)).statusCode, 404);
  const otherDomain = await cp.domain(stranger.key, 'other.example.org');
  const foreign = (
    await cp.call(stranger.key, 'POST', `/domains/${otherDomain}/invitations`, {
      email: 'z@invite.test',
      role: 'viewer',
    })
  ).json<Invitation>();
  assert.equal((await cp.call(owner.key, 'DELETE', `${base}/${foreign.id}`)).statusCode, 404);
  assert.equal((await cp.call(owner.key, 'DELETE', `/domains/${domain}/invitations/0`)).statusCode, 400);
});

test('invitations: every input bounded, the domain capped, nothing stored on a refusal (abuse)', async (t) => {
  const { cp, owner, base, domain } = await setup(t);
  const bad: Array<[string, unknown]> = [
    ['no body', undefined],
    ['empty', {}],
    ['no role', { email: 'a@invite.test' }],
    ['owner role', { email: 'a@invite.test', role: 'owner' }],
    ['unknown role', { email: 'a@invite.test', role: 'root' }],
    ['not an address', { email: 'not-an-email', role: 'viewer' }],
    ['spaces inside', { email: 'a b@invite.test', role: 'viewer' }],
    ['control character', { email: 'a\u0007@invite.test', role: 'viewer' }],
    ['NUL', { email: 'a\u0000@invite.test', role: 'viewer' }],
    ['too long', { email: `${'a'.repeat(250)}@invite.test`, role: 'viewer' }],
    ['huge', { email: `${'a'.repeat(1_000_000)}@x.test`, role: 'viewer' }],
    ['a list of addresses', { email: ['a@invite.test'], role: 'viewer' }],
    ['unknown field', { email: 'a@invite.test', role: 'viewer', message: 'hi' }],
  ];
  for (const [what, body] of bad) {
    const res = await cp.call(owner.key, 'POST', base, body);
    assert.ok([400, 413].includes(res.statusCode), `${what}: ${res.statusCode} ${res.body}`);
    assert.equal(typeof res.json<{ error: string }>().error, 'string');
  }
  for (const token of [
    'abc',
    `inv_${'a'.repeat(42)}`,
    `inv_${'a'.repeat(44)}`,
    `inv_${'a'.repeat(5000)}`,
    `inv_${'%00'.repeat(43)}`,
  ]) {
    const res = await cp.call(owner.key, 'GET', `/invitations/${token}`);
    // A segment beyond the router's 1024 characters is 414.
    assert.ok([400, 404, 414].includes(res.statusCode), `${token.slice(0, 20)}: ${res.statusCode}`);
    const accept = await cp.call(owner.key, 'POST', `/invitations/${token}/accept`);
    assert.ok([400, 404, 414].includes(accept.statusCode));
  }
  assert.equal((await cp.call(owner.key, 'GET', `/invitations/inv_${'a'.repeat(43)}`)).statusCode, 404);
  assert.deepEqual((await cp.call(owner.key, 'GET', base)).json(), []);

  // The cap counts members (3 here) and invitations together, checked under the domain's lock.
  const [d] = await cp.database.db.select().from(domains).where(eq(domains.name, domain));
  const fill = MAX_MEMBERS_PER_DOMAIN - 3 - 1;
  await cp.database.db.insert(domainInvitations).values(
    Array.from({ length: fill }, (_, i) => ({
      domainId: d!.id,
      email: `filler${i}@invite.test`,
      role: 'viewer' as const,
      tokenHash: `h${i}`,
      expiresAt: new Date(Date.now() + 86_400_000),
    })),
  );
  const invites = await Promise.all(
    ['last1@invite.test', 'last2@invite.test', 'last3@invite.test'].map((email) =>
      cp.call(owner.key, 'POST', base, { email, role: 'viewer' }),
    ),
  );
  assert.deepEqual(invites.map((r) => r.statusCode).sort(), [200, 400, 400], 'one fits, two are refused');
  const refused = invites.find((r) => r.statusCode === 400)!;
  assert.match(refused.json<{ error: string }>().error, /at most 100 members and pending invitations/);
  assert.equal((await cp.call(owner.key, 'GET', base)).json<unknown[]>().length, fill + 1);
});
