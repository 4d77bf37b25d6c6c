// The WAF default protection through the API: created with every domain (free plan included), its status, edits
// reported as modified, restore resetting or recreating it, the free plan's gate on editing waf rules (403 naming the
// feature) and permissions; the rule reaches the snapshot the edge reads.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { eq } from 'drizzle-orm';
import { decodeDomainSnapshot } from '@platform/shared/config';
import { decodeRuleBody } from '@platform/shared/match';
import { startTestControlPlane } from '../../../../test/helpers/control-plane.js';
import { configLog, domains } from '../../db/schema.js';
import { setPlan } from '../../plans/subscriptions.js';

test('waf default protection: created with the domain, status, restore, plan gate', async (t) => {
  const cp = await startTestControlPlane(t);
  const owner = await cp.user();
  const name = await cp.domain(owner.key, 'waf-default.example.org');
  const [dom] = await cp.database.db.select().from(domains).where(eq(domains.name, name));
  const status = `/domains/${name}/rules/waf/default-protection`;
  const restore = `${status}/restore`;

  // A new domain (free plan) is protected by the default rule.
  const s0 = (await cp.call(owner.key, 'GET', status)).json();
  assert.equal(s0.protected, true);
  assert.equal(s0.state, 'default');
  assert.equal(s0.paranoia_level, 1);
  assert.equal(s0.action_mode, 'enforce');
  const list = (await cp.call(owner.key, 'GET', `/domains/${name}/rules/waf/`)).json();
  assert.equal(list.length, 1);
  assert.equal(list[0].id, s0.rule_id);
  assert.equal(list[0].default_protection, true);
  assert.equal(list[0].priority, 1000);
  assert.equal(list[0].anomaly_threshold, 5);
  assert.deepEqual(list[0].path_includes, ['/*']);
  const entries = await cp.database.db.select().from(configLog).where(eq(configLog.domainId, dom.id));
  const snap = decodeDomainSnapshot(entries.at(-1)!.payload);
  const inSnap = snap.ruleSet.rules.find((r) => r.id === s0.rule_id);
  assert.ok(inSnap?.enabled && inSnap.type === 'waf', 'the edge gets it');
  assert.equal(decodeRuleBody(inSnap.body).paranoia_level, 1);

  // The free plan cannot edit waf rules (403 naming the feature) but can disable, restore and read the status.
  const put = await cp.call(owner.key, 'PUT', `/domains/${name}/rules/waf/${s0.rule_id}`, { paranoia_level: 2 });
  assert.equal(put.statusCode, 403);
  assert.match(put.json().error, /waf/);
  const off = await cp.call(owner.key, 'PATCH', `/domains/${name}/rules/waf/${s0.rule_id}/enabled`, { enabled: false });
  assert.equal(off.statusCode, 200);
  assert.deepEqual((await cp.call(owner.key, 'GET', status)).json(), { ...s0, protected: false, state: 'modified' });
  const back = (await cp.call(owner.key, 'POST', restore)).json();
  assert.deepEqual(back, s0);

  // On a plan with the WAF: edits keep the rule identifiable (modified), restore resets them; deleted, restore
  // creates it again; the domain's own waf rules are left alone.
  await setPlan(cp.database.db, dom.id, 'enterprise');
  const edited = await cp.call(owner.key, 'PUT', `/domains/${name}/rules/waf/${s0.rule_id}`, {
    paranoia_level: 3,
    action_mode: 'dry_run',
    default_protection: false, // read-only: ignored
    exclusions: [{ rule_ids: ['sqli'], args: ['q'] }],
  });
  assert.equal(edited.statusCode, 200, edited.body);
  assert.equal(edited.json().default_protection, true);
  const s1 = (await cp.call(owner.key, 'GET', status)).json();
  assert.deepEqual(s1, {
    protected: false,
    state: 'modified',
    rule_id: s0.rule_id,
    paranoia_level: 3,
    action_mode: 'dry_run',
  });
  const own = (
    await cp.call(owner.key, 'POST', `/domains/${name}/rules/waf/`, { paranoia_level: 2, path_includes: ['/api/*'] })
  ).json();
  assert.equal(own.default_protection, undefined, 'a rule of the domain is not the default one');
  assert.deepEqual((await cp.call(owner.key, 'POST', restore)).json(), s0);
  const reset = (await cp.call(owner.key, 'GET', `/domains/${name}/rules/waf/${s0.rule_id}`)).json();
  assert.deepEqual([reset.paranoia_level, reset.action_mode, reset.exclusions], [1, 'enforce', []]);
  assert.equal((await cp.call(owner.key, 'DELETE', `/domains/${name}/rules/waf/${s0.rule_id}`)).statusCode, 200);
  assert.deepEqual((await cp.call(owner.key, 'GET', status)).json(), {
    protected: false,
    state: 'missing',
    rule_id: null,
    paranoia_level: null,
    action_mode: null,
  });
  const again = (await cp.call(owner.key, 'POST', restore)).json();
  assert.equal(again.state, 'default');
  assert.notEqual(again.rule_id, s0.rule_id);
  const after = (await cp.call(owner.key, 'GET', `/domains/${name}/rules/waf/`)).json();
  assert.deepEqual(
    after.map((r: { id: number }) => r.id).sort(),
    [own.id, again.rule_id].sort(),
    'the domain’s own rule is kept',
  );

  // Permissions: a viewer reads the status, cannot restore; a stranger sees nothing.
  const viewer = await cp.user();
  await cp.addMember(name, viewer.id, 'viewer');
  assert.equal((await cp.call(viewer.key, 'GET', status)).statusCode, 200);
  assert.equal((await cp.call(viewer.key, 'POST', restore)).statusCode, 403);
  const stranger = await cp.user();
  assert.equal((await cp.call(stranger.key, 'GET', status)).statusCode, 404);
});
