// POST /analytics/query and the analytics store: request logs shipped by a node land per domain; a query sees its
// caller's domains only; every escape attempt from the sandbox is refused; numbers match counts computed here from
// the generated log; read-only keys may query; plan gating; a deleted domain's rows go with it; retention per plan.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, rmdirSync } from 'node:fs';
import { join } from 'node:path';
import { eq } from 'drizzle-orm';
import { pack } from 'msgpackr';
import { ensureNodeToken } from '@platform/shared/node-token';
import { startTestControlPlane } from '../../../../test/helpers/control-plane.js';
import { domains, plans, subscriptions } from '../../db/schema.js';
import { setOverride } from '../../plans/subscriptions.js';
import { lcg, pick, type Rec } from './test-log.js';
import { sweepAnalytics } from './service.js';
import { LOG_COLUMNS } from './store.js';

test('analytics: the store, POST /analytics/query and its sandbox', { timeout: 300_000 }, async (t) => {
  const cp = await startTestControlPlane(t, { ANALYTICS_QUERY_TIMEOUT_MS: '1500', ANALYTICS_QUERY_MAX_ROWS: '50' });
  const db = cp.database.db;
  const token = ensureNodeToken(cp.config.dataDir, (cp.config as { nodeToken?: string }).nodeToken);
  const ship = async (records: Rec[]) => {
    const res = await cp.app.inject({
      method: 'POST',
      url: '/internal/request-logs',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/x-msgpack' },
      payload: pack({ node: 'n1', records }),
    });
    assert.equal(res.statusCode, 200, res.body);
  };
  const q = async (key: string, query: unknown) => cp.call(key, 'POST', '/analytics/query', { query });
  const rows = async (key: string, query: string) => {
    const res = await q(key, query);
    assert.equal(res.statusCode, 200, `${query}: ${res.body}`);
    return res.json<{ columns: { name: string }[]; rows: unknown[][]; truncated: boolean }>();
  };

  const alice = await cp.user();
  const bob = await cp.user();
  const carol = await cp.user();
  const [a1, a2, b1, c1] = [
    await cp.domain(alice.key, 'alice-one.example.org'),
    await cp.domain(alice.key, 'alice-two.example.org'),
    await cp.domain(bob.key, 'bob.example.org'),
    await cp.domain(carol.key, 'carol.example.org'),
  ];
  const idOf = async (name: string) => (await db.select().from(domains).where(eq(domains.name, name)))[0].id;
  const ids = { a1: await idOf(a1), a2: await idOf(a2), b1: await idOf(b1), c1: await idOf(c1) };
  // alice's and bob's domains have logs in their plan; carol's stays on the free plan, which has not.
  for (const id of [ids.a1, ids.a2, ids.b1]) await setOverride(db, id, 'logs_enabled', true);

  // The generated log: hosts of every domain, and one no domain covers.
  const hosts = [`www.${a1}`, a1, `api.${a2}`, b1, `static.${b1}`, `www.${c1}`, 'nobody.example.net'];
  const r = lcg(15);
  const now = Date.now();
  const log: Rec[] = [];
  for (let i = 0; i < 900; i++) {
    log.push({
      t: now - Math.floor(r() * 3_600_000),
      host: pick(r, hosts),
      path: pick(r, ['/', '/a.css', '/api/v1/items?page=2', '/login']),
      method: pick(r, ['GET', 'GET', 'GET', 'POST', 'HEAD']),
      status: pick(r, [200, 200, 200, 304, 404, 500, 403]),
      bytes: Math.floor(r() * 100_000),
      cache: pick(r, ['HIT', 'MISS', 'BYPASS', '']),
      rules: r() < 0.2 ? [[7, 'waf', false]] : [],
      ms: Math.round(r() * 500) / 10,
      upstreamMs: -1,
      peer: `192.0.2.${Math.floor(r() * 50)}`,
    });
  }
  await ship(log.slice(0, 400));
  await ship(log.slice(400));
  const belongs = (host: string, names: string[]) => names.some((n) => host === n || host.endsWith(`.${n}`));
  const aliceLog = log.filter((x) => belongs(x.host, [a1, a2]));
  const bobLog = log.filter((x) => belongs(x.host, [b1]));
  assert.ok(aliceLog.length > 100 && bobLog.length > 100);

  await t.test('rows land per domain with domain and owner; hosts no domain covers are not kept', async () => {
    const store = cp.app.analytics.store;
    assert.equal(await store.countRows(ids.a1), log.filter((x) => belongs(x.host, [a1])).length);
    assert.equal(await store.countRows(ids.a2), log.filter((x) => belongs(x.host, [a2])).length);
    assert.equal(await store.countRows(ids.b1), bobLog.length);
    const got = await rows(alice.key, 'SELECT DISTINCT domain_id, domain, owner_id FROM logs ORDER BY domain_id');
    assert.deepEqual(got.rows, [
      [ids.a1, a1, alice.id],
      [ids.a2, a2, alice.id],
    ]);
  });

  await t.test("a query's numbers match the counts computed from the generated log", async () => {
    const got = await rows(
      alice.key,
      `SELECT host, status, count(*) AS requests, sum(bytes) AS bytes FROM logs
       WHERE method = 'GET' GROUP BY host, status ORDER BY host, status`,
    );
    const want = new Map<string, [string, number, number, number]>();
    for (const x of aliceLog.filter((x) => x.method === 'GET')) {
      const k = `${x.host} ${x.status}`;
      const e = want.get(k) ?? [x.host, x.status, 0, 0];
      e[2]++;
      e[3] += x.bytes;
      want.set(k, e);
    }
    const expected = [...want.values()].sort((p, q) => (p[0] < q[0] ? -1 : p[0] > q[0] ? 1 : p[1] - q[1]));
    assert.deepEqual(
      got.columns.map((c) => c.name),
      ['host', 'status', 'requests', 'bytes'],
    );
    assert.deepEqual(got.rows, expected);
    assert.equal(got.truncated, false);
    // CTEs, window functions, JSON and time functions.
    const cte = await rows(
      alice.key,
      `WITH hits AS (SELECT * FROM logs WHERE json_array_length(rule_hits) > 0),
            ranked AS (SELECT host, count(*) AS n, rank() OVER (ORDER BY count(*) DESC, host) AS r FROM hits GROUP BY host)
       SELECT sum(n), min(r), max(r) FROM ranked`,
    );
    const withRules = aliceLog.filter((x) => x.rules.length > 0);
    assert.deepEqual(cte.rows, [[withRules.length, 1, new Set(withRules.map((x) => x.host)).size]]);
    const hours = await rows(
      alice.key,
      `SELECT date_trunc('hour', time_utc) AS h, count(*) FROM logs GROUP BY h ORDER BY h`,
    );
    const perHour = new Map<string, number>();
    for (const x of aliceLog) {
      const h = new Date(x.t - (x.t % 3_600_000)).toISOString();
      perHour.set(h, (perHour.get(h) ?? 0) + 1);
    }
    assert.deepEqual(
      hours.rows,
      [...perHour].sort((p, q) => (p[0] < q[0] ? -1 : 1)),
    );
    const recent = await rows(alice.key, `SELECT count(*) FROM logs WHERE time > now() - INTERVAL 30 MINUTE`);
    const cutoff = Date.now() - 30 * 60_000;
    const recentWant = aliceLog.filter((x) => x.t > cutoff).length;
    assert.ok(
      Math.abs((recent.rows[0][0] as number) - recentWant) <= 3,
      `${String(recent.rows[0][0])} ~ ${recentWant}`,
    );
    const times = await rows(alice.key, `SELECT min(time), count(DISTINCT client_ip) FROM logs`);
    assert.equal(times.rows[0][0], new Date(Math.min(...aliceLog.map((x) => x.t))).toISOString());
    assert.equal(times.rows[0][1], new Set(aliceLog.map((x) => x.peer)).size);
  });

  await t.test('docs/analytics.md lists every column of logs, and its examples run', async () => {
    const doc = readFileSync(join(import.meta.dirname, '../../../../docs/analytics.md'), 'utf8');
    for (const [name, type] of LOG_COLUMNS) assert.ok(doc.includes(`| \`${name}\` | ${type} |`), name);
    const block = /```sql\n([\s\S]*?)```/.exec(doc)![1];
    const examples = block.split(';').filter((q) => q.replace(/--.*$/gm, '').trim() !== '');
    assert.equal(examples.length, 3);
    for (const example of examples) {
      const got = await rows(alice.key, example);
      assert.ok(got.rows.length > 0, example);
    }
  });

  await t.test("two accounts' queries never see each other's rows", async () => {
    const count = 'SELECT count(*), count(DISTINCT owner_id), min(owner_id) FROM logs';
    assert.deepEqual((await rows(alice.key, count)).rows, [[aliceLog.length, 1, alice.id]]);
    assert.deepEqual((await rows(bob.key, count)).rows, [[bobLog.length, 1, bob.id]]);
    const hunt = `SELECT count(*) FROM logs WHERE host LIKE '%alice%' OR owner_id <> ${bob.id} OR domain_id <> ${ids.b1}`;
    assert.deepEqual((await rows(bob.key, hunt)).rows, [[0]]);
    // Errors do not carry them either: a failing cast names bob's own values only.
    const failed = await q(bob.key, 'SELECT CAST(host || path AS INTEGER) FROM logs');
    assert.equal(failed.statusCode, 400);
    assert.doesNotMatch(failed.json().error, /alice/);
    // A member sees the shared domain's rows, not the owner's other domain.
    const viewer = await cp.user();
    await cp.addMember(a1, viewer.id, 'viewer');
    assert.deepEqual((await rows(viewer.key, 'SELECT count(*), min(domain) FROM logs')).rows, [
      [log.filter((x) => belongs(x.host, [a1])).length, a1],
    ]);
  });

  await t.test('a read-only key may query; the answer is capped at the row limit', async () => {
    const ro = await cp.key(alice.id, { readOnly: true });
    const got = await rows(ro.key, 'SELECT path FROM logs');
    assert.equal(got.rows.length, 50);
    assert.equal(got.truncated, true);
    // and may still not write anywhere else
    assert.equal((await cp.call(ro.key, 'POST', '/domains/', { name: 'ro.example.org' })).statusCode, 403);
  });

  await t.test('plan gating: 403 naming the missing feature; domains without it are left out', async () => {
    let res = await q(carol.key, 'SELECT count(*) FROM logs');
    assert.equal(res.statusCode, 403);
    assert.match(res.json().error, /logs_enabled/);
    const nobody = await cp.user();
    res = await q(nobody.key, 'SELECT 1');
    assert.equal(res.statusCode, 403);
    assert.match(res.json().error, /logs_enabled/);
    await setOverride(db, ids.a2, 'logs_enabled', false);
    assert.deepEqual((await rows(alice.key, 'SELECT DISTINCT domain FROM logs')).rows, [[a1]]);
    await setOverride(db, ids.a2, 'logs_enabled', true);
    for (const id of [ids.a1, ids.a2]) await setOverride(db, id, 'analytics_enabled', false);
    res = await q(alice.key, 'SELECT 1');
    assert.equal(res.statusCode, 403);
    assert.match(res.json().error, /analytics_enabled/);
    for (const id of [ids.a1, ids.a2]) await setOverride(db, id, 'analytics_enabled', null);
  });

  await t.test('sandbox escape attempts are all refused with 400 and an error', async () => {
    const bobTable = `d_${ids.b1}`;
    const attempts: [string, string][] = [
      // another account's rows
      ['base table by name', `SELECT * FROM ${bobTable}`],
      ['base table with schema', `SELECT * FROM main.${bobTable}`],
      ['base table with catalog', `SELECT * FROM analytics.main.${bobTable}`],
      ['quoted name', `SELECT * FROM "${bobTable}"`],
      ['subquery in WHERE', `SELECT * FROM logs WHERE status IN (SELECT status FROM ${bobTable})`],
      ['scalar subquery', `SELECT (SELECT count(*) FROM ${bobTable})`],
      ['EXISTS', `SELECT 1 WHERE EXISTS (SELECT 1 FROM ${bobTable})`],
      ['join', `SELECT * FROM logs JOIN ${bobTable} USING (host)`],
      ['union', `SELECT host FROM logs UNION ALL SELECT host FROM ${bobTable}`],
      ['CTE reading the table', `WITH x AS (SELECT * FROM ${bobTable}) SELECT * FROM x`],
      ['CTE named like the table', `WITH ${bobTable} AS (SELECT 1) SELECT * FROM ${bobTable}`],
      ['CTE out of scope', `SELECT * FROM (WITH t AS (SELECT * FROM logs) SELECT * FROM t) s, t`],
      ['CTE reading itself', `WITH t AS (SELECT * FROM t) SELECT * FROM t`],
      ['CTE reading a later CTE', `WITH a AS (SELECT * FROM b), b AS (SELECT 1) SELECT * FROM a`],
      ['recursive CTE', 'WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t) SELECT * FROM t'],
      ['CTE named logs', 'WITH logs AS (SELECT 1 AS x) SELECT * FROM logs'],
      ['Kelvin sign folding to k', 'WITH "duc\u212Adb_tables" AS (SELECT 1) SELECT * FROM duckdb_tables'],
      ['time travel', 'SELECT * FROM logs AT (VERSION => 1)'],
      ['query() table function', `SELECT * FROM query('SELECT * FROM ${bobTable}')`],
      ['query_table()', `SELECT * FROM query_table('${bobTable}')`],
      ['json_serialize_plan', `SELECT json_serialize_plan('SELECT * FROM ${bobTable}')`],
      // system catalogs
      ['information_schema', 'SELECT * FROM information_schema.tables'],
      ['pg_catalog', 'SELECT * FROM pg_catalog.pg_class'],
      ['sqlite_master', 'SELECT * FROM sqlite_master'],
      ['duckdb_tables view', 'SELECT * FROM duckdb_tables'],
      ['duckdb_tables()', 'SELECT * FROM duckdb_tables()'],
      ['duckdb_settings()', 'SELECT * FROM duckdb_settings()'],
      ['pragma_table_info', `SELECT * FROM pragma_table_info('${bobTable}')`],
      ['SHOW TABLES', 'SHOW TABLES'],
      ['SHOW ALL TABLES', 'SHOW ALL TABLES'],
      ['DESCRIBE', 'DESCRIBE logs'],
      ['SUMMARIZE', `SUMMARIZE ${bobTable}`],
      ['current_setting()', "SELECT current_setting('memory_limit')"],
      ['schema-qualified function', 'SELECT pg_catalog.current_database()'],
      ['current_database()', 'SELECT current_database()'],
      ['getvariable()', "SELECT getvariable('x')"],
      // files
      ['read_csv', "SELECT * FROM read_csv('/etc/passwd')"],
      ['read_text', "SELECT * FROM read_text('/etc/hostname')"],
      ['read_blob', "SELECT * FROM read_blob('/etc/hostname')"],
      ['read_parquet', "SELECT * FROM read_parquet('/tmp/x.parquet')"],
      ['glob', "SELECT * FROM glob('/*')"],
      ['replacement scan of a file', "SELECT * FROM '/etc/passwd'"],
      ['FROM-first file', "FROM 'data.csv'"],
      ['COPY', "COPY (SELECT * FROM logs) TO '/tmp/analytics-escape.csv'"],
      ['EXPORT DATABASE', "EXPORT DATABASE '/tmp/analytics-escape'"],
      ['ATTACH', "ATTACH '/tmp/analytics-escape.duckdb' AS x"],
      ['DETACH', 'DETACH analytics'],
      // network
      ['URL table function', "SELECT * FROM read_csv('http://127.0.0.1:9/x.csv')"],
      ['URL replacement scan', "SELECT * FROM 'https://127.0.0.1:9/x.parquet'"],
      ['INSTALL', 'INSTALL httpfs'],
      ['LOAD', 'LOAD httpfs'],
      ['ATTACH a URL', "ATTACH 'http://127.0.0.1:9/db.duckdb'"],
      // settings
      ['SET', "SET memory_limit = '100GB'"],
      ['SET enable_external_access', 'SET enable_external_access = true'],
      ['RESET', 'RESET ALL'],
      ['PRAGMA', 'PRAGMA threads = 64'],
      ['SET VARIABLE', 'SET VARIABLE x = 1'],
      ['CALL', 'CALL pragma_version()'],
      // writes and DDL
      ['INSERT', "INSERT INTO logs (host) VALUES ('x')"],
      ['UPDATE', 'UPDATE logs SET status = 1'],
      ['DELETE', 'DELETE FROM logs'],
      ['DROP', `DROP TABLE ${bobTable}`],
      ['CREATE', 'CREATE TABLE x AS SELECT 1'],
      ['CREATE MACRO', 'CREATE MACRO m(x) AS x'],
      ['ALTER', `ALTER TABLE ${bobTable} RENAME TO x`],
      ['CHECKPOINT', 'CHECKPOINT'],
      ['VACUUM', 'VACUUM'],
      ['BEGIN', 'BEGIN TRANSACTION'],
      ['EXPLAIN', `EXPLAIN SELECT * FROM ${bobTable}`],
      // several statements, and text that hides a second one
      ['two statements', 'SELECT 1; SELECT 2'],
      ['a read then a write', `SELECT 1; DROP TABLE ${bobTable}`],
      ['empty statement between', `SELECT 1;;SELECT * FROM ${bobTable}`],
      ['block comment then statement', `SELECT 1 /* x */; DELETE FROM ${bobTable}`],
      ['line comment then statement', `SELECT 1 -- x\n; DROP TABLE ${bobTable}`],
      ['unterminated comment', `SELECT 1 /* ; DROP TABLE ${bobTable}`],
      ['NUL byte', `SELECT 1\u0000; DROP TABLE ${bobTable}`],
      ['fullwidth semicolon', `SELECT 1\uFF1B DROP TABLE ${bobTable}`],
      ['Greek question mark', `SELECT 1\u037E DROP TABLE ${bobTable}`],
      ['zero-width space', `SELECT 1;\u200B DROP TABLE ${bobTable}`],
      ['bidirectional override', `SELECT count(*) FROM logs /*\u202E ; */ ${bobTable}`],
      ['byte order mark', '\uFEFFSELECT 1'],
      ['lone surrogate', 'SELECT 1 \uD800'],
      ['parameters', 'SELECT $1'],
      // resources
      ['range() table function', 'SELECT count(*) FROM range(1000000000000)'],
      ['generate_series()', 'SELECT * FROM generate_series(1, 1000000000000)'],
      ['repeat()', "SELECT repeat('x', 1000000000)"],
      ['lpad()', "SELECT lpad('x', 1000000000, 'y')"],
      ['too long', `SELECT 1${' '.repeat(20_000)}`],
      ['deep parentheses', `SELECT ${'('.repeat(1000)}1${')'.repeat(1000)}`],
      ['deep expression', `SELECT ${'NOT '.repeat(3000)}true`],
      ['long operator chain', `SELECT 1${'+1'.repeat(6000)}`],
      ['nested subqueries (planning time doubles per level)', `SELECT ${'(SELECT '.repeat(24)}1${')'.repeat(24)}`],
      ['nested subqueries in FROM', `SELECT * FROM ${'(SELECT * FROM '.repeat(12)}logs${') s'.repeat(12)}`],
      ['too many SELECTs', Array.from({ length: 70 }, (_, i) => `SELECT ${i}`).join(' UNION ALL ')],
      ['time limit', 'SELECT sum(a.bytes * b.status + c.bytes - d.status) FROM logs a, logs b, logs c, logs d'],
      ['not a string', ''],
      ['empty', '   '],
    ];
    for (const [label, query] of attempts) {
      const res = await q(alice.key, query);
      assert.equal(res.statusCode, 400, `${label}: ${res.statusCode} ${res.body}`);
      const body = res.json<{ error: string }>();
      assert.equal(typeof body.error, 'string', label);
      assert.ok(body.error.length > 0, label);
    }
    for (const body of [{}, { query: 1 }, { query: ['SELECT 1'] }, { query: 'SELECT 1', extra: 1 }]) {
      const res = await cp.call(alice.key, 'POST', '/analytics/query', body);
      assert.equal(res.statusCode, 400, JSON.stringify(body));
    }
    // Nothing moved: bob's rows are all there, no file was written, and text that only looks like a second
    // statement stays text.
    assert.equal(await cp.app.analytics.store.countRows(ids.b1), bobLog.length);
    assert.equal(existsSync('/tmp/analytics-escape.csv'), false);
    assert.deepEqual((await rows(alice.key, `SELECT $$; DROP TABLE ${bobTable}; $$ AS s`)).rows, [
      [`; DROP TABLE ${bobTable}; `],
    ]);
    assert.deepEqual((await rows(bob.key, 'SELECT count(*) FROM logs')).rows, [[bobLog.length]]);
    // ten levels of subqueries and a long UNION are fine
    assert.deepEqual((await rows(alice.key, `SELECT ${'(SELECT '.repeat(9)}1${')'.repeat(9)}`)).rows, [[1]]);
    const union = Array.from({ length: 40 }, (_, i) => `SELECT ${i} AS n`).join(' UNION ALL ');
    assert.deepEqual((await rows(alice.key, `SELECT count(*) FROM (${union})`)).rows, [[40]]);
    // the time limit refusal names itself, and the next query runs
    const slow = await q(alice.key, 'SELECT sum(a.bytes * b.status + c.bytes) FROM logs a, logs b, logs c, logs d');
    assert.match(slow.json().error, /time limit/);
    assert.deepEqual((await rows(alice.key, 'SELECT count(*) FROM logs')).rows, [[aliceLog.length]]);
  });

  await t.test('retention per plan: the sweep deletes rows older than the plan keeps', async () => {
    const day = 86_400_000;
    const old = (host: string, ageDays: number): Rec => ({ ...log[0], host, t: Date.now() - ageDays * day });
    // bob (free plan with logs on: 3 days) and alice's a1 on free too; a1 moves to pro (30 days) here.
    await ship([old(b1, 10), old(b1, 2), old(a1, 10), old(a1, 40)]);
    const before = { b1: await cp.app.analytics.store.countRows(ids.b1) };
    const [pro] = await db.select().from(plans).where(eq(plans.slug, 'pro'));
    await db.update(subscriptions).set({ planId: pro.id }).where(eq(subscriptions.domainId, ids.a1));
    // rows of a domain that is gone without the delete hook having run (a crash between): the sweep drops them
    const ghost = 2_000_000_000;
    const row = { time: new Date(), domainId: ghost, ownerId: 1, node: 'n1', host: 'gone.example.org', path: '/' };
    await cp.app.analytics.store.append([
      {
        ...row,
        method: 'GET',
        status: 200,
        bytes: 1,
        cacheStatus: '',
        ruleHits: [],
        wafEvents: [],
        durationMs: 1,
        upstreamMs: 1,
        clientIp: '192.0.2.1',
        fingerprint: '',
        botScore: 0,
        botClass: '',
      },
    ]);
    assert.equal(await cp.app.analytics.store.countRows(ghost), 1);
    const swept = await sweepAnalytics(cp.app);
    assert.ok(swept.deletedRows >= 2, JSON.stringify(swept));
    assert.ok(swept.droppedDomains >= 1, JSON.stringify(swept));
    assert.equal(await cp.app.analytics.store.countRows(ghost), 0);
    assert.equal(await cp.app.analytics.store.countRows(ids.b1), before.b1 - 1, 'b1 lost its 10-day-old row');
    const a1Old = await rows(
      alice.key,
      `SELECT count(*) FROM logs WHERE domain_id = ${ids.a1} AND time < now() - INTERVAL 5 DAY`,
    );
    assert.deepEqual(a1Old.rows, [[1]], 'a1 (pro, 30 days) keeps its 10-day-old row, not the 40-day-old one');
  });

  await t.test('deleting a domain deletes its rows; later records of its hosts are not kept', async () => {
    const res = await cp.call(alice.key, 'DELETE', `/domains/${a2}`);
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(await cp.app.analytics.store.countRows(ids.a2), 0);
    assert.ok(!(await cp.app.analytics.store.domainIds()).includes(ids.a2));
    await ship([{ ...log[0], host: `api.${a2}` }]);
    assert.equal(await cp.app.analytics.store.countRows(ids.a2), 0);
    assert.deepEqual((await rows(alice.key, 'SELECT DISTINCT domain FROM logs')).rows, [[a1]]);
    assert.ok(existsSync(join(cp.config.dataDir, 'analytics.duckdb')));
  });
});

test('analytics: a store that cannot be opened answers 503, and opens at the next use once it can', async (t) => {
  const cp = await startTestControlPlane(t);
  const owner = await cp.user();
  const name = await cp.domain(owner.key, 'unavailable.example.org');
  const [dom] = await cp.database.db.select().from(domains).where(eq(domains.name, name));
  await setOverride(cp.database.db, dom.id, 'logs_enabled', true);
  // A directory where the database file goes: DuckDB cannot open it.
  const file = join(cp.config.dataDir, 'analytics.duckdb');
  mkdirSync(file);
  let res = await cp.call(owner.key, 'POST', '/analytics/query', { query: 'SELECT count(*) FROM logs' });
  assert.deepEqual([res.statusCode, res.json()], [503, { error: 'analytics store unavailable' }]);
  rmdirSync(file);
  res = await cp.call(owner.key, 'POST', '/analytics/query', { query: 'SELECT count(*) FROM logs' });
  assert.equal(res.statusCode, 200, res.body);
  assert.deepEqual(res.json().rows, [[0]]);
});
