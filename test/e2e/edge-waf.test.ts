// Issue 13 item 1 through running processes: a domain created through the API is protected by the WAF's default
// rule at an edge node (an attack answered 403, a benign look-alike passed); the free plan cannot edit waf rules
// (403 naming the type) but can switch the default rule off and restore it; with the type allowed, dry run lets the
// attack through.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { send, startStubOrigin } from '../../edge-node/src/testing/harness.js';
import { startControlPlane } from './sync-harness.js';
import { addProxiedRecord, startEdgeNodeProcess, waitUntil } from './edge-harness.js';

test('WAF default protection from the API to an edge node', { timeout: 300_000 }, async (t) => {
  const origin = await startStubOrigin('waf-origin');
  t.after(() => origin.close());
  const cp = await startControlPlane('edge-waf');
  t.after(() => cp.stop());
  const domain = 'guarded-by-default.example';
  await cp.api('POST', '/domains/', { name: domain });
  await addProxiedRecord(cp, domain, 'www', origin.port);
  const edge = await startEdgeNodeProcess(cp);
  t.after(() => edge.stop());
  const www = `www.${domain}`;
  const attack = `/search?q=${encodeURIComponent("1' union select password from users--")}`;
  const benign = `/people?name=${encodeURIComponent("O'Brien")}&q=select+a+plan`;
  const status = (path: string) => send(edge.httpPort, www, path).then((r) => r.status);

  await waitUntil('the domain at the edge', async () => ((await status(benign)) === 200 ? true : undefined));
  const blocked = await send(edge.httpPort, www, attack);
  assert.equal(blocked.status, 403);
  assert.equal(blocked.headers['x-edge-error'], 'EDGE_ERR_WAF_BLOCKED');
  assert.ok(!origin.seen.some((s) => s.url.startsWith('/search')), 'the origin never saw the attack');

  const s = (await cp.api('GET', `/domains/${domain}/rules/waf/default-protection`)) as Record<string, unknown>;
  assert.deepEqual({ protected: s.protected, state: s.state }, { protected: true, state: 'default' });
  const ruleId = s.rule_id as number;

  // Free plan: no editing (403 naming waf), but off and restore.
  await cp.api('PUT', `/domains/${domain}/rules/waf/${ruleId}`, { paranoia_level: 2 }, 403);
  await cp.api('PATCH', `/domains/${domain}/rules/waf/${ruleId}/enabled`, { enabled: false });
  await waitUntil('the WAF off', async () => ((await status(attack)) === 200 ? true : undefined));
  await cp.api('POST', `/domains/${domain}/rules/waf/default-protection/restore`);
  await waitUntil('the WAF back', async () => ((await status(attack)) === 403 ? true : undefined));

  // With waf rules allowed by the plan: dry run lets the attack through; enforce again refuses it.
  await cp.restart(() => cp.cli('plan', 'override', domain, 'disabled_rule_types', '[]'));
  await cp.api('PUT', `/domains/${domain}/rules/waf/${ruleId}`, { action_mode: 'dry_run' });
  await waitUntil('dry run at the edge', async () => ((await status(attack)) === 200 ? true : undefined));
  assert.equal(
    ((await cp.api('GET', `/domains/${domain}/rules/waf/default-protection`)) as { state: string }).state,
    'modified',
  );
  await cp.api('PUT', `/domains/${domain}/rules/waf/${ruleId}`, { action_mode: 'enforce' });
  await waitUntil('enforced again', async () => ((await status(attack)) === 403 ? true : undefined));
  assert.equal(await status(benign), 200);
});
