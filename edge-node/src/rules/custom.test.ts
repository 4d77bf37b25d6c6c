// Custom rules through a running edge: every action (block, challenge, allow, skip, log), enforce and dry run, the
// request log, the order against other rules, and a changed expression taking effect with the next config version.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { proxiedRecord, rule, send, snapshot, startStubOrigin, startTestEdge } from '../testing/harness.js';
import { CHALLENGE_DIFFICULTY, CHALLENGE_PATH, workDone } from './challenge.js';

const custom = (expression: string, action: string, extra: Record<string, unknown> = {}) =>
  rule('custom', { expression, action, ...extra });

test('custom rules through the edge', async (t) => {
  const origin = await startStubOrigin('main');
  t.after(() => origin.close());
  const rules = [
    custom('http.request.headers["x-skip"] eq "1"', 'skip', { priority: 1 }),
    custom('http.user_agent eq "trusted-monitor"', 'allow', { priority: 2 }),
    custom('http.request.uri.path eq "/logged" or http.request.uri.path eq "/admin/logged"', 'log', { priority: 10 }),
    custom('http.request.uri.path eq "/dry"', 'block', { priority: 20, action_mode: 'dry_run' }),
    custom('http.request.uri.path wildcard "/ADMIN/*" and not ip.src in {127.0.0.2 10.0.0.0/8}', 'block', {
      priority: 30,
    }),
    custom('http.request.uri.path eq "/challenge" and http.request.method in {"GET" "HEAD"}', 'challenge', {
      priority: 40,
    }),
    custom('http.request.uri.path eq "/dry-challenge"', 'challenge', { priority: 41, action_mode: 'dry_run' }),
    custom('lower(http.request.uri.query) matches "union.+select"', 'block', { priority: 50 }),
    // The common filters still apply: this one is scoped to the api host.
    custom('http.request.method eq "DELETE"', 'block', { priority: 60, host_includes: ['api.custom.example.org'] }),
    rule('captcha', { path_includes: ['/guarded/*'] }),
    rule('rate_limit', { path_includes: ['/limited'], requests: 1, period_s: 60, block_s: 60 }),
  ];
  const [skipId, allowId, logId, dryId, blockId, challengeId, dryChallengeId, sqlId, deleteId] = rules.map((r) => r.id);
  const snap = snapshot('custom.example.org', {
    records: [proxiedRecord('www', origin.port), proxiedRecord('api', origin.port)],
    rules,
  });
  const edge = await startTestEdge(t, [snap]);
  const port = edge.node.server.httpPort;
  const host = 'www.custom.example.org';
  const hits = () => edge.node.logs.drain().map((r) => ({ status: r.status, rules: r.rules }));

  await t.test('block: 403 for a match, the origin for the rest; the address list excludes', async () => {
    hits();
    const blocked = await send(port, host, '/admin/users');
    assert.equal(blocked.status, 403);
    assert.equal(blocked.body, 'blocked by a custom rule\n');
    assert.equal((await send(port, host, '/Admin/x')).status, 403, 'wildcard is case-insensitive');
    const office = await send(port, host, '/admin/users', { localAddress: '127.0.0.2' });
    assert.equal(office.status, 200);
    assert.equal(office.body, 'origin main /admin/users');
    assert.equal((await send(port, host, '/public')).status, 200);
    assert.equal((await send(port, host, '/search?q=1%20UNION%20ALL%20SELECT%201')).status, 403);
    assert.equal((await send(port, host, '/search?q=union')).status, 200);
    assert.equal((await send(port, host, '/x', { method: 'DELETE' })).status, 200, 'other host');
    assert.equal((await send(port, 'api.custom.example.org', '/x', { method: 'DELETE' })).status, 403);
    const log = hits();
    assert.deepEqual(log[0], { status: 403, rules: [[blockId, 'custom', false]] });
    assert.deepEqual(log[2], { status: 200, rules: [] });
    assert.deepEqual(log[4], { status: 403, rules: [[sqlId, 'custom', false]] });
    assert.deepEqual(log.at(-1), { status: 403, rules: [[deleteId, 'custom', false]] });
  });

  await t.test('log and dry run: recorded, the request passes, later rules still act', async () => {
    assert.equal((await send(port, host, '/logged')).status, 200);
    assert.equal((await send(port, host, '/dry')).status, 200);
    assert.equal((await send(port, host, '/admin/logged')).status, 403, 'a log match does not stop evaluation');
    assert.deepEqual(hits(), [
      { status: 200, rules: [[logId, 'custom', false]] },
      { status: 200, rules: [[dryId, 'custom', true]] },
      {
        status: 403,
        rules: [
          [logId, 'custom', false],
          [blockId, 'custom', false],
        ],
      },
    ]);
  });

  await t.test('skip: later custom rules are not evaluated; other types still act', async () => {
    const skipped = await send(port, host, '/admin/users', { headers: { 'x-skip': '1' } });
    assert.equal(skipped.status, 200);
    assert.equal((await send(port, host, '/guarded/a', { headers: { 'x-skip': '1' } })).status, 403);
    const log = hits();
    assert.deepEqual(log[0], { status: 200, rules: [[skipId, 'custom', false]] });
    assert.equal(log[1].rules.at(-1)![1], 'captcha', 'the captcha rule still asks');
  });

  await t.test('allow: no later custom rule, rate limit or challenge acts', async () => {
    const ua = { 'user-agent': 'trusted-monitor' };
    assert.equal((await send(port, host, '/admin/users', { headers: ua })).status, 200);
    assert.equal((await send(port, host, '/guarded/a', { headers: ua })).status, 200);
    assert.equal((await send(port, host, '/challenge', { headers: ua })).status, 200);
    for (let i = 0; i < 3; i++) assert.equal((await send(port, host, '/limited', { headers: ua })).status, 200);
    assert.equal((await send(port, host, '/limited')).status, 200);
    assert.equal((await send(port, host, '/limited')).status, 429, 'others are limited');
    const log = hits();
    for (const r of log.slice(0, 6)) assert.deepEqual(r, { status: 200, rules: [[allowId, 'custom', false]] });
  });

  await t.test('challenge: the page, solved, the clearance passes; dry run passes and is logged', async () => {
    const page = await send(port, host, '/challenge');
    assert.equal(page.status, 403);
    assert.equal(page.headers['x-edge-challenge'], 'pow');
    const nonce = /name="nonce" value="([^"]+)"/.exec(page.body)![1];
    let solution = 0;
    while (!workDone(nonce, String(solution), CHALLENGE_DIFFICULTY)) solution++;
    const answer = await send(port, host, CHALLENGE_PATH, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ nonce, solution: String(solution), return: '/challenge' }).toString(),
    });
    assert.equal(answer.status, 303, answer.body);
    const cookie = String(answer.headers['set-cookie']).split(';')[0];
    const through = await send(port, host, '/challenge', { headers: { cookie } });
    assert.equal(through.status, 200);
    assert.equal(through.body, 'origin main /challenge');
    assert.equal((await send(port, host, '/challenge', { method: 'POST' })).status, 200, 'method not in the list');
    assert.equal((await send(port, host, '/dry-challenge')).status, 200);
    const log = hits();
    assert.deepEqual(log[0], { status: 403, rules: [[challengeId, 'custom', false]] });
    assert.deepEqual(log.at(-1), { status: 200, rules: [[dryChallengeId, 'custom', true]] });
  });

  await t.test('a changed expression takes effect with the next config version; a disabled rule is off', async () => {
    const changed = rules.map((r) =>
      r.id === blockId
        ? { ...custom('http.request.uri.path wildcard "/private/*"', 'block', { priority: 30 }), id: blockId }
        : r.id === sqlId
          ? { ...r, enabled: false }
          : r,
    );
    edge.apply(snapshot('custom.example.org', { records: snap.zone.records, rules: changed }));
    assert.equal((await send(port, host, '/private/x')).status, 403);
    assert.equal((await send(port, host, '/admin/users')).status, 200);
    assert.equal((await send(port, host, '/search?q=union%20select')).status, 200);
  });
});
