// Issue 13 items 2, 3 and 8 (Under Attack Mode switch) through running processes: rules and the switch written
// through the API reach two edge nodes through the config log. Under Attack Mode challenges every request of its
// domain and none of another tenant's; a clearance solved on one node is good on the other (same
// EDGE_CHALLENGE_SECRET); a rate_limit rule made through the API limits at the edge; the plan gate names its feature.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { send, startStubOrigin } from '../../edge-node/src/testing/harness.js';
import { CHALLENGE_DIFFICULTY, CHALLENGE_PATH, workDone } from '../../edge-node/src/rules/challenge.js';
import { startControlPlane } from './sync-harness.js';
import { addProxiedRecord, startEdgeNodeProcess, waitUntil } from './edge-harness.js';

function solve(nonce: string): string {
  for (let i = 0; ; i++) if (workDone(nonce, String(i), CHALLENGE_DIFFICULTY)) return String(i);
}

test('Under Attack Mode and rate_limit through the API to two edge nodes', { timeout: 300_000 }, async (t) => {
  const origin = await startStubOrigin('ua-origin');
  t.after(() => origin.close());
  const cp = await startControlPlane('edge-challenge');
  t.after(() => cp.stop());
  const [domain, other] = ['attacked.example', 'calm.example'];
  for (const name of [domain, other]) {
    await cp.api('POST', '/domains/', { name });
    await addProxiedRecord(cp, name, 'www', origin.port);
  }
  const env = { EDGE_CHALLENGE_SECRET: 'shared-by-both-nodes-in-this-test' };
  const a = await startEdgeNodeProcess(cp, env);
  t.after(() => a.stop());
  const b = await startEdgeNodeProcess(cp, env);
  t.after(() => b.stop());
  const www = `www.${domain}`;
  const calm = `www.${other}`;
  for (const n of [a, b])
    await waitUntil('both domains at the edge', async () =>
      (await send(n.httpPort, www, '/')).status === 200 && (await send(n.httpPort, calm, '/')).status === 200
        ? true
        : undefined,
    );

  // The switch: GET reads it, PUT validates its body (closed schema).
  assert.deepEqual(await cp.api('GET', `/domains/${domain}/under-attack`), { enabled: false });
  await cp.api('PUT', `/domains/${domain}/under-attack`, { enabled: 'yes' }, 400);
  await cp.api('PUT', `/domains/${domain}/under-attack`, { enabled: true, extra: 1 }, 400);
  await cp.api('PUT', `/domains/${domain}/under-attack`, {}, 400);
  assert.deepEqual(await cp.api('PUT', `/domains/${domain}/under-attack`, { enabled: true }), { enabled: true });
  assert.deepEqual(await cp.api('GET', `/domains/${domain}/under-attack`), { enabled: true });

  for (const n of [a, b])
    await waitUntil('the challenge on every request of the domain', async () =>
      (await send(n.httpPort, www, '/any')).status === 403 ? true : undefined,
    );
  const page = await send(a.httpPort, www, '/deep/page?x=1');
  assert.equal(page.headers['x-edge-challenge'], 'pow');
  assert.equal((await send(a.httpPort, calm, '/any')).status, 200, 'another tenant is answered');
  assert.equal((await send(b.httpPort, calm, '/any')).status, 200);

  // Solved on node a, the clearance is good on node b (same secret), for this host only.
  const nonce = /name="nonce" value="([^"]+)"/.exec(page.body)![1];
  const answer = await send(a.httpPort, www, CHALLENGE_PATH, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ nonce, solution: solve(nonce), return: '/deep/page?x=1' }).toString(),
  });
  assert.equal(answer.status, 303);
  assert.equal(answer.headers.location, '/deep/page?x=1');
  const cookie = String(answer.headers['set-cookie']).split(';')[0];
  for (const n of [a, b]) {
    const r = await send(n.httpPort, www, '/deep/page?x=1', { headers: { cookie } });
    assert.equal(r.status, 200);
    assert.equal(r.body, 'origin ua-origin /deep/page?x=1');
  }

  // A node with its own secret (derived from its token; the test's nodes share one token, so a different
  // EDGE_CHALLENGE_SECRET stands in for another node's) and two workers: the clearance of a/b is refused there; one
  // solved there is accepted by both of its workers (connections land on either).
  const c = await startEdgeNodeProcess(cp, { EDGE_CHALLENGE_SECRET: 'another-node', EDGE_WORKERS: '2' });
  t.after(() => c.stop());
  await waitUntil('node c challenging', async () =>
    (await send(c.httpPort, www, '/')).status === 403 ? true : undefined,
  );
  assert.equal((await send(c.httpPort, www, '/deep/page?x=1', { headers: { cookie } })).status, 403);
  const pageC = await send(c.httpPort, www, '/');
  const nonceC = /name="nonce" value="([^"]+)"/.exec(pageC.body)![1];
  const answerC = await send(c.httpPort, www, CHALLENGE_PATH, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ nonce: nonceC, solution: solve(nonceC) }).toString(),
  });
  assert.equal(answerC.status, 303);
  const cookieC = String(answerC.headers['set-cookie']).split(';')[0];
  for (let i = 0; i < 8; i++)
    assert.equal((await send(c.httpPort, www, '/', { headers: { cookie: cookieC } })).status, 200);

  // Off again: everyone passes.
  assert.deepEqual(await cp.api('PUT', `/domains/${domain}/under-attack`, { enabled: false }), { enabled: false });
  for (const n of [a, b])
    await waitUntil('the challenge gone', async () =>
      (await send(n.httpPort, www, '/any')).status === 200 ? true : undefined,
    );

  // A rate_limit rule written through the API: validated (key_header required with key header), then enforced.
  await cp.api('POST', `/domains/${domain}/rules/rate_limit/`, { requests: 2, period_s: 60, key: 'header' }, 400);
  await cp.api(
    'POST',
    `/domains/${domain}/rules/rate_limit/`,
    { requests: 2, period_s: 60, key: 'ip', key_header: 'x-a' },
    400,
  );
  await cp.api('POST', `/domains/${domain}/rules/rate_limit/`, {
    requests: 2,
    period_s: 60,
    block_s: 20,
    path_includes: ['/api/*'],
  });
  const limited = await waitUntil('the rate limit at node a', async () => {
    const r = await send(a.httpPort, www, '/api/x');
    return r.status === 429 ? r : undefined;
  });
  const wait = Number(limited.headers['retry-after']);
  assert.ok(wait >= 1 && wait <= 20, `Retry-After ${wait}`);
  assert.equal((await send(a.httpPort, www, '/other')).status, 200);
  assert.equal((await send(a.httpPort, calm, '/api/x')).status, 200, 'another tenant');

  // The plan gate: without under_attack_allowed turning it on is 403 naming the feature; off stays allowed.
  await cp.restart(() => cp.cli('plan', 'override', domain, 'under_attack_allowed', 'false'));
  const res = await fetch(`${cp.apiUrl}/domains/${domain}/under-attack`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${cp.key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ enabled: true }),
  });
  assert.equal(res.status, 403);
  assert.match(((await res.json()) as { error: string }).error, /under_attack_allowed/);
  assert.deepEqual(await cp.api('PUT', `/domains/${domain}/under-attack`, { enabled: false }), { enabled: false });
  await cp.api('GET', '/domains/nope.example/under-attack', undefined, 404);
});
