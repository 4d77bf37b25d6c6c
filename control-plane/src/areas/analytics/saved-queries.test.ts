// Saved analytics queries: CRUD per account, every refusal of POST /analytics/query refused at save with the same
// text, bounds (name, SQL, the per-account cap), other accounts' saved queries 404, read-only keys read but do not
// write, the on-demand run sees the caller's rows only; the alert's evaluation (called as its workflow calls it, with
// the clock passed in) fires once per crossing into the feed, records a failing query's error, and hands a crossing
// to a domain's uptime webhook as a delivery. The workflow itself, Temporal and a receiver: test/e2e/analytics-alerts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { eq } from 'drizzle-orm';
import { startTestControlPlane } from '../../../../test/helpers/control-plane.js';
import { domains, uptimeWebhookDeliveries, users, workflowOutbox } from '../../db/schema.js';
import { setOverride } from '../../plans/subscriptions.js';
import { MAX_QUERY_CHARS } from './sandbox.js';
import { evaluateSavedQuery, holds } from './saved-queries.js';
import { MAX_SAVED_QUERIES } from './saved-query-schemas.js';
import { savedQueryById } from './saved-queries-store.js';
import { domainIdOf, shipper, type Rec } from './test-log.js';

interface SavedQuery {
  id: number;
  name: string;
  query: string;
  alert: null | {
    column: string;
    op: string;
    value: number;
    interval_seconds: number;
    notify_feed: boolean;
    webhook_domain: string | null;
  };
  evaluation: null | {
    state: string;
    last_value: number | null;
    last_error: string | null;
    fired_count: number;
    last_evaluated_at: string | null;
    next_evaluation_at: string | null;
  };
}

const record = (host: string, status: number, t = Date.now()): Rec => ({
  t,
  host,
  path: '/',
  method: 'GET',
  status,
  bytes: 100,
  cache: '',
  rules: [],
  ms: 1,
  upstreamMs: -1,
  peer: '192.0.2.1',
});

test(
  'saved analytics queries: CRUD, the sandbox at save, bounds, isolation, the run and the alert',
  { timeout: 300_000 },
  async (t) => {
    const cp = await startTestControlPlane(t, { ANALYTICS_QUERY_TIMEOUT_MS: '1500' });
    const db = cp.database.db;
    const shipAs = shipper(cp);
    const ship = (records: Rec[]) => shipAs('n1', records);
    const alice = await cp.user();
    const bob = await cp.user();
    const carol = await cp.user();
    const a1 = await cp.domain(alice.key, 'sq-alice-one.example.org');
    const a2 = await cp.domain(alice.key, 'sq-alice-two.example.org');
    const b1 = await cp.domain(bob.key, 'sq-bob.example.org');
    await cp.domain(carol.key, 'sq-carol.example.org');
    const idOf = (name: string) => domainIdOf(cp, name);
    // dave: enough rows for a query that stops at the time limit.
    const dave = await cp.user();
    const d1 = await cp.domain(dave.key, 'sq-dave.example.org');
    for (const d of [a1, a2, b1, d1]) await setOverride(db, await idOf(d), 'logs_enabled', true);
    await ship(Array.from({ length: 500 }, (_, i) => record(d1, 200 + (i % 300))));
    const SLOW = 'SELECT sum(a.bytes * b.status + c.bytes - d.status) AS n FROM logs a, logs b, logs c, logs d';
    // alice: 3 + 2 requests, 2 of them errors; bob: 4, all errors.
    await ship([
      record(a1, 200),
      record(`www.${a1}`, 500),
      record(a1, 200),
      record(a2, 503),
      record(a2, 200),
      ...[1, 2, 3, 4].map(() => record(b1, 500)),
    ]);

    const create = (key: string, body: unknown) => cp.call(key, 'POST', '/analytics/saved-queries', body);
    const ok = async (res: { statusCode: number; body: string; json<T>(): T }) => {
      assert.equal(res.statusCode, 200, res.body);
      return res.json<SavedQuery>();
    };
    const errorOf = (res: { statusCode: number; json<T>(): T }) => [
      res.statusCode,
      res.json<{ error: string }>().error,
    ];
    const COUNT = 'SELECT count(*) AS requests, count(*) FILTER (WHERE status >= 500) AS errors FROM logs';

    await t.test('create, list, get, update and delete; the answer has every field', async () => {
      const created = await ok(await create(alice.key, { name: '  everything ', query: COUNT }));
      assert.equal(created.name, 'everything', 'the name is trimmed');
      assert.equal(created.query, COUNT);
      assert.equal(created.alert, null);
      assert.equal(created.evaluation, null);
      const list = (await cp.call(alice.key, 'GET', '/analytics/saved-queries')).json<{
        saved_queries: SavedQuery[];
        max_saved_queries: number;
      }>();
      assert.deepEqual(
        list.saved_queries.map((q) => q.id),
        [created.id],
      );
      assert.equal(list.max_saved_queries, MAX_SAVED_QUERIES);
      assert.deepEqual(await ok(await cp.call(alice.key, 'GET', `/analytics/saved-queries/${created.id}`)), created);
      const renamed = await ok(
        await cp.call(alice.key, 'PUT', `/analytics/saved-queries/${created.id}`, { name: 'renamed' }),
      );
      assert.deepEqual([renamed.name, renamed.query], ['renamed', COUNT], 'omitted fields are kept');
      const requery = await ok(
        await cp.call(alice.key, 'PUT', `/analytics/saved-queries/${created.id}`, { query: 'SELECT 1 AS one' }),
      );
      assert.deepEqual([requery.name, requery.query], ['renamed', 'SELECT 1 AS one']);
      const del = await cp.call(alice.key, 'DELETE', `/analytics/saved-queries/${created.id}`);
      assert.deepEqual([del.statusCode, del.json()], [200, { message: 'saved query deleted' }]);
      assert.deepEqual(errorOf(await cp.call(alice.key, 'GET', `/analytics/saved-queries/${created.id}`)), [
        404,
        'saved query not found',
      ]);
      assert.equal((await cp.call(alice.key, 'DELETE', `/analytics/saved-queries/${created.id}`)).statusCode, 404);
    });

    await t.test('a query POST /analytics/query refuses is refused at save with the same 400 text', async () => {
      const refused = [
        "SELECT * FROM read_csv('/etc/passwd')",
        'SELECT * FROM information_schema.tables',
        'SELECT 1; DROP TABLE logs',
        'SELECT count(*) FROM logs; SELECT 1',
        "SELECT current_setting('memory_limit')",
        'SELECT no_such_column FROM logs',
        "COPY (SELECT 1) TO '/tmp/x.csv'",
        "ATTACH '/tmp/other.db'",
        'SELECT * FROM d_1',
        'SELECT 1 /* */; PRAGMA version',
        'SELECT 1\u202e',
        ' ',
        'x'.repeat(MAX_QUERY_CHARS + 1),
      ];
      for (const query of refused) {
        const direct = await cp.call(alice.key, 'POST', '/analytics/query', { query });
        assert.equal(direct.statusCode, 400, `${query.slice(0, 40)}: ${direct.body}`);
        const saved = await create(alice.key, { name: 'bad', query });
        assert.deepEqual(errorOf(saved), errorOf(direct), query.slice(0, 40));
        const existing = await ok(await create(alice.key, { name: 'fine', query: 'SELECT 1 AS one' }));
        const updated = await cp.call(alice.key, 'PUT', `/analytics/saved-queries/${existing.id}`, { query });
        assert.deepEqual(errorOf(updated), errorOf(direct), `update: ${query.slice(0, 40)}`);
        await cp.call(alice.key, 'DELETE', `/analytics/saved-queries/${existing.id}`);
      }
      // Carol's only domain is on the free plan (no logs): 403 naming the feature, as the query itself.
      const direct = await cp.call(carol.key, 'POST', '/analytics/query', { query: 'SELECT 1' });
      assert.equal(direct.statusCode, 403);
      assert.deepEqual(errorOf(await create(carol.key, { name: 'x', query: 'SELECT 1' })), errorOf(direct));
      assert.equal(
        (await cp.call(alice.key, 'GET', '/analytics/saved-queries')).json<{ saved_queries: [] }>().saved_queries
          .length,
        0,
      );
    });

    await t.test('bounds: name, the per-account cap, alert fields', async () => {
      for (const name of ['', '   ', 'n'.repeat(65)])
        assert.equal((await create(alice.key, { name, query: 'SELECT 1' })).statusCode, 400, JSON.stringify(name));
      assert.equal((await create(alice.key, { name: 'x', query: 'SELECT 1', extra: 1 })).statusCode, 400);
      assert.equal((await create(alice.key, { query: 'SELECT 1' })).statusCode, 400);
      const alert = { column: 'errors', op: '>', value: 1, interval_seconds: 60 };
      const bad: [unknown, RegExp][] = [
        [{ ...alert, column: 'nope' }, /answers no column "nope" \(its columns: requests, errors, d\)/],
        [{ ...alert, column: 'd' }, /"d" is VARCHAR, not a number/],
        [{ ...alert, interval_seconds: 59 }, /interval_seconds: at least 60/],
        [{ ...alert, interval_seconds: 86_401 }, /interval_seconds/],
        [{ ...alert, op: '=>' }, /op/],
        [{ ...alert, notify_feed: false }, /a target is required/],
        [{ ...alert, notify_feed: false, webhook_domain: a1 }, /no webhook_url is saved for sq-alice-one/],
      ];
      for (const [a, want] of bad) {
        const res = await create(alice.key, {
          name: 'alert',
          query: `${COUNT.replace(' FROM', ", 'x' AS d FROM")}`,
          alert: a,
        });
        assert.equal(res.statusCode, 400, res.body);
        assert.match(res.json<{ error: string }>().error, want);
      }
      // Another account's domain, or a name no one has: 404, as any domain the caller cannot see.
      for (const webhook_domain of [b1, 'nowhere.example.org']) {
        const res = await create(alice.key, { name: 'alert', query: COUNT, alert: { ...alert, webhook_domain } });
        assert.deepEqual(errorOf(res), [404, 'domain not found']);
      }
      // The cap.
      const ids: number[] = [];
      for (let i = 0; i < MAX_SAVED_QUERIES; i++)
        ids.push((await ok(await create(alice.key, { name: `q${i}`, query: 'SELECT 1 AS one' }))).id);
      const over = await create(alice.key, { name: 'one too many', query: 'SELECT 1' });
      assert.deepEqual(errorOf(over), [
        400,
        `the account already has ${MAX_SAVED_QUERIES} saved queries, the most an account may have; delete one first`,
      ]);
      // Another account is not counted against it.
      const bobs = await ok(await create(bob.key, { name: 'bob', query: 'SELECT 1 AS one' }));
      for (const id of ids)
        assert.equal((await cp.call(alice.key, 'DELETE', `/analytics/saved-queries/${id}`)).statusCode, 200);
      await cp.call(bob.key, 'DELETE', `/analytics/saved-queries/${bobs.id}`);
    });

    await t.test(
      "another account's saved query is 404 for every operation; read-only keys read, never write",
      async () => {
        const mine = await ok(await create(alice.key, { name: 'mine', query: COUNT }));
        const path = `/analytics/saved-queries/${mine.id}`;
        for (const [method, url, body] of [
          ['GET', path, undefined],
          ['PUT', path, { name: 'taken' }],
          ['DELETE', path, undefined],
          ['GET', `${path}/result`, undefined],
        ] as const)
          assert.deepEqual(
            errorOf(await cp.call(bob.key, method, url, body)),
            [404, 'saved query not found'],
            `${method} ${url}`,
          );
        assert.deepEqual(
          (await cp.call(bob.key, 'GET', '/analytics/saved-queries')).json<{ saved_queries: [] }>().saved_queries,
          [],
        );
        const ro = (await cp.key(alice.id, { readOnly: true })).key;
        assert.equal((await cp.call(ro, 'GET', '/analytics/saved-queries')).statusCode, 200);
        assert.equal((await cp.call(ro, 'GET', path)).statusCode, 200);
        assert.equal((await cp.call(ro, 'GET', `${path}/result`)).statusCode, 200, 'running is reading');
        for (const [method, url, body] of [
          ['POST', '/analytics/saved-queries', { name: 'ro', query: 'SELECT 1' }],
          ['PUT', path, { name: 'ro' }],
          ['DELETE', path, undefined],
        ] as const)
          assert.deepEqual(
            errorOf(await cp.call(ro, method, url, body)),
            [403, 'read-only API key'],
            `${method} ${url}`,
          );
        assert.equal((await ok(await cp.call(alice.key, 'GET', path))).name, 'mine', 'unchanged');
        await cp.call(alice.key, 'DELETE', path);
      },
    );

    await t.test("the run answers as POST /analytics/query, over the caller's rows only", async () => {
      const q =
        'SELECT count(*) AS requests, count(*) FILTER (WHERE status >= 500) AS errors, count(DISTINCT owner_id) AS owners FROM logs';
      const mine = await ok(await create(alice.key, { name: 'counts', query: q }));
      const run = await cp.call(alice.key, 'GET', `/analytics/saved-queries/${mine.id}/result`);
      assert.equal(run.statusCode, 200, run.body);
      const direct = await cp.call(alice.key, 'POST', '/analytics/query', { query: q });
      assert.deepEqual(run.json(), direct.json());
      assert.deepEqual(run.json<{ rows: unknown[][] }>().rows, [[5, 2, 1]]);
      const bobs = await ok(await create(bob.key, { name: 'counts', query: q }));
      assert.deepEqual(
        (await cp.call(bob.key, 'GET', `/analytics/saved-queries/${bobs.id}/result`)).json<{ rows: unknown[][] }>()
          .rows,
        [[4, 4, 1]],
      );
      // A saved query stopped at the time limit at run time answers the same 400 as the query.
      const saved = await ok(await create(dave.key, { name: 'slow', query: SLOW }));
      const res = await cp.call(dave.key, 'GET', `/analytics/saved-queries/${saved.id}/result`);
      assert.equal(res.statusCode, 400);
      assert.match(res.json<{ error: string }>().error, /time limit of 1500 ms/);
      await cp.call(alice.key, 'DELETE', `/analytics/saved-queries/${mine.id}`);
      await cp.call(dave.key, 'DELETE', `/analytics/saved-queries/${saved.id}`);
      await cp.call(bob.key, 'DELETE', `/analytics/saved-queries/${bobs.id}`);
    });

    await t.test(
      'the alert: fires once per crossing into the feed, records errors, its workflow is queued',
      async () => {
        const app = cp.app;
        const alert = { column: 'errors', op: '>', value: 2, interval_seconds: 60 };
        const q = await ok(await create(alice.key, { name: '5xx', query: COUNT, alert }));
        assert.deepEqual(q.alert, { ...alert, notify_feed: true, webhook_domain: null });
        assert.equal(q.evaluation?.state, 'unknown');
        const queued = await db
          .select()
          .from(workflowOutbox)
          .where(eq(workflowOutbox.workflowId, `analytics-alert:${q.id}`));
        assert.deepEqual(
          queued.map((w) => [w.kind, w.workflowType, w.args]),
          [['signal-with-start', 'savedQueryAlert', [{ savedQueryId: q.id }]]],
        );
        const feed = async () =>
          (await cp.call(alice.key, 'GET', '/notifications?category=analytics')).json<{
            notifications: { kind: string; title: string; data: Record<string, unknown> }[];
          }>().notifications;
        const state = async () =>
          (await ok(await cp.call(alice.key, 'GET', `/analytics/saved-queries/${q.id}`))).evaluation!;

        let now = Date.now();
        const step = async () => {
          const r = await evaluateSavedQuery(app, q.id, now);
          assert.equal(r?.next_at_ms, now + 60_000);
          // Asked again before it is due (an activity retried): nothing runs, the same moment is named.
          assert.deepEqual(await evaluateSavedQuery(app, q.id, now + 10), { next_at_ms: now + 60_000 });
          now += 60_000;
        };
        await step(); // 2 errors: not over 2
        assert.deepEqual([(await state()).state, (await state()).last_value, (await feed()).length], ['ok', 2, 0]);
        await ship([record(a1, 502)]);
        await step(); // 3: crosses
        await ship([record(a1, 502)]);
        await step(); // 4: still over, no second notice
        let s = await state();
        assert.deepEqual([s.state, s.last_value, s.fired_count, s.last_error], ['firing', 4, 1, null]);
        let notices = await feed();
        assert.equal(notices.length, 1);
        assert.deepEqual(
          [notices[0].kind, notices[0].title, notices[0].data],
          [
            'analytics.alert',
            'Alert: 5xx',
            {
              saved_query_id: q.id,
              name: '5xx',
              column: 'errors',
              op: '>',
              threshold: 2,
              value: 3,
              evaluated_at: new Date(now - 120_000).toISOString(),
            },
          ],
        );
        // Back under (the threshold raised), then over again: a second crossing, a second notice. A changed alert
        // starts afresh.
        await ok(
          await cp.call(alice.key, 'PUT', `/analytics/saved-queries/${q.id}`, { alert: { ...alert, value: 10 } }),
        );
        assert.equal((await state()).state, 'unknown');
        await step();
        assert.equal((await state()).state, 'ok');
        await ship(Array.from({ length: 7 }, () => record(a2, 500)));
        await step();
        s = await state();
        assert.deepEqual([s.state, s.last_value, s.fired_count], ['firing', 11, 1]);
        notices = await feed();
        assert.equal(notices.length, 2);
        assert.equal(notices[0].data.value, 11);

        // A query that fails at evaluation (its plan lost logs): the error is recorded, the state kept, nothing sent.
        for (const d of [a1, a2]) await setOverride(db, await idOf(d), 'logs_enabled', false);
        await step();
        s = await state();
        assert.equal(s.state, 'firing');
        assert.match(s.last_error ?? '', /logs/);
        assert.equal((await feed()).length, 2);
        for (const d of [a1, a2]) await setOverride(db, await idOf(d), 'logs_enabled', true);

        // A deactivated account's alert does not run: recorded as well.
        await db.update(users).set({ active: false }).where(eq(users.id, alice.id));
        await step();
        assert.equal((await savedQueryById(db, q.id))?.lastError, 'account is inactive');
        await db.update(users).set({ active: true }).where(eq(users.id, alice.id));

        // Stopped at the time limit: recorded as well.
        const slow = await ok(
          await create(dave.key, {
            name: 'slow',
            query: SLOW,
            alert: { column: 'n', op: '>', value: 0, interval_seconds: 60 },
          }),
        );
        await evaluateSavedQuery(app, slow.id);
        const ss = (await ok(await cp.call(dave.key, 'GET', `/analytics/saved-queries/${slow.id}`))).evaluation!;
        assert.equal(ss.state, 'unknown');
        assert.match(ss.last_error ?? '', /time limit of 1500 ms/);

        // Removing the alert: the workflow is told and the next evaluation ends it; a deleted query ends it too.
        await ok(await cp.call(dave.key, 'PUT', `/analytics/saved-queries/${slow.id}`, { alert: null }));
        assert.deepEqual(await evaluateSavedQuery(app, slow.id), { next_at_ms: null });
        await cp.call(dave.key, 'DELETE', `/analytics/saved-queries/${slow.id}`);
        assert.equal(await evaluateSavedQuery(app, slow.id), null);
        await cp.call(alice.key, 'DELETE', `/analytics/saved-queries/${q.id}`);
      },
    );

    await t.test("a crossing to a domain's uptime webhook is a signed delivery of that domain", async () => {
      const saved = await cp.call(alice.key, 'PUT', `/uptime/settings?domain=${a1}`, {
        webhook_url: 'http://127.0.0.1:9/hook',
      });
      // The uptime settings need the monitoring feature: set it when the free plan lacks it.
      if (saved.statusCode === 403) {
        await setOverride(db, await idOf(a1), 'monitoring_enabled', true);
        assert.equal(
          (await cp.call(alice.key, 'PUT', `/uptime/settings?domain=${a1}`, { webhook_url: 'http://127.0.0.1:9/hook' }))
            .statusCode,
          200,
        );
      } else assert.equal(saved.statusCode, 200, saved.body);
      const q = await ok(
        await create(alice.key, {
          name: 'hook',
          query: COUNT,
          alert: {
            column: 'requests',
            op: '>=',
            value: 1,
            interval_seconds: 60,
            notify_feed: false,
            webhook_domain: a1,
          },
        }),
      );
      assert.deepEqual([q.alert?.notify_feed, q.alert?.webhook_domain], [false, a1]);
      await evaluateSavedQuery(cp.app, q.id);
      const deliveries = await db
        .select()
        .from(uptimeWebhookDeliveries)
        .where(eq(uptimeWebhookDeliveries.event, 'analytics.alert'));
      assert.equal(deliveries.length, 1);
      assert.equal(deliveries[0].url, 'http://127.0.0.1:9/hook');
      assert.deepEqual(
        { ...deliveries[0].payload, value: undefined, evaluated_at: undefined },
        {
          event: 'analytics.alert',
          domain: a1,
          saved_query_id: q.id,
          name: 'hook',
          column: 'requests',
          op: '>=',
          threshold: 1,
          value: undefined,
          evaluated_at: undefined,
        },
      );
      const listed = await cp.call(alice.key, 'GET', `/uptime/webhook/deliveries?domain=${a1}`);
      assert.equal(listed.statusCode, 200, listed.body);
      assert.equal(listed.json<{ event: string }[]>()[0].event, 'analytics.alert');
      // The webhook's domain deleted: the alert stays, a crossing records the error.
      await ok(
        await cp.call(alice.key, 'PUT', `/analytics/saved-queries/${q.id}`, { alert: { ...q.alert, value: 1 } }),
      );
      await db.delete(domains).where(eq(domains.name, a1));
      await evaluateSavedQuery(cp.app, q.id);
      const after = (await ok(await cp.call(alice.key, 'GET', `/analytics/saved-queries/${q.id}`))).evaluation!;
      assert.equal(after.state, 'firing');
      assert.equal(after.last_error, 'webhook: the webhook domain was deleted');
    });
  },
);

test('an evaluation that finds every query slot taken is postponed, not recorded as an error', async (t) => {
  // The probes below may send hundreds of requests a minute: the per-key rate limit (also a 429) is lifted so that a
  // 429 can only mean the query slot is taken.
  const cp = await startTestControlPlane(t, {
    ANALYTICS_QUERY_CONCURRENCY: '1',
    ANALYTICS_QUERY_TIMEOUT_MS: '3000',
    RATE_LIMIT_PER_MINUTE: '100000',
  });
  const u = await cp.user();
  const d = await cp.domain(u.key, 'sq-busy.example.org');
  await setOverride(cp.database.db, await domainIdOf(cp, d), 'logs_enabled', true);
  await shipper(cp)(
    'n1',
    Array.from({ length: 500 }, (_, i) => record(d, 200 + (i % 300))),
  );
  const path = '/analytics/saved-queries';
  const alert = { column: 'n', op: '>', value: 0, interval_seconds: 60 };
  const created = await cp.call(u.key, 'POST', path, { name: 'busy', query: 'SELECT count(*) AS n FROM logs', alert });
  assert.equal(created.statusCode, 200, created.body);
  const id = created.json<SavedQuery>().id;
  const evaluation = async () => (await cp.call(u.key, 'GET', `${path}/${id}`)).json<SavedQuery>().evaluation!;
  let postponed = false;
  // A slow query takes the one slot (seen when another query is refused 429); the evaluation asked meanwhile gives
  // its claim back and answers 503, which the workflow's activity retries. Tried again if the slow query ended first.
  for (let attempt = 0; attempt < 10 && !postponed; attempt++) {
    const before = await evaluation();
    const slow = cp.call(u.key, 'POST', '/analytics/query', {
      query: 'SELECT sum(a.bytes * b.status + c.bytes - d.status) AS n FROM logs a, logs b, logs c, logs d',
    });
    // Two requests through authentication and the database first: the slow query has most likely taken the slot
    // by then (when a probe took it first, the slow query is refused 429 and the attempt is made again).
    for (let i = 0; i < 2; i++) await cp.call(u.key, 'GET', path);
    let busy = false;
    for (let i = 0; i < 500 && !busy; i++)
      busy = (await cp.call(u.key, 'POST', '/analytics/query', { query: 'SELECT 1' })).statusCode === 429;
    if (busy) {
      try {
        await evaluateSavedQuery(cp.app, id);
      } catch (err) {
        assert.match(String(err), /evaluation postponed: too many analytics queries running at once/);
        postponed = true;
        assert.deepEqual(await evaluation(), before, 'nothing recorded, still due');
      }
    }
    assert.ok([400, 429].includes((await slow).statusCode));
    if (!postponed)
      assert.equal((await cp.call(u.key, 'PUT', `${path}/${id}`, { alert })).statusCode, 200, 'due again');
  }
  assert.ok(postponed);
  assert.equal((await evaluateSavedQuery(cp.app, id))?.next_at_ms === null, false);
  const e = await evaluation();
  assert.deepEqual([e.state, e.last_value, e.last_error], ['firing', 500, null]);
});

test('holds: each comparison', () => {
  assert.deepEqual(
    (['>', '>=', '<', '<=', '=', '!='] as const).map((op) => [holds(1, op, 1), holds(2, op, 1)]),
    [
      [false, true],
      [true, true],
      [false, false],
      [true, false],
      [true, false],
      [false, true],
    ],
  );
});
