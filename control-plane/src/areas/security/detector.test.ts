import { test } from 'node:test';
import assert from 'node:assert/strict';
import { eq } from 'drizzle-orm';
import { pack } from 'msgpackr';
import { ensureNodeToken } from '@platform/shared/node-token';
import { startTestControlPlane, type TestControlPlane } from '../../../../test/helpers/control-plane.js';
import { attackMinutes, attacks, domains, rules } from '../../db/schema.js';
import { setOverride } from '../../plans/subscriptions.js';
import {
  BASELINE_MINUTES,
  ERRORS,
  evaluateAttacks,
  FOCUS_KEYS,
  focusOf,
  judgeMinute,
  JUDGE_MINUTES,
  MIN_SUGGESTED_LIMIT,
  MINUTE_CLIENTS,
  QUIET_MINUTES,
  RATE,
  sweepAttacks,
  tallyRecords,
  timing,
  TopKeys,
} from './detector.js';

const MIN = 60_000;
const { graceMs } = timing(MIN);

/** A small deterministic generator (xorshift), so the generated counts are the same on every run. */
function rng(seed: number): () => number {
  let x = seed;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 2 ** 32;
  };
}

test('TopKeys holds a bounded map and keeps the heavy hitter among a flood of distinct addresses', () => {
  const clients = new TopKeys();
  const random = rng(7);
  let heavy = 0;
  for (let i = 0; i < 100_000; i++) {
    if (random() < 0.05) {
      clients.add('198.51.100.7');
      heavy++;
    } else clients.add(`10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`);
    assert.ok(clients.counts.size <= 2 * MINUTE_CLIENTS);
  }
  const top = clients.top();
  assert.equal(top.length, MINUTE_CLIENTS);
  assert.equal(top[0][0], '198.51.100.7', 'the heavy hitter stays on top');
  assert.ok(top[0][1] >= heavy, 'a kept count is never below the true one');
  // Without eviction the counts are exact.
  const few = new TopKeys();
  for (let i = 0; i < 1000; i++) few.add(`192.0.2.${i % 10}`);
  assert.deepEqual(few.top(3), [
    ['192.0.2.0', 100],
    ['192.0.2.1', 100],
    ['192.0.2.2', 100],
  ]);
});

test('focusOf: the host and path with half the requests or more; none when spread, no wildcard paths', () => {
  const m = (hosts: [string, number][], paths: [string, number][]) => ({ requests: 100, hosts, paths });
  assert.deepEqual(focusOf(m([['www.x.org', 50]], [['/login', 80]])), { host: 'www.x.org', path: '/login' });
  assert.deepEqual(focusOf(m([['www.x.org', 49]], [['/a', 30]])), { host: '', path: '' });
  assert.deepEqual(focusOf(m([], [['/a*b', 90]])), { host: '', path: '' }, 'a * would be read as a wildcard');
  assert.deepEqual(focusOf(m([], [['login', 90]])), { host: '', path: '' }, 'not a path');
});

test('judgeMinute: thresholds as documented', () => {
  const s = {
    auto_under_attack: false,
    auto_rate_limit: false,
    request_rate_multiplier: 5,
    error_rate_percent: 50,
    min_requests_per_minute: 100,
  };
  assert.equal(judgeMinute({ requests: 99, errors: 99 }, 0, s), 0, 'below the minimum: never');
  assert.equal(judgeMinute({ requests: 500, errors: 0 }, 100, s), 0, 'exactly 5x is not above 5x');
  assert.equal(judgeMinute({ requests: 501, errors: 0 }, 100, s), RATE);
  assert.equal(judgeMinute({ requests: 501, errors: 0 }, undefined, s), 0, 'no usual rate: no rate anomaly');
  assert.equal(judgeMinute({ requests: 200, errors: 100 }, 100, s), ERRORS, '50 % errors');
  assert.equal(judgeMinute({ requests: 200, errors: 99 }, 100, s), 0);
  assert.equal(judgeMinute({ requests: 1000, errors: 1000 }, 10, s), RATE | ERRORS);
});

async function setup(t: Parameters<typeof startTestControlPlane>[0], name: string) {
  const cp = await startTestControlPlane(t);
  const owner = await cp.user();
  const domain = await cp.domain(owner.key, name);
  const [row] = await cp.database.db.select().from(domains).where(eq(domains.name, domain));
  return { cp, owner, domain, id: row.id };
}

/** `now` a few seconds into a minute, and the start of the last minute the detector judges at that time. */
function clock(): { now: number; lastClosed: number } {
  const wall = Date.now();
  const now = wall - (wall % MIN) + graceMs + 1000;
  return { now, lastClosed: now - (now % MIN) - MIN };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

test('detector on generated counts: a flood opens one attack, quiet minutes end it', async (t) => {
  const { cp, owner, domain, id } = await setup(t, 'generated.example.org');
  const db = cp.database.db;
  const switches = { request_rate_multiplier: 4, min_requests_per_minute: 200, error_rate_percent: 60 };
  assert.equal((await cp.call(owner.key, 'PUT', `/domains/${domain}/attack-protection`, switches)).statusCode, 200);
  const { now, lastClosed } = clock();
  const random = rng(42);
  // 40 minutes of ordinary traffic (100-180 a minute, a few errors), a 5-minute flood, 4 quiet minutes; a minute
  // here and there without any request.
  const series: { at: number; requests: number; errors: number }[] = [];
  for (let k = 49; k >= 0; k--) {
    const at = lastClosed - k * MIN;
    const flood = k >= 4 && k <= 8;
    if (!flood && k % 7 === 3) continue;
    const requests = flood ? 2000 + Math.floor(random() * 500) : 100 + Math.floor(random() * 80);
    series.push({ at, requests, errors: Math.floor(requests * 0.05) });
  }
  await db.insert(attackMinutes).values(
    series.map((s) => ({
      domainId: id,
      minute: new Date(s.at),
      requests: s.requests,
      errors: s.errors,
      clients: [['203.0.113.9', Math.floor(s.requests / 2)] as [string, number], ['not-an-ip', 5] as [string, number]],
    })),
  );

  // The expectation, worked out here: the median of the previous 30 minutes (missing: 0; the flood's own minutes
  // left out once found), judged for the last 15 closed minutes only.
  const byAt = new Map(series.map((s) => [s.at, s]));
  const first = series[0].at;
  const flagged = new Set<number>();
  for (const s of series) {
    if (s.at < lastClosed - (JUDGE_MINUTES - 1) * MIN) continue;
    const prev: number[] = [];
    for (let k = 1; k <= BASELINE_MINUTES && s.at - k * MIN >= first; k++)
      if (!flagged.has(s.at - k * MIN)) prev.push(byAt.get(s.at - k * MIN)?.requests ?? 0);
    if (s.requests >= 200 && s.requests > 4 * median(prev)) flagged.add(s.at);
  }
  const expected = [...flagged].sort((a, b) => a - b);
  assert.equal(expected.length, 5, 'the generated flood is what the thresholds catch');

  assert.equal(await evaluateAttacks(cp.app, id, now), true);
  const [attack] = await db.select().from(attacks).where(eq(attacks.domainId, id));
  assert.equal(attack.kind, 'request_rate');
  assert.equal(attack.startedAt.getTime(), expected[0]);
  assert.equal(attack.lastAnomalyAt!.getTime(), expected[4]);
  assert.equal(attack.peakRequestsPerMinute, Math.max(...expected.map((at) => byAt.get(at)!.requests)));
  assert.deepEqual(attack.topClients, [
    { address: '203.0.113.9', requests: expected.reduce((n, at) => n + Math.floor(byAt.get(at)!.requests / 2), 0) },
  ]);
  assert.equal(attack.endedAt!.getTime(), expected[4] + MIN, `${QUIET_MINUTES} quiet minutes ended it`);
  assert.equal(attack.ruleType, 'rate_limit');
  const usual = median(
    Array.from({ length: BASELINE_MINUTES }, (_, k) => byAt.get(expected[0] - (k + 1) * MIN)?.requests ?? 0),
  );
  assert.deepEqual(attack.ruleBody, {
    requests: Math.max(MIN_SUGGESTED_LIMIT, Math.ceil(usual)),
    period_s: 60,
    key: 'ip',
    action: 'block',
    block_s: 300,
  });
  const minutes = await db.select().from(attackMinutes).where(eq(attackMinutes.domainId, id));
  assert.ok(minutes.every((m) => m.judged));
  assert.deepEqual(
    minutes
      .filter((m) => m.anomalies !== 0)
      .map((m) => m.minute.getTime())
      .sort((a, b) => a - b),
    expected,
  );
  // Judged again: nothing changes, no second attack.
  await evaluateAttacks(cp.app, id, now);
  assert.equal((await db.select().from(attacks).where(eq(attacks.domainId, id))).length, 1);
  // The API lists it with its suggested rule.
  const listed = (await cp.call(owner.key, 'GET', `/domains/${domain}/attacks/`)).json();
  assert.deepEqual(
    [listed.length, listed[0].kind, listed[0].automatic_actions],
    [1, 'request_rate', []],
    'no switch on: nothing done',
  );
});

const token = (cp: TestControlPlane) =>
  ensureNodeToken(cp.config.dataDir, (cp.config as { nodeToken?: string }).nodeToken);

async function ship(cp: TestControlPlane, records: unknown[]) {
  const res = await cp.app.inject({
    method: 'POST',
    url: '/internal/request-logs',
    headers: { 'content-type': 'application/x-msgpack', authorization: `Bearer ${token(cp)}` },
    payload: pack({ node: 'edge-test', records, minutes: [] }),
  });
  assert.equal(res.statusCode, 200, res.body);
  return res.json() as { attack_minutes: number };
}

const rec = (t: number, host: string, status: number, peer: string, rules: unknown[] = []) => ({
  t,
  host,
  path: '/',
  method: 'GET',
  status,
  bytes: 10,
  cache: '',
  rules,
  ms: 1,
  upstreamMs: 1,
  peer,
});

test('ingest from shipped records: counts per domain-minute, challenges are no errors, bounded clients', async (t) => {
  const { cp, owner, domain, id } = await setup(t, 'shipped.example.org');
  const db = cp.database.db;
  const { now, lastClosed } = clock();
  const m0 = lastClosed - MIN;
  // Some earlier traffic, so the detector has counted something before the flood (minute m0 - 2).
  await ship(cp, [rec(m0 - 2 * MIN + 5, `www.${domain}`, 200, '192.0.2.1')]);
  const records = [];
  // Minute m0: 26 requests, 20 of them 404 from one address, 2 challenged (403 with an under_attack hit), 2 429s.
  for (let i = 0; i < 20; i++) records.push(rec(m0 + i, `WWW.${domain}`, 404, '198.51.100.7'));
  for (let i = 0; i < 2; i++) records.push(rec(m0 + 100 + i, domain, 403, '192.0.2.2', [[0, 'under_attack', false]]));
  for (let i = 0; i < 2; i++) records.push(rec(m0 + 200 + i, domain, 429, '192.0.2.3', [[9, 'rate_limit', false]]));
  records.push(rec(m0 + 300, domain, 500, '192.0.2.4', [[9, 'rate_limit', true]]), rec(m0 + 301, domain, 200, ''));
  records.push(rec(m0 + 302, 'elsewhere.example', 500, '192.0.2.9'), { t: 'x', host: 1 }, null);
  const got = await ship(cp, records);
  assert.equal(got.attack_minutes, 1);
  const [row] = await db
    .select()
    .from(attackMinutes)
    .where(eq(attackMinutes.minute, new Date(m0)));
  assert.deepEqual(
    [row.domainId, row.requests, row.errors],
    [id, 26, 21],
    'the 403 challenges and 429 limits are not errors; a dry-run hit is',
  );
  assert.deepEqual(row.clients[0], ['198.51.100.7', 20]);
  // A second node's batch for the same minute adds up.
  await ship(cp, [rec(m0 + 400, domain, 404, '198.51.100.7')]);
  const [again] = await db
    .select()
    .from(attackMinutes)
    .where(eq(attackMinutes.minute, new Date(m0)));
  assert.deepEqual([again.requests, again.errors, again.clients[0]], [27, 22, ['198.51.100.7', 21]]);

  await cp.call(owner.key, 'PUT', `/domains/${domain}/attack-protection`, {
    min_requests_per_minute: 10,
    error_rate_percent: 50,
  });
  await evaluateAttacks(cp.app, id, now);
  const found = (await cp.call(owner.key, 'GET', `/domains/${domain}/attacks/`)).json();
  const kinds = found.map((a: { kind: string }) => a.kind).sort();
  assert.deepEqual(kinds, ['error_rate', 'request_rate']);
  const err = found.find((a: { kind: string }) => a.kind === 'error_rate');
  assert.equal(err.rule_type, 'drop', 'one address sent most of the errors: drop it');
  const www = `www.${domain}`;
  assert.deepEqual([err.host, err.path], [www, '/'], 'most requests went to www, all to /');
  assert.deepEqual(err.suggested_rule, {
    host_includes: [www],
    path_includes: ['/'],
    ip_includes: ['198.51.100.7'],
    action: 'status',
    status_code: 403,
  });
  assert.equal(err.ended_at, null, 'the minute just closed: the attack goes on');
  // The suggestion is a valid create body: enforcing it makes that rule.
  const enforced = await cp.call(owner.key, 'POST', `/domains/${domain}/attacks/${err.id}/enforce`);
  assert.equal(enforced.statusCode, 200, enforced.body);
  const made = (await cp.call(owner.key, 'GET', `/domains/${domain}/rules/drop/${enforced.json().rule_id}`)).json();
  assert.deepEqual([made.host_includes, made.path_includes, made.ip_includes], [[www], ['/'], ['198.51.100.7']]);
  const rate = found.find((a: { kind: string }) => a.kind === 'request_rate');
  assert.equal((await cp.call(owner.key, 'POST', `/domains/${domain}/attacks/${rate.id}/enforce`)).statusCode, 200);
});

test('abuse: 200,000 distinct client addresses stay at most 64 per domain-minute, in memory and in rows', async (t) => {
  const { lastClosed } = clock();
  const flood = (n: number, domain: string) => {
    const records = [];
    for (let i = 0; i < n; i++)
      records.push({ ...rec(lastClosed + (i % 50_000), domain, 200, `2001:db8::${i.toString(16)}`), path: `/p/${i}` });
    for (let i = 0; i < n / 200; i++) records.push(rec(lastClosed + i, domain, 200, '198.51.100.77'));
    return records;
  };
  const tallies = tallyRecords(flood(200_000, 'x.example'), () => 1, MIN, lastClosed, lastClosed + MIN);
  assert.equal(tallies.size, 1);
  const [tally] = tallies.values();
  assert.equal(tally.requests, 201_000);
  assert.ok(tally.clients.counts.size <= 2 * MINUTE_CLIENTS);
  assert.equal(tally.clients.top()[0][0], '198.51.100.77');

  // Through the endpoint (and the request_logs insert): one row, bounded, merged across batches.
  const { cp, id, domain } = await setup(t, 'distinct.example.org');
  const db = cp.database.db;
  const records = flood(20_000, domain);
  assert.equal((await ship(cp, records)).attack_minutes, 1);
  const rows = await db.select().from(attackMinutes).where(eq(attackMinutes.domainId, id));
  assert.equal(rows.length, 1);
  assert.equal(rows[0].requests, 20_100);
  assert.ok(rows[0].clients.length <= MINUTE_CLIENTS);
  assert.equal(rows[0].clients[0][0], '198.51.100.77');
  assert.ok(rows[0].paths.length <= FOCUS_KEYS, 'distinct paths are bounded the same way');
  assert.deepEqual(rows[0].hosts, [[domain, 20_100]]);
  await ship(cp, records);
  const [merged] = await db.select().from(attackMinutes).where(eq(attackMinutes.domainId, id));
  assert.equal(merged.requests, 40_200);
  assert.ok(merged.clients.length <= MINUTE_CLIENTS);
  assert.equal(merged.clients[0][0], '198.51.100.77');
  assert.ok(merged.clients[0][1] >= 200, 'space-saving over-estimates, never under-estimates, a kept address');
});

test('automatic actions: Under Attack Mode on and off, the rule enforced, plan gates recorded', async (t) => {
  const { cp, owner, domain, id } = await setup(t, 'auto.example.org');
  const db = cp.database.db;
  const put = async (body: unknown) =>
    assert.equal((await cp.call(owner.key, 'PUT', `/domains/${domain}/attack-protection`, body)).statusCode, 200);
  await put({ auto_under_attack: true, auto_rate_limit: true, min_requests_per_minute: 10 });
  const { now, lastClosed } = clock();
  const flood = async (at: number, n = 500) =>
    db
      .insert(attackMinutes)
      .values({ domainId: id, minute: new Date(at), requests: n, errors: 0, clients: [['203.0.113.5', n]] })
      .onConflictDoUpdate({ target: [attackMinutes.domainId, attackMinutes.minute], set: { requests: n } });
  const underAttack = async () => (await cp.call(owner.key, 'GET', `/domains/${domain}/under-attack`)).json().enabled;

  // Minute lastClosed-3 had 20 requests; lastClosed-2 is a flood.
  await flood(lastClosed - 3 * MIN, 20);
  await flood(lastClosed - 2 * MIN);
  await evaluateAttacks(cp.app, id, now - 2 * MIN);
  let [a] = await db.select().from(attacks).where(eq(attacks.domainId, id));
  assert.equal(a.kind, 'request_rate');
  assert.equal(await underAttack(), true, 'auto_under_attack turned it on');
  assert.equal(a.status, 'enforced');
  const [rule] = await db.select().from(rules).where(eq(rules.id, a.ruleId!));
  assert.equal(rule.type, 'rate_limit');
  assert.deepEqual(a.automaticActions, [
    { action: 'under_attack', result: 'done', reason: '' },
    { action: 'enforce', result: 'done', reason: '' },
  ]);
  // Quiet minutes: the attack ends and the detector turns off what it turned on.
  await evaluateAttacks(cp.app, id, now + QUIET_MINUTES * MIN);
  [a] = await db.select().from(attacks).where(eq(attacks.domainId, id));
  assert.ok(a.endedAt);
  assert.equal(await underAttack(), false, 'turned off again');

  // A second flood while the user had turned the mode on: it stays on after the attack ends.
  await put({ auto_rate_limit: false });
  const later = now + (QUIET_MINUTES + 2) * MIN;
  await flood(lastClosed + (QUIET_MINUTES + 1) * MIN);
  assert.equal((await cp.call(owner.key, 'PUT', `/domains/${domain}/under-attack`, { enabled: true })).statusCode, 200);
  await evaluateAttacks(cp.app, id, later);
  let list = await db.select().from(attacks).where(eq(attacks.domainId, id)).orderBy(attacks.id);
  assert.equal(list.length, 2);
  assert.deepEqual(list[1].automaticActions, [
    { action: 'under_attack', result: 'skipped', reason: 'Under Attack Mode was on already' },
  ]);
  await evaluateAttacks(cp.app, id, later + QUIET_MINUTES * MIN);
  list = await db.select().from(attacks).where(eq(attacks.domainId, id)).orderBy(attacks.id);
  assert.ok(list[1].endedAt);
  assert.equal(await underAttack(), true, 'the user turned it on: the detector leaves it');
  await cp.call(owner.key, 'PUT', `/domains/${domain}/under-attack`, { enabled: false });

  // The plan lost the features since the switches were turned on: skipped, with the reason.
  await put({ auto_rate_limit: true });
  await setOverride(db, id, 'under_attack_allowed', false);
  await setOverride(db, id, 'disabled_rule_types', '["rate_limit"]');
  const third = later + (QUIET_MINUTES + 2) * MIN;
  await flood(lastClosed + (2 * QUIET_MINUTES + 3) * MIN);
  await evaluateAttacks(cp.app, id, third);
  list = await db.select().from(attacks).where(eq(attacks.domainId, id)).orderBy(attacks.id);
  assert.equal(list.length, 3);
  const actions = list[2].automaticActions;
  assert.deepEqual(
    actions.map((x) => [x.action, x.result]),
    [
      ['under_attack', 'skipped'],
      ['enforce', 'skipped'],
    ],
  );
  assert.match(actions[0].reason, /under_attack_allowed/);
  assert.match(actions[1].reason, /rate_limit/);
  assert.equal(await underAttack(), false);
  assert.equal(list[2].status, 'detected');
});

test('the sweep: thin minutes marked in bulk; two processes merge batches and judge a domain once', async (t) => {
  const { cp, owner, domain, id } = await setup(t, 'swept.example.org');
  const db = cp.database.db;
  const quiet = await cp.domain(owner.key, 'quiet.example.org');
  const [quietRow] = await db.select().from(domains).where(eq(domains.name, quiet));
  await cp.call(owner.key, 'PUT', `/domains/${domain}/attack-protection`, { min_requests_per_minute: 10 });
  const other = await cp.withEnv({});
  const { now, lastClosed } = clock();
  const m0 = lastClosed - MIN;
  // Earlier traffic of both domains (so a usual rate is known), then 10 batches of 100 records, sent at once to
  // two control-plane apps on the same database.
  await ship(cp, [rec(m0 - MIN, domain, 200, '192.0.2.1'), rec(m0 - MIN, quiet, 200, '192.0.2.1')]);
  const batches = Array.from({ length: 10 }, (_, b) =>
    Array.from({ length: 100 }, (_, i) => rec(m0 + b * 100 + i, i % 2 ? domain : quiet, 200, `198.51.100.${b}`)),
  );
  const results = await Promise.all(
    batches.map((records, b) =>
      (b % 2 ? other : cp.app).inject({
        method: 'POST',
        url: '/internal/request-logs',
        headers: { 'content-type': 'application/x-msgpack', authorization: `Bearer ${token(cp)}` },
        payload: pack({ node: `edge-${b}`, records, minutes: [] }),
      }),
    ),
  );
  assert.deepEqual(
    results.map((r) => r.statusCode),
    Array(10).fill(200),
  );
  const rows = await db
    .select()
    .from(attackMinutes)
    .where(eq(attackMinutes.minute, new Date(m0)));
  assert.deepEqual(rows.map((r) => [r.domainId, r.requests]).sort(), [
    [id, 500],
    [quietRow.id, 500],
  ]);
  await Promise.all([sweepAttacks(cp.app, now), sweepAttacks(other, now), sweepAttacks(other, now)]);
  const found = await db.select().from(attacks);
  assert.deepEqual(
    found.map((a) => [a.domainId, a.kind]),
    [[id, 'request_rate']],
    'one attack, on the domain whose minimum the minute reached',
  );
  const judged = await db.select().from(attackMinutes);
  assert.ok(judged.every((r) => r.judged));
  assert.deepEqual(
    judged.filter((r) => r.anomalies !== 0).map((r) => [r.domainId, r.minute.getTime()]),
    [[id, m0]],
  );
  assert.deepEqual(
    found[0].topClients.map((c) => c.requests),
    Array(10).fill(50),
    'every batch’s address, with its exact count (no count lost between the two apps)',
  );
});
