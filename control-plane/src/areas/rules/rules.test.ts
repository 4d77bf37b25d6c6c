import { test } from 'node:test';
import assert from 'node:assert/strict';
import { eq } from 'drizzle-orm';
import { applyDelta, decodeDomainSnapshot, type DomainSnapshot } from '@platform/shared/config';
import { decodeRuleBody, verifyPassword } from '@platform/shared/match';
import { startTestControlPlane } from '../../../../test/helpers/control-plane.js';
import { configLog, dnsRecords, domains, rules } from '../../db/schema.js';

test('rules API: the seven operations, validation, scope, plan limits and the config log', async (t) => {
  const cp = await startTestControlPlane(t);
  const owner = await cp.user();
  const name = await cp.domain(owner.key, 'rules-api.example.org');
  const other = await cp.domain(owner.key, 'other-rules.example.org');
  const [dom] = await cp.database.db.select().from(domains).where(eq(domains.name, name));
  const [proxied, plain] = await cp.database.db
    .insert(dnsRecords)
    .values([
      { domainId: dom.id, name: 'www', type: 'A', destination: '192.0.2.10', proxied: true },
      { domainId: dom.id, name: 'mail', type: 'A', destination: '192.0.2.11', proxied: false },
    ])
    .returning();
  const base = `/domains/${name}/rules/origin_route/`;

  await t.test('create applies the spec defaults and canonicalises IP lists', async () => {
    const res = await cp.call(owner.key, 'POST', base, {
      address: '8.8.8.8',
      record_id: proxied.id,
      host_includes: ['*.Rules-API.example.org'],
      ip_includes: ['10.1.2.3/8', '::ffff:192.0.2.1', '198.51.100.9-198.51.100.1', '10.0.0.0/8'],
      country: 'ZZ',
    });
    assert.equal(res.statusCode, 200, res.body);
    const r = res.json();
    assert.equal(r.type, 'origin_route');
    assert.equal(r.domain_id, dom.id);
    assert.equal(r.priority, 100);
    assert.equal(r.enabled, true);
    assert.equal(r.action_mode, 'enforce');
    assert.deepEqual(r.record_ids, [proxied.id]);
    assert.equal(r.record_id, proxied.id);
    assert.equal(r.host_match_type, 'wildcard');
    assert.deepEqual(r.host_includes, ['*.rules-api.example.org']);
    assert.deepEqual(r.ip_includes, ['10.0.0.0/8', '192.0.2.1', '198.51.100.1-198.51.100.9']);
    assert.deepEqual(r.path_includes, ['/*']);
    assert.equal(r.path_match_type, 'wildcard');
    assert.equal(r.scheme, 'http');
    assert.equal(r.port, 80);
    assert.equal(r.country, 'US', 'country is detected from the address, not taken from the body');
    assert.ok(r.created_at && r.updated_at);

    const got = await cp.call(owner.key, 'GET', `${base}${r.id}`);
    assert.equal(got.statusCode, 200);
    assert.deepEqual(got.json(), r);
  });

  await t.test('bad input is 400 with every problem and stores nothing', async () => {
    const before = (await cp.call(owner.key, 'GET', base)).json().length;
    const res = await cp.call(owner.key, 'POST', base, {
      address: '192.0.2.1',
      host_match_type: '',
      host_includes: ['a.example.org'],
      ip_excludes: ['nope'],
      path_match_type: 'regex',
      path_includes: ['(broken'],
    });
    assert.equal(res.statusCode, 400);
    const body = res.json();
    assert.match(body.error, /host_match_type/);
    assert.match(body.error, /ip_excludes\[0\]/);
    assert.match(body.error, /path_includes\[0\]/);
    assert.equal((await cp.call(owner.key, 'GET', base)).json().length, before);
  });

  await t.test('a regex the linear-time engine cannot run is 400 naming its field, and nothing is stored', async () => {
    const before = (await cp.call(owner.key, 'GET', base)).json().length;
    const res = await cp.call(owner.key, 'POST', base, {
      address: '192.0.2.1',
      host_match_type: 'regex',
      host_pattern: '^(?!admin)',
      path_match_type: 'regex',
      path_includes: ['^/ok/'],
      path_excludes: ['^/ok/x', '^/(a)\\1$'],
    });
    assert.equal(res.statusCode, 400);
    const error = res.json().error as string;
    assert.match(error, /host_pattern: invalid regex for the linear-time engine/);
    assert.match(error, /path_excludes\[1\]: invalid regex for the linear-time engine/);
    assert.doesNotMatch(error, /path_includes|path_excludes\[0\]/);
    assert.equal((await cp.call(owner.key, 'GET', base)).json().length, before);
  });

  await t.test('record_ids must be proxied records of this domain', async () => {
    const res = await cp.call(owner.key, 'POST', base, { address: '192.0.2.1', record_ids: [plain.id, 999999] });
    assert.equal(res.statusCode, 400);
    assert.match(res.json().error, /record_ids\[0\].*not a proxied record/);
  });

  await t.test("origin_route host_header must be inside one of the owner's active domains", async () => {
    const bad = await cp.call(owner.key, 'POST', base, { address: '192.0.2.1', host_header: 'evil.example.net' });
    assert.equal(bad.statusCode, 400);
    assert.match(bad.json().error, /host_header/);
    const ok = await cp.call(owner.key, 'POST', base, {
      address: '192.0.2.1',
      host_header: 'origin.rules-api.example.org',
    });
    assert.equal(ok.statusCode, 200, ok.body);
    // other-rules.example.org belongs to the same owner but is not active yet.
    const inactive = await cp.call(owner.key, 'POST', base, { address: '192.0.2.1', host_header: `x.${other}` });
    assert.equal(inactive.statusCode, 400);
    await cp.database.db.update(domains).set({ state: 'active' }).where(eq(domains.name, other));
    const active = await cp.call(owner.key, 'POST', base, { address: '192.0.2.1', host_header: `x.${other}` });
    assert.equal(active.statusCode, 200, active.body);
  });

  await t.test('update merges, enable/disable, reorder, delete', async () => {
    const list = (await cp.call(owner.key, 'GET', base)).json() as { id: number; priority: number }[];
    const first = list[0];
    const put = await cp.call(owner.key, 'PUT', `${base}${first.id}`, {
      priority: 5,
      host_includes: [],
      host_pattern: 'www.rules-api.example.org',
      host_match_type: 'exact',
    });
    assert.equal(put.statusCode, 200, put.body);
    assert.equal(put.json().priority, 5);
    assert.equal(put.json().address, '8.8.8.8', 'omitted fields are unchanged');
    assert.equal(put.json().host_match_type, 'exact');

    const off = await cp.call(owner.key, 'PATCH', `${base}${first.id}/enabled`, { enabled: false });
    assert.equal(off.statusCode, 200);
    assert.equal(off.json().enabled, false);

    const ids = list.map((r) => r.id).reverse();
    const re = await cp.call(owner.key, 'PATCH', `${base}reorder`, { ids });
    assert.equal(re.statusCode, 200, re.body);
    assert.deepEqual(
      re.json().map((r: { id: number }) => r.id),
      ids,
    );
    assert.deepEqual(
      re.json().map((r: { priority: number }) => r.priority),
      ids.map((_, i) => (i + 1) * 10),
    );
    const partial = await cp.call(owner.key, 'PATCH', `${base}reorder`, { ids: ids.slice(1) });
    assert.equal(partial.statusCode, 400);

    const del = await cp.call(owner.key, 'DELETE', `${base}${list[1].id}`);
    assert.equal(del.statusCode, 200);
    assert.equal((await cp.call(owner.key, 'GET', `${base}${list[1].id}`)).statusCode, 404);
  });

  const storedUsers = async (id: number) => {
    const [row] = await cp.database.db.select().from(rules).where(eq(rules.id, id));
    return (row!.fields as { users: { username: string; password_hash: string }[] }).users;
  };

  await t.test('a rule read back can be sent back unchanged (PUT round trip); hashes are never read back', async () => {
    const created = await cp.call(owner.key, 'POST', `/domains/${name}/rules/basic_auth/`, {
      users: [{ username: 'ann', password: 'pw1' }],
      realm: 'R',
    });
    assert.equal(created.statusCode, 200, created.body);
    const rule = created.json<Record<string, unknown> & { id: number; users: Record<string, unknown>[] }>();
    assert.deepEqual(rule.users, [{ username: 'ann' }], 'neither password nor hash is read back');
    const before = await storedUsers(rule.id);
    // Every role reads the same: a viewer too sees usernames only.
    const viewer = await cp.user();
    await cp.addMember(name, viewer.id, 'viewer');
    const seen = await cp.call(viewer.key, 'GET', `/domains/${name}/rules/basic_auth/${rule.id}`);
    assert.equal(seen.statusCode, 200, seen.body);
    assert.doesNotMatch(seen.body, /scrypt|password/);
    const back = await cp.call(owner.key, 'PUT', `/domains/${name}/rules/basic_auth/${rule.id}`, rule);
    assert.equal(back.statusCode, 200, back.body);
    assert.deepEqual({ ...back.json<Record<string, unknown>>(), updated_at: '' }, { ...rule, updated_at: '' });
    assert.deepEqual(await storedUsers(rule.id), before, 'a user sent without a password keeps the stored one');
  });

  await t.test('a PUT with a new basic_auth password stores its hash; other fields are kept', async () => {
    const url = `/domains/${name}/rules/basic_auth/`;
    const created = await cp.call(owner.key, 'POST', url, { users: [{ username: 'bo', password: 'old' }], realm: 'R' });
    assert.equal(created.statusCode, 200, created.body);
    const id = created.json<{ id: number }>().id;
    const res = await cp.call(owner.key, 'PUT', `${url}${id}`, {
      users: [
        { username: 'bo', password: 'new' },
        { username: 'cy', password: 'other' },
      ],
    });
    assert.equal(res.statusCode, 200, res.body);
    const rule = res.json<{ realm: string; users: { username: string }[] }>();
    assert.equal(rule.realm, 'R');
    assert.deepEqual(rule.users, [{ username: 'bo' }, { username: 'cy' }]);
    const users = await storedUsers(id);
    assert.ok(await verifyPassword('new', users[0]!.password_hash));
    assert.ok(await verifyPassword('other', users[1]!.password_hash));
    assert.ok(!(await verifyPassword('old', users[0]!.password_hash)));
    // A new user without a password is refused; a known one without a password keeps it.
    const bad = await cp.call(owner.key, 'PUT', `${url}${id}`, { users: [{ username: 'bo' }, { username: 'dee' }] });
    assert.equal(bad.statusCode, 400);
    assert.match(bad.json().error, /users\[1\]\.password/);
    const kept = await cp.call(owner.key, 'PUT', `${url}${id}`, { users: [{ username: 'cy' }] });
    assert.equal(kept.statusCode, 200, kept.body);
    assert.ok(await verifyPassword('other', (await storedUsers(id))[0]!.password_hash));
  });

  await t.test('404 for a rule of another type or another domain', async () => {
    const r = (await cp.call(owner.key, 'POST', `/domains/${name}/rules/redirect/`, { target: '/new' })).json();
    assert.equal((await cp.call(owner.key, 'GET', `${base}${r.id}`)).statusCode, 404);
    assert.equal((await cp.call(owner.key, 'GET', `/domains/${other}/rules/redirect/${r.id}`)).statusCode, 404);
    assert.equal(
      (await cp.call(owner.key, 'PUT', `/domains/${other}/rules/redirect/${r.id}`, { target: '/x' })).statusCode,
      404,
    );
    assert.equal((await cp.call(owner.key, 'DELETE', `/domains/${other}/rules/redirect/${r.id}`)).statusCode, 404);
    const stranger = await cp.user();
    const hidden = await cp.call(stranger.key, 'GET', `/domains/${name}/rules/redirect/${r.id}`);
    assert.equal(hidden.statusCode, 404);
    assert.ok(typeof hidden.json().error === 'string');
  });

  await t.test('types without an engine keep their fields; a type disabled by the plan is 403', async () => {
    const res = await cp.call(owner.key, 'POST', `/domains/${name}/rules/captcha/`, {
      pass_ttl_s: 600,
      path_includes: ['/login'],
    });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().pass_ttl_s, 600);
    const waf = await cp.call(owner.key, 'POST', `/domains/${name}/rules/waf/`, { paranoia_level: 2 });
    assert.equal(waf.statusCode, 403);
    assert.match(waf.json().error, /waf/);
  });

  await t.test(
    'every type has a closed schema: an unknown field is 400 naming it, nothing stored (issue 8)',
    async () => {
      const before = (await cp.call(owner.key, 'GET', `/domains/${name}/rules/captcha/`)).json<unknown[]>().length;
      const blob = 'x'.repeat(100_000);
      for (const type of ['captcha', 'optimize', 'waf', 'cache', 'rewrite', 'drop']) {
        const res = await cp.call(owner.key, 'POST', `/domains/${name}/rules/${type}/`, { difficulty: blob });
        assert.equal(res.statusCode, 400, type);
        assert.deepEqual(res.json(), { error: 'unknown field difficulty' }, type);
      }
      const nested = await cp.call(owner.key, 'POST', `/domains/${name}/rules/origin_pool/`, {
        origins: [{ address: '192.0.2.1', extra: 1 }],
      });
      assert.deepEqual(nested.json(), { error: 'unknown field origins[0].extra' });
      const after = (await cp.call(owner.key, 'GET', `/domains/${name}/rules/captcha/`)).json<unknown[]>().length;
      assert.equal(after, before);
    },
  );

  await t.test('a rule id beyond the integer range is 400, not a failed query (issue 8)', async () => {
    for (const method of ['GET', 'PUT', 'DELETE'] as const) {
      const res = await cp.call(owner.key, method, `${base}2147483648`, method === 'PUT' ? {} : undefined);
      assert.equal(res.statusCode, 400, method);
      assert.deepEqual(res.json(), { error: 'ruleId must be between 1 and 2147483647' }, method);
    }
    assert.equal((await cp.call(owner.key, 'GET', `${base}2147483647`)).statusCode, 404);
  });

  await t.test('a viewer can read but not write', async () => {
    const viewer = await cp.user();
    await cp.addMember(name, viewer.id, 'viewer');
    assert.equal((await cp.call(viewer.key, 'GET', base)).statusCode, 200);
    assert.equal((await cp.call(viewer.key, 'POST', base, { address: '192.0.2.1' })).statusCode, 403);
  });

  await t.test('max_rules_per_set of the plan is enforced with 403', async () => {
    const url = `/domains/${name}/rules/drop/`;
    let status = 200;
    let n = 0;
    while (status === 200 && n < 1001) {
      status = (await cp.call(owner.key, 'POST', url, {})).statusCode;
      n++;
    }
    assert.equal(status, 403);
    assert.ok(n > 1);
  });

  await t.test('every rule write appends an entry naming its rules; the log squashed carries them all', async () => {
    const entries = await cp.database.db
      .select()
      .from(configLog)
      .where(eq(configLog.domainId, dom.id))
      .orderBy(configLog.version);
    const last = entries.at(-1)!;
    assert.equal(last.delta, true, 'a rule write appends a delta');
    assert.equal(decodeDomainSnapshot(last.payload).ruleSet.rules.length, 1, 'holding only the rule it wrote');
    let snap: DomainSnapshot | undefined;
    for (const e of entries) {
      const payload = decodeDomainSnapshot(e.payload);
      snap = !e.delta
        ? payload
        : applyDelta(snap!, {
            version: Number(e.version),
            domain: e.domainName,
            deleted: false,
            delta: true,
            snapshot: payload,
            removedRecordIds: e.removedRecordIds.map(Number),
            removedRuleIds: e.removedRuleIds.map(Number),
          });
    }
    const redirect = snap!.ruleSet.rules.find((r) => r.type === 'redirect');
    assert.ok(redirect);
    assert.equal(decodeRuleBody(redirect.body).target, '/new');
    assert.ok(
      snap!.ruleSet.rules.some((r) => !r.enabled),
      'disabled rules are carried too',
    );
  });
});
