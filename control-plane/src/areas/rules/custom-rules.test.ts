// The custom rules group (/domains/{domain}/custom-rules/): expressions compiled on write (400 naming the position of
// a syntax error, nothing stored), max_custom_rules and disabled_rule_types (403 naming the feature), the seven
// operations, and the rule carried in the domain's snapshot.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { eq } from 'drizzle-orm';
import { decodeRuleBody, encodeRuleBody, type RuleBody } from '@platform/shared/match';
import { startTestControlPlane } from '../../../../test/helpers/control-plane.js';
import { domains, rules } from '../../db/schema.js';
import { setOverride, setPlan } from '../../plans/subscriptions.js';

test('custom rules API', async (t) => {
  const cp = await startTestControlPlane(t);
  const owner = await cp.user();
  const name = await cp.domain(owner.key, 'custom-rules.example.org');
  const [dom] = await cp.database.db.select().from(domains).where(eq(domains.name, name));
  const base = `/domains/${name}/custom-rules/`;
  const stored = async () =>
    (await cp.database.db.select().from(rules).where(eq(rules.domainId, dom.id))).filter((r) => r.type === 'custom');

  await t.test('the free plan has max_custom_rules 0: 403 naming it', async () => {
    const res = await cp.call(owner.key, 'POST', base, { expression: 'ssl', action: 'log' });
    assert.equal(res.statusCode, 403, res.body);
    assert.match(res.json().error, /max_custom_rules/);
    assert.equal(res.json().feature, 'max_custom_rules');
  });

  await setPlan(cp.database.db, dom.id, 'pro');

  await t.test('create, get, list, update, enable, reorder, delete', async () => {
    const res = await cp.call(owner.key, 'POST', base, {
      expression: 'http.request.uri.path wildcard "/admin/*" and not ip.src in {10.0.0.0/8}',
      action: 'block',
      description: 'office only',
    });
    assert.equal(res.statusCode, 200, res.body);
    const r = res.json();
    assert.equal(r.type, 'custom');
    assert.equal(r.action, 'block');
    assert.equal(r.action_mode, 'enforce');
    assert.equal(r.priority, 100);
    assert.equal(r.description, 'office only');
    assert.deepEqual((await cp.call(owner.key, 'GET', `${base}${r.id}`)).json(), r);
    // Not one of the fifteen types: not reachable under /rules/{type}/.
    assert.equal((await cp.call(owner.key, 'GET', `/domains/${name}/rules/custom/`)).statusCode, 404);

    const second = (await cp.call(owner.key, 'POST', base, { expression: 'ssl', action: 'log' })).json();
    assert.equal(second.description, '');
    const put = await cp.call(owner.key, 'PUT', `${base}${second.id}`, {
      expression: 'not ssl',
      action_mode: 'dry_run',
    });
    assert.equal(put.statusCode, 200, put.body);
    assert.equal(put.json().expression, 'not ssl');
    assert.equal(put.json().action, 'log', 'omitted fields keep their values');
    assert.equal(put.json().action_mode, 'dry_run');
    // A rule read back can be sent back as is.
    assert.equal((await cp.call(owner.key, 'PUT', `${base}${second.id}`, put.json())).statusCode, 200);

    const off = await cp.call(owner.key, 'PATCH', `${base}${second.id}/enabled`, { enabled: false });
    assert.equal(off.json().enabled, false);
    const order = await cp.call(owner.key, 'PATCH', `${base}reorder`, { ids: [second.id, r.id] });
    assert.equal(order.statusCode, 200, order.body);
    assert.deepEqual(
      order.json().map((x: { id: number; priority: number }) => [x.id, x.priority]),
      [
        [second.id, 10],
        [r.id, 20],
      ],
    );
    const list = (await cp.call(owner.key, 'GET', base)).json();
    assert.equal(list.length, 2);
    assert.equal((await cp.call(owner.key, 'DELETE', `${base}${second.id}`)).statusCode, 200);
    assert.equal((await cp.call(owner.key, 'GET', `${base}${second.id}`)).statusCode, 404);

    // The snapshot's rule body carries the expression for the edge.
    const [row] = await stored();
    assert.equal(row.fields.expression, r.expression);
    assert.equal(decodeRuleBody(encodeRuleBody({ ...(row.filters as RuleBody), ...row.fields })).action, 'block');
  });

  await t.test('syntax errors: 400 naming line, column and what was expected; nothing stored', async () => {
    const before = (await stored()).length;
    const cases: [string, number, number, RegExp][] = [
      ['http.request.uri.path wildcard', 1, 31, /expected a string in double quotes, found the end of the expression/],
      ['http.host eq "a" and\n  ip.src in {10.0.0.0/40}', 2, 14, /invalid CIDR "10\.0\.0\.0\/40"/],
      ['http.hots eq "a"', 1, 1, /unknown field "http\.hots"/],
      ['(ssl', 1, 5, /expected "\)" closing the "\(" at line 1, column 1/],
      ['http.host matches "(a)\\1"', 1, 19, /linear-time engine/],
      ['ip.src wildcard "1.*"', 1, 8, /"wildcard" does not apply to ip\.src/],
    ];
    for (const [expression, line, column, message] of cases) {
      const res = await cp.call(owner.key, 'POST', base, { expression, action: 'block' });
      assert.equal(res.statusCode, 400, expression);
      const body = res.json();
      assert.ok(body.error.startsWith(`expression: line ${line}, column ${column}: `), body.error);
      assert.match(body.error, message);
      assert.equal(body.problems.length, 1);
      assert.deepEqual(
        [body.problems[0].path, body.problems[0].line, body.problems[0].column],
        ['expression', line, column],
      );
      assert.equal(typeof body.problems[0].offset, 'number');
    }
    // An update with a bad expression leaves the stored rule as it was.
    const [kept] = await stored();
    const put = await cp.call(owner.key, 'PUT', `${base}${kept.id}`, { expression: 'ssl and' });
    assert.equal(put.statusCode, 400);
    assert.match(put.json().error, /^expression: line 1, column 8: expected a field/);
    assert.equal((await stored()).find((r) => r.id === kept.id)!.fields.expression, kept.fields.expression);
    // Bounds: nesting, list size, length (the schema's maxLength), regex count.
    const deep = await cp.call(owner.key, 'POST', base, {
      expression: '('.repeat(40) + 'ssl' + ')'.repeat(40),
      action: 'block',
    });
    assert.match(deep.json().error, /^expression: line 1, column 33: nested deeper than 32 levels/);
    const list = await cp.call(owner.key, 'POST', base, {
      expression: `len(http.host) in {${'1 '.repeat(1025)}}`,
      action: 'block',
    });
    assert.match(list.json().error, /list longer than 1024 entries/);
    const long = await cp.call(owner.key, 'POST', base, { expression: 'ssl or '.repeat(600) + 'ssl', action: 'log' });
    assert.equal(long.statusCode, 400);
    const regexes = await cp.call(owner.key, 'POST', base, {
      expression: Array.from({ length: 9 }, (_, i) => `http.host matches "a${i}"`).join(' or '),
      action: 'log',
    });
    assert.match(regexes.json().error, /more than 8 regexes/);
    const action = await cp.call(owner.key, 'POST', base, { expression: 'ssl', action: 'redirect' });
    assert.equal(action.statusCode, 400);
    const missing = await cp.call(owner.key, 'POST', base, { action: 'block' });
    assert.equal(missing.statusCode, 400);
    assert.equal((await stored()).length, before);
  });

  await t.test('max_custom_rules is enforced (403 naming it); disabled_rule_types can refuse the group', async () => {
    await setOverride(cp.database.db, dom.id, 'max_custom_rules', 3);
    let status = 200;
    let n = (await stored()).length;
    while (status === 200 && n < 10) {
      const res = await cp.call(owner.key, 'POST', base, { expression: `http.host eq "h${n}"`, action: 'log' });
      status = res.statusCode;
      if (status === 403) assert.match(res.json().error, /allows at most 3 custom rules \(max_custom_rules\)/);
      n++;
    }
    assert.equal(status, 403);
    assert.equal((await stored()).length, 3);
    // Other rule types are counted apart (max_rules_per_set).
    assert.equal((await cp.call(owner.key, 'POST', `/domains/${name}/rules/drop/`, {})).statusCode, 200);
    await setOverride(cp.database.db, dom.id, 'disabled_rule_types', '["custom"]');
    const [one] = await stored();
    const res = await cp.call(owner.key, 'PUT', `${base}${one.id}`, { action: 'block' });
    assert.equal(res.statusCode, 403);
    assert.match(res.json().error, /rules of type custom/);
  });

  await t.test('a viewer reads, cannot write', async () => {
    await setOverride(cp.database.db, dom.id, 'disabled_rule_types', null);
    const viewer = await cp.user();
    await cp.addMember(name, viewer.id, 'viewer');
    assert.equal((await cp.call(viewer.key, 'GET', base)).statusCode, 200);
    assert.equal((await cp.call(viewer.key, 'POST', base, { expression: 'ssl', action: 'log' })).statusCode, 403);
  });
});
