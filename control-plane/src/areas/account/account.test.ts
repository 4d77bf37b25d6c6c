// Account reads through the API: whoami (user, key id and mode, account), unread counters, edge proxy addresses.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestControlPlane } from '../../../../test/helpers/control-plane.js';
import { loadConfig } from '../../config.js';
import { notify } from '../notifications/store.js';
import { addMessage } from '../support/store.js';

test('account reads: whoami, unread counters, edge IPs; every key may read them', async (t) => {
  const cp = await startTestControlPlane(t, { EDGE_IPV4: '203.0.113.10, 203.0.113.11', EDGE_IPV6: '2001:db8::10' });
  const db = cp.database.db;
  const alice = await cp.user(undefined, { name: 'ci' });
  const readOnly = await cp.key(alice.id, { readOnly: true, expires: '30', name: 'grafana' });
  const bob = await cp.user();
  await cp.domain(alice.key, 'one.example.org');
  await cp.domain(alice.key, 'two.example.org');
  const bobs = await cp.domain(bob.key, 'bobs.example.org');
  await cp.addMember(bobs, alice.id, 'viewer');

  await t.test('whoami names the user, the key (id and mode) and the account', async () => {
    const full = (await cp.call(alice.key, 'GET', '/account/whoami')).json();
    assert.deepEqual(full.user, { id: alice.id, email: alice.email, name: '' });
    assert.deepEqual(
      [full.key.id, full.key.name, full.key.mode, full.key.read_only, full.key.expires_at],
      [alice.keyId, 'ci', 'full', false, null],
    );
    assert.equal(full.key.prefix, alice.key.slice(0, 8));
    assert.deepEqual(
      { ...full.account, created_at: undefined },
      {
        id: alice.id,
        active: true,
        created_at: undefined,
        owned_domains: 2,
        shared_domains: 1,
      },
    );
    const ro = (await cp.call(readOnly.key, 'GET', '/account/whoami')).json();
    assert.deepEqual(
      [ro.key.id, ro.key.mode, ro.key.read_only, ro.user.id],
      [readOnly.keyId, 'read_only', true, alice.id],
    );
    assert.ok(Math.abs(Date.parse(ro.key.expires_at) - Date.now() - 30 * 86_400_000) < 600_000);
    assert.equal((await cp.call(null, 'GET', '/account/whoami')).statusCode, 401);
  });

  await t.test('unread counters: notifications and support replies, each user their own', async () => {
    const zero = { notifications: 0, support_tickets: 0, support_replies: 0 };
    assert.deepEqual((await cp.call(alice.key, 'GET', '/account/unread')).json(), zero);
    await notify(db, { userId: alice.id, category: 'account', kind: 'test.a', title: 'a' });
    const opened = await cp.call(alice.key, 'POST', '/support/tickets', { subject: 'help', body: 'please' });
    const ticketId = opened.json().ticket.id as number;
    await addMessage(db, ticketId, { support: 'Sam' }, 'here');
    await addMessage(db, ticketId, { support: 'Sam' }, 'and here');
    // Two support replies also notified her: 1 + 2 notifications.
    assert.deepEqual((await cp.call(readOnly.key, 'GET', '/account/unread')).json(), {
      notifications: 3,
      support_tickets: 1,
      support_replies: 2,
    });
    assert.deepEqual((await cp.call(bob.key, 'GET', '/account/unread')).json(), zero);
    await cp.call(alice.key, 'GET', `/support/tickets/${ticketId}`);
    await cp.call(alice.key, 'POST', '/notifications/read', { all: true });
    assert.deepEqual((await cp.call(alice.key, 'GET', '/account/unread')).json(), zero);
  });

  await t.test('edge IPs come from EDGE_IPV4 / EDGE_IPV6', async () => {
    const res = await cp.call(readOnly.key, 'GET', '/account/edge-ips');
    assert.deepEqual(
      [res.statusCode, res.json()],
      [200, { ipv4: ['203.0.113.10', '203.0.113.11'], ipv6: ['2001:db8::10'] }],
    );
  });

  await t.test('writes to account paths are not routes; a read-only key is refused first', async () => {
    assert.equal((await cp.call(alice.key, 'POST', '/account/unread', {})).statusCode, 405);
    const ro = await cp.call(readOnly.key, 'POST', '/account/edge-ips', {});
    assert.deepEqual([ro.statusCode, ro.json()], [403, { error: 'read-only API key' }]);
  });
});

test('EDGE_IPV4 / EDGE_IPV6 must hold addresses of their family', () => {
  assert.deepEqual(loadConfig({}).edgeIpv4, ['127.0.0.1']);
  for (const [key, value] of [
    ['EDGE_IPV4', '::1'],
    ['EDGE_IPV4', 'edge.example.org'],
    ['EDGE_IPV6', '127.0.0.1'],
    ['EDGE_IPV6', 'fe80::1%eth0'],
  ])
    assert.throws(() => loadConfig({ [key]: value }), {
      message: new RegExp(`${key} holds "${value}", which is not an IPv`),
    });
});
