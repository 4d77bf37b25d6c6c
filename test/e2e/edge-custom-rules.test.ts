// Issue 13 item 7 through running processes: custom rules written through the API reach an edge node through the
// config log and act there (block, then dry run, then a changed expression, then deleted); a syntax error is a 400
// naming its position and reaches no node; the plan's max_custom_rules gates the group.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { send, startStubOrigin } from '../../edge-node/src/testing/harness.js';
import { startControlPlane } from './sync-harness.js';
import { addProxiedRecord, startEdgeNodeProcess, waitUntil } from './edge-harness.js';

async function post(cp: { apiUrl: string; key: string }, path: string, body: unknown) {
  const res = await fetch(`${cp.apiUrl}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${cp.key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

test('custom rules through the API to an edge node', { timeout: 300_000 }, async (t) => {
  const origin = await startStubOrigin('cr-origin');
  t.after(() => origin.close());
  const cp = await startControlPlane('edge-custom-rules');
  t.after(() => cp.stop());
  const domain = 'custom-rules.example';
  await cp.api('POST', '/domains/', { name: domain });
  await addProxiedRecord(cp, domain, 'www', origin.port);
  const base = `/domains/${domain}/custom-rules/`;

  // The free plan allows none (max_custom_rules 0): 403 naming the limit.
  const refused = await post(cp, base, { expression: 'ssl', action: 'block' });
  assert.equal(refused.status, 403);
  assert.match(String(refused.body.error), /max_custom_rules/);
  await cp.restart(() => cp.cli('plan', 'override', domain, 'max_custom_rules', '5'));

  const edge = await startEdgeNodeProcess(cp);
  t.after(() => edge.stop());
  const www = `www.${domain}`;
  await waitUntil('the domain at the edge', async () =>
    (await send(edge.httpPort, www, '/')).status === 200 ? true : undefined,
  );

  const bad = await post(cp, base, { expression: 'http.request.uri.path wildcard "/admin/*" and', action: 'block' });
  assert.equal(bad.status, 400);
  assert.match(String(bad.body.error), /^expression: line 1, column 46: expected a field/);
  // More positions: a second line, an unterminated string, an unknown field, a bad CIDR, a regex RE2 refuses.
  for (const [expression, where] of [
    ['http.host eq "a"\nand http.request.method in {"GET" "POST"', 'line 2, column 41: expected "}" closing the list'],
    ['http.request.uri.path eq "/admin', 'line 1, column 26: unterminated string'],
    ['http.request.uri.pathx eq "/a"', 'line 1, column 1: unknown field "http.request.uri.pathx"'],
    ['ip.src in {10.0.0.0/33}', 'line 1, column 12: invalid CIDR'],
    ['http.user_agent matches "(a"', 'line 1, column 25: invalid regex'],
  ]) {
    const r = await post(cp, base, { expression, action: 'block' });
    assert.equal(r.status, 400, expression);
    assert.ok(String(r.body.error).startsWith(`expression: ${where}`), `${expression}: ${String(r.body.error)}`);
  }
  assert.deepEqual(await cp.api('GET', base), [], 'no refused expression was stored');

  type Created = { id: number; expression: string };
  const rule = await cp.api<Created>('POST', base, {
    expression: 'http.request.uri.path wildcard "/admin/*" and http.request.method in {"GET" "POST"}',
    action: 'block',
  });
  await waitUntil('the block at the edge', async () =>
    (await send(edge.httpPort, www, '/admin/panel')).status === 403 ? true : undefined,
  );
  assert.equal((await send(edge.httpPort, www, '/admin/panel', { method: 'PUT' })).status, 200);
  assert.equal((await send(edge.httpPort, www, '/public')).status, 200);

  await cp.api('PUT', `${base}${rule.id}`, { action_mode: 'dry_run' });
  await waitUntil('dry run passes', async () =>
    (await send(edge.httpPort, www, '/admin/panel')).status === 200 ? true : undefined,
  );
  await cp.api('PUT', `${base}${rule.id}`, {
    action_mode: 'enforce',
    expression: 'http.request.uri.query contains "debug=1"',
  });
  await waitUntil('the changed expression', async () =>
    (await send(edge.httpPort, www, '/x?debug=1')).status === 403 ? true : undefined,
  );
  assert.equal((await send(edge.httpPort, www, '/admin/panel')).status, 200);
  await cp.api('DELETE', `${base}${rule.id}`);
  await waitUntil('deleted', async () =>
    (await send(edge.httpPort, www, '/x?debug=1')).status === 200 ? true : undefined,
  );
});
