import { test } from 'node:test';
import assert from 'node:assert/strict';
import { and, eq } from 'drizzle-orm';
import { startTestControlPlane } from '../../../../test/helpers/control-plane.js';
import { attacks, configLog, domains, rules } from '../../db/schema.js';
import { setOverride } from '../../plans/subscriptions.js';

test('attack protection API: switches, detected attacks, enforce and ignore', async (t) => {
  const cp = await startTestControlPlane(t);
  const db = cp.database.db;
  const owner = await cp.user();
  const name = await cp.domain(owner.key, 'attacked.example.org');
  const [dom] = await db.select().from(domains).where(eq(domains.name, name));
  const other = await cp.user();
  const otherName = await cp.domain(other.key, 'elsewhere.example.org');
  const [otherDom] = await db.select().from(domains).where(eq(domains.name, otherName));
  const switches = `/domains/${name}/attack-protection`;
  const defaults = {
    auto_under_attack: false,
    auto_rate_limit: false,
    request_rate_multiplier: 5,
    error_rate_percent: 50,
    min_requests_per_minute: 1000,
  };
  const logLength = async () => (await db.select().from(configLog).where(eq(configLog.domainId, dom.id))).length;

  await t.test('GET answers the defaults before any change; 404 for a domain not the caller’s', async () => {
    const res = await cp.call(owner.key, 'GET', switches);
    assert.deepEqual([res.statusCode, res.json()], [200, defaults]);
    const hidden = await cp.call(other.key, 'GET', switches);
    assert.deepEqual([hidden.statusCode, hidden.json()], [404, { error: 'domain not found' }]);
    assert.equal((await cp.call(owner.key, 'GET', '/domains/nope.example/attack-protection')).statusCode, 404);
  });

  await t.test('PUT changes the fields given, keeps the rest, and appends nothing to the config log', async () => {
    const before = await logLength();
    const res = await cp.call(owner.key, 'PUT', switches, { auto_under_attack: true, request_rate_multiplier: 10 });
    const want = { ...defaults, auto_under_attack: true, request_rate_multiplier: 10 };
    assert.deepEqual([res.statusCode, res.json()], [200, want]);
    const res2 = await cp.call(owner.key, 'PUT', switches, { auto_rate_limit: true, min_requests_per_minute: 10 });
    const want2 = { ...want, auto_rate_limit: true, min_requests_per_minute: 10 };
    assert.deepEqual(res2.json(), want2);
    assert.deepEqual((await cp.call(owner.key, 'GET', switches)).json(), want2);
    assert.deepEqual((await cp.call(owner.key, 'PUT', switches, {})).json(), want2, 'an empty body changes nothing');
    assert.equal(await logLength(), before, 'the edge is not told: nothing it serves changed');
  });

  await t.test('bad input is 400 and stores nothing', async () => {
    const before = (await cp.call(owner.key, 'GET', switches)).json();
    for (const body of [
      { request_rate_multiplier: 1 },
      { request_rate_multiplier: 101 },
      { error_rate_percent: 0 },
      { error_rate_percent: 101 },
      { min_requests_per_minute: 9 },
      { min_requests_per_minute: 10_000_001 },
      { min_requests_per_minute: 1.5 },
      { auto_under_attack: 'yes' },
      { auto_rate_limit: true, unknown: 1 },
      [true],
      'x'.repeat(100),
    ]) {
      const res = await cp.call(owner.key, 'PUT', switches, body);
      assert.equal(res.statusCode, 400, JSON.stringify(body));
      assert.equal(typeof res.json().error, 'string');
    }
    assert.deepEqual((await cp.call(owner.key, 'GET', switches)).json(), before);
    const text = await cp.call(owner.key, 'PUT', switches, 'a', { 'content-type': 'text/plain' });
    assert.equal(text.statusCode, 415);
  });

  await t.test('plan gates: turning a switch on needs its feature (403 naming it); off never does', async () => {
    await cp.call(owner.key, 'PUT', switches, { auto_under_attack: false, auto_rate_limit: false });
    await setOverride(db, dom.id, 'under_attack_allowed', false);
    let res = await cp.call(owner.key, 'PUT', switches, { auto_under_attack: true });
    assert.equal(res.statusCode, 403);
    assert.match(res.json().error, /under_attack_allowed/);
    await setOverride(db, dom.id, 'disabled_rule_types', '["rate_limit"]');
    res = await cp.call(owner.key, 'PUT', switches, { auto_rate_limit: true });
    assert.equal(res.statusCode, 403);
    assert.match(res.json().error, /rate_limit/);
    res = await cp.call(owner.key, 'PUT', switches, { auto_under_attack: false, error_rate_percent: 20 });
    assert.deepEqual([res.statusCode, res.json().error_rate_percent], [200, 20], 'thresholds and off stay allowed');
    await setOverride(db, dom.id, 'under_attack_allowed', null);
    await setOverride(db, dom.id, 'disabled_rule_types', null);
  });

  await t.test('a disabled domain: switching on is 409, off is not; a viewer may read, not write', async () => {
    await db.update(domains).set({ state: 'disabled' }).where(eq(domains.id, dom.id));
    const res = await cp.call(owner.key, 'PUT', switches, { auto_under_attack: true });
    assert.deepEqual([res.statusCode, res.json()], [409, { error: 'domain is disabled' }]);
    assert.equal((await cp.call(owner.key, 'PUT', switches, { auto_under_attack: false })).statusCode, 200);
    await db.update(domains).set({ state: 'active' }).where(eq(domains.id, dom.id));
    const viewer = await cp.user();
    await cp.addMember(name, viewer.id, 'viewer');
    assert.equal((await cp.call(viewer.key, 'GET', switches)).statusCode, 200);
    assert.equal((await cp.call(viewer.key, 'PUT', switches, { auto_under_attack: false })).statusCode, 403);
    assert.equal((await cp.call(viewer.key, 'GET', `/domains/${name}/attacks/`)).statusCode, 200);
  });

  const TOP_CLIENTS = [
    { address: '198.51.100.7', requests: 50_000 },
    { address: '2001:db8::9', requests: 30_000 },
  ];
  const RULE_BODY = { path_includes: ['/login'], requests: 100, period_s: 60, key: 'ip', action: 'block' };
  const t0 = new Date('2026-11-25T10:00:00Z');
  const insertAttack = async (domainId: number, minutes: number, over: Partial<typeof attacks.$inferInsert> = {}) => {
    const [row] = await db
      .insert(attacks)
      .values({
        domainId,
        kind: 'request_rate',
        host: 'www.attacked.example.org',
        path: '/login',
        startedAt: new Date(t0.getTime() + minutes * 60_000),
        peakRequestsPerMinute: 90_000,
        topClients: TOP_CLIENTS,
        ruleType: 'rate_limit',
        ruleBody: RULE_BODY,
        ...over,
      })
      .returning();
    return row;
  };
  const a1 = await insertAttack(dom.id, 0, { endedAt: new Date(t0.getTime() + 600_000) });
  const a2 = await insertAttack(dom.id, 5, {
    kind: 'error_rate',
    ruleType: 'drop',
    ruleBody: { ip_includes: ['198.51.100.7', '2001:db8::9'], status_code: 403 },
  });
  const a3 = await insertAttack(dom.id, 10, { ruleBody: { requests: 0, period_s: 60 } });
  const foreign = await insertAttack(otherDom.id, 1);
  const list = `/domains/${name}/attacks/`;

  await t.test('GET attacks: newest first, with the suggested rule, filtered by status and limited', async () => {
    const res = await cp.call(owner.key, 'GET', list);
    assert.equal(res.statusCode, 200);
    const got = res.json();
    assert.deepEqual(
      got.map((a: { id: number }) => a.id),
      [a3.id, a2.id, a1.id],
      'newest first; another domain’s attack is not listed',
    );
    assert.deepEqual(got[2], {
      id: a1.id,
      kind: 'request_rate',
      host: 'www.attacked.example.org',
      path: '/login',
      started_at: '2026-11-25T10:00:00.000Z',
      ended_at: '2026-11-25T10:10:00.000Z',
      peak_requests_per_minute: 90_000,
      top_clients: TOP_CLIENTS,
      rule_type: 'rate_limit',
      suggested_rule: RULE_BODY,
      status: 'detected',
      rule_id: null,
      automatic_actions: [],
    });
    assert.equal(got[0].ended_at, null, 'still going on');
    const limited = (await cp.call(owner.key, 'GET', `${list}?limit=1`)).json();
    assert.deepEqual(
      limited.map((a: { id: number }) => a.id),
      [a3.id],
    );
    assert.deepEqual((await cp.call(owner.key, 'GET', `${list}?status=enforced`)).json(), []);
    for (const q of ['?limit=0', '?limit=501', '?status=other', '?limit=x'])
      assert.equal((await cp.call(owner.key, 'GET', `${list}${q}`)).statusCode, 400, q);
    assert.equal((await cp.call(other.key, 'GET', list)).statusCode, 404);
  });

  await t.test('top_clients are bounded to 10 on the way out', async () => {
    const many = Array.from({ length: 25 }, (_, i) => ({ address: `192.0.2.${i + 1}`, requests: 100 - i }));
    const big = await insertAttack(dom.id, -60, { topClients: many });
    const got = (await cp.call(owner.key, 'GET', `${list}?limit=500`))
      .json()
      .find((a: { id: number }) => a.id === big.id);
    assert.deepEqual(got.top_clients, many.slice(0, 10));
    await db.delete(attacks).where(eq(attacks.id, big.id));
  });

  await t.test('enforce creates the suggested rule through the rules service and marks the attack', async () => {
    const before = await logLength();
    const res = await cp.call(owner.key, 'POST', `${list}${a1.id}/enforce`);
    assert.equal(res.statusCode, 200, res.body);
    const got = res.json();
    assert.equal(got.status, 'enforced');
    assert.ok(Number.isInteger(got.rule_id));
    const rule = (await cp.call(owner.key, 'GET', `/domains/${name}/rules/rate_limit/${got.rule_id}`)).json();
    assert.deepEqual(
      [rule.requests, rule.period_s, rule.key, rule.action, rule.path_includes],
      [100, 60, 'ip', 'block', ['/login']],
    );
    assert.equal(await logLength(), before + 1, 'the rule reaches the nodes through the config log');
    // Enforced twice: 409 naming the rule, and no second rule.
    const again = await cp.call(owner.key, 'POST', `${list}${a1.id}/enforce`);
    assert.deepEqual(
      [again.statusCode, again.json().error],
      [409, `attack ${a1.id} is already enforced by rule ${got.rule_id}`],
    );
    const ignore = await cp.call(owner.key, 'POST', `${list}${a1.id}/ignore`);
    assert.equal(ignore.statusCode, 409);
    const n = await db
      .select()
      .from(rules)
      .where(and(eq(rules.domainId, dom.id), eq(rules.type, 'rate_limit')));
    assert.equal(n.length, 1);
    assert.deepEqual(
      (await cp.call(owner.key, 'GET', `${list}?status=enforced`)).json().map((a: { id: number }) => a.id),
      [a1.id],
    );
    // The rule deleted: the attack keeps its status but no rule; it may be enforced again.
    assert.equal(
      (await cp.call(owner.key, 'DELETE', `/domains/${name}/rules/rate_limit/${got.rule_id}`)).statusCode,
      200,
    );
    const [row] = await db.select().from(attacks).where(eq(attacks.id, a1.id));
    assert.deepEqual([row.status, row.ruleId], ['enforced', null]);
    const re = await cp.call(owner.key, 'POST', `${list}${a1.id}/enforce`);
    assert.equal(re.statusCode, 200, re.body);
    assert.notEqual(re.json().rule_id, got.rule_id);
  });

  await t.test(
    'ignore marks the attack ignored (twice changes nothing); an ignored attack may be enforced',
    async () => {
      const res = await cp.call(owner.key, 'POST', `${list}${a2.id}/ignore`);
      assert.deepEqual([res.statusCode, res.json().status, res.json().rule_id], [200, 'ignored', null]);
      assert.equal((await cp.call(owner.key, 'POST', `${list}${a2.id}/ignore`)).json().status, 'ignored');
      const enforced = await cp.call(owner.key, 'POST', `${list}${a2.id}/enforce`);
      assert.equal(enforced.statusCode, 200, enforced.body);
      const rule = (await cp.call(owner.key, 'GET', `/domains/${name}/rules/drop/${enforced.json().rule_id}`)).json();
      assert.deepEqual(rule.ip_includes, ['198.51.100.7', '2001:db8::9']);
      assert.equal(rule.status_code, 403);
    },
  );

  await t.test('a suggested rule the rules service refuses is its 400 / 403; nothing is stored', async () => {
    const rulesBefore = await db.select().from(rules).where(eq(rules.domainId, dom.id));
    const bad = await cp.call(owner.key, 'POST', `${list}${a3.id}/enforce`);
    assert.equal(bad.statusCode, 400);
    assert.match(bad.json().error, /requests/);
    await db
      .update(attacks)
      .set({ ruleBody: { requests: 5, period_s: 10 } })
      .where(eq(attacks.id, a3.id));
    await setOverride(db, dom.id, 'disabled_rule_types', '["rate_limit"]');
    const gated = await cp.call(owner.key, 'POST', `${list}${a3.id}/enforce`);
    assert.equal(gated.statusCode, 403);
    assert.match(gated.json().error, /rate_limit/);
    await setOverride(db, dom.id, 'disabled_rule_types', null);
    assert.deepEqual(await db.select().from(rules).where(eq(rules.domainId, dom.id)), rulesBefore);
    const [row] = await db.select().from(attacks).where(eq(attacks.id, a3.id));
    assert.deepEqual([row.status, row.ruleId], ['detected', null]);
  });

  await t.test(
    '404: unknown attack, another domain’s attack, a caller without the domain; 403 for a viewer',
    async () => {
      for (const action of ['enforce', 'ignore']) {
        for (const id of [999_999, foreign.id]) {
          const res = await cp.call(owner.key, 'POST', `${list}${id}/${action}`);
          assert.deepEqual([res.statusCode, res.json()], [404, { error: 'attack not found' }], `${action} ${id}`);
        }
        assert.equal((await cp.call(other.key, 'POST', `${list}${a3.id}/${action}`)).statusCode, 404);
        assert.equal((await cp.call(owner.key, 'POST', `${list}0/${action}`)).statusCode, 400);
        assert.equal((await cp.call(owner.key, 'POST', `${list}99999999999/${action}`)).statusCode, 400);
      }
      const viewer = await cp.user();
      await cp.addMember(name, viewer.id, 'viewer');
      assert.equal((await cp.call(viewer.key, 'POST', `${list}${a3.id}/ignore`)).statusCode, 403);
      const [row] = await db.select().from(attacks).where(eq(attacks.id, foreign.id));
      assert.equal(row.status, 'detected', 'another domain’s attack untouched');
    },
  );

  await t.test('concurrent enforces of one attack create one rule', async () => {
    const a4 = await insertAttack(dom.id, 20, { ruleBody: { requests: 7, period_s: 10 } });
    const results = await Promise.all([1, 2, 3].map(() => cp.call(owner.key, 'POST', `${list}${a4.id}/enforce`)));
    assert.deepEqual(results.map((r) => r.statusCode).sort(), [200, 409, 409]);
    const made = await db.select().from(rules).where(eq(rules.domainId, dom.id));
    assert.equal(made.filter((r) => r.fields.requests === 7).length, 1);
  });
});
