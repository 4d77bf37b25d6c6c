// The per-domain analytics reads (GET /domains/{domain}/analytics/...) on a generated log of known content: every
// number is computed here again from the generated records in plain JS. Also: one account never sees another's
// domain, plan gating names the feature, bad parameters are 400, read-only keys may read.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestControlPlane } from '../../../../test/helpers/control-plane.js';
import { setOverride } from '../../plans/subscriptions.js';
import { COLUMN_OF, domainIdOf, expectedTotals, lcg, pick, shipper, type Shipped } from './test-log.js';

const HOUR = 3_600_000;
/** Every read that takes only the range and filters. */
const ALL_READS = [
  'requests',
  'bandwidth',
  'visitors',
  'summary',
  'origin',
  'peak-rps',
  'busiest',
  'bot-scores',
  'compare',
  'rules',
  'security-actions',
  'status-codes',
  'cache',
  'top-uris',
  'logs',
];
/** The fields of a raw log line the test compares. */
interface Line {
  time: string;
  path: string;
  status: number;
  bytes: number;
  node: string;
  client_ip: string;
  rule_hits: unknown;
}
const iso = (ms: number) => new Date(ms).toISOString();

/** requests and bytes per key, most requests first, ties by key (strings by code unit, numbers numerically). */
function breakdown<K extends string | number>(rows: Shipped[], key: (x: Shipped) => K) {
  const m = new Map<K, { value: K; requests: number; bytes: number }>();
  for (const x of rows) {
    const k = key(x);
    const e = m.get(k) ?? { value: k, requests: 0, bytes: 0 };
    e.requests++;
    e.bytes += x.bytes;
    m.set(k, e);
  }
  return [...m.values()].sort(
    (a, b) => b.requests - a.requests || (a.value < b.value ? -1 : a.value > b.value ? 1 : 0),
  );
}

test('analytics reads: numbers match the generated log; isolation, gating, bounds', { timeout: 300_000 }, async (t) => {
  const cp = await startTestControlPlane(t);
  const db = cp.database.db;
  const ship = shipper(cp);

  const alice = await cp.user();
  const bob = await cp.user();
  const a1 = await cp.domain(alice.key, 'reads-alice.example.org');
  const b1 = await cp.domain(bob.key, 'reads-bob.example.org');
  const idOf = (name: string) => domainIdOf(cp, name);
  const ids = { a1: await idOf(a1), b1: await idOf(b1) };
  for (const id of [ids.a1, ids.b1]) await setOverride(db, id, 'logs_enabled', true);

  // Two whole hours ending at the last full hour, and a few rows outside them on either side.
  const base = Math.floor(Date.now() / HOUR) * HOUR - 2 * HOUR;
  const r = lcg(1515);
  const log: Shipped[] = [];
  const hosts = [a1, `www.${a1}`, `img.${a1}`, b1, `www.${b1}`];
  for (let i = 0; i < 1200; i++) {
    const outside = i % 97 === 0;
    log.push({
      t: outside
        ? base + (i % 2 === 0 ? -1 - Math.floor(r() * HOUR) : 2 * HOUR + Math.floor(r() * 60_000))
        : base + Math.floor(r() * 2 * HOUR),
      host: pick(r, hosts),
      path: pick(r, ['/', '/a.css', '/b.js', '/api/v1/items?page=2', '/login', '/img/logo.png']),
      method: pick(r, ['GET', 'GET', 'GET', 'POST', 'HEAD']),
      status: pick(r, [200, 200, 200, 200, 301, 304, 404, 404, 500, 503, 403]),
      bytes: Math.floor(r() * 50_000),
      cache: pick(r, ['HIT', 'HIT', 'MISS', 'STALE', 'EXPIRED', 'BYPASS', 'DYNAMIC', '']),
      rules: r() < 0.1 ? [[7, 'waf', false]] : [],
      ms: Math.round(r() * 500) / 10,
      upstreamMs: -1,
      peer: `198.51.100.${Math.floor(r() * 40)}`,
      node: r() < 0.6 ? 'edge-a' : 'edge-b',
    });
    const x = log[log.length - 1];
    // The origin was asked unless the cache answered.
    if (x.cache !== 'HIT' && x.cache !== 'STALE') x.upstreamMs = Math.round(r() * 3000) / 10;
    if (r() < 0.3) x.rules = [[pick(r, [7, 8, 9]), pick(r, ['waf', 'rate_limit']), r() < 0.3], ...x.rules];
    if (r() < 0.2)
      x.waf = Array.from({ length: 1 + Math.floor(r() * 3) }, () => [
        7,
        pick(r, ['942100', '941100']),
        2,
        'args',
        'x',
        pick(r, ['block', 'log', 'challenge']),
      ]);
    if (r() < 0.5) {
      x.bot = 1 + Math.floor(r() * 99);
      x.botClass = pick(r, ['human', 'automation', 'ai_crawler', 'verified_crawler']);
    }
  }
  // A burst: 30 requests in one second, forty minutes in.
  for (let k = 0; k < 30; k++)
    log.push({ ...log[k], host: `www.${a1}`, t: base + 40 * 60_000 + ((k * 37) % 1000), node: 'edge-a' });
  for (const node of ['edge-a', 'edge-b']) {
    const mine = log.filter((x) => x.node === node).map(({ node: _n, ...rec }) => rec);
    await ship(node, mine.slice(0, 300));
    await ship(node, mine.slice(300));
  }
  const inA1 = (x: Shipped) => x.host === a1 || x.host.endsWith(`.${a1}`);
  const inB1 = (x: Shipped) => x.host === b1 || x.host.endsWith(`.${b1}`);
  const since = base;
  const until = base + 2 * HOUR;
  const inRange = (x: Shipped, s = since, u = until) => x.t >= s && x.t < u;
  const aliceRows = log.filter((x) => inA1(x) && inRange(x));
  assert.ok(aliceRows.length > 300 && aliceRows.length < log.filter(inA1).length, 'some rows fall outside');

  const get = async (key: string, domain: string, read: string, params: Record<string, string | number> = {}) => {
    const qs = new URLSearchParams(Object.entries(params).map(([k, v]): [string, string] => [k, String(v)])).toString();
    return cp.call(key, 'GET', `/domains/${domain}/analytics/${read}${qs ? `?${qs}` : ''}`);
  };
  const ok = async <T>(key: string, domain: string, read: string, params: Record<string, string | number> = {}) => {
    const res = await get(key, domain, read, params);
    assert.equal(res.statusCode, 200, `${read} ${JSON.stringify(params)}: ${res.body.slice(0, 300)}`);
    return res.json<T>();
  };
  const range = { since: iso(since), until: iso(until) };

  /** Per bucket of `ms` from `since`: the rows' count and bytes. */
  const perBucket = (rows: Shipped[], ms: number, start = since, points = Math.ceil((until - start) / ms)) => {
    const req = new Array<number>(points).fill(0);
    const bytes = new Array<number>(points).fill(0);
    for (const x of rows) {
      const b = Math.floor((x.t - start) / ms);
      req[b]++;
      bytes[b] += x.bytes;
    }
    return { req, bytes, times: req.map((_, i) => iso(start + i * ms)) };
  };

  type Series = {
    since: string;
    until: string;
    interval: string;
    requests?: number;
    bytes?: number;
    visitors?: number;
    points: Record<string, number | string>[];
  };

  await t.test('requests over time', async () => {
    const got = await ok<Series>(alice.key, a1, 'requests', { ...range, interval: '5m' });
    const want = perBucket(aliceRows, 300_000);
    assert.equal(got.interval, '5m');
    assert.deepEqual([got.since, got.until], [range.since, range.until]);
    assert.equal(got.points.length, 24);
    assert.deepEqual(
      got.points,
      want.req.map((requests, i) => ({ time: want.times[i], requests })),
    );
    assert.equal(got.requests, aliceRows.length);
    // A filter, and a range that starts inside a bucket: the first point is that bucket, holding only rows after since.
    const s2 = since + 17 * 60_000 + 30_000;
    const filtered = aliceRows.filter((x) => x.status === 404 && x.t >= s2);
    const got2 = await ok<Series>(alice.key, a1, 'requests', {
      since: iso(s2),
      until: range.until,
      interval: '15m',
      status: 404,
    });
    const want2 = perBucket(filtered, 900_000, since + 15 * 60_000);
    assert.deepEqual(
      got2.points,
      want2.req.map((requests, i) => ({ time: want2.times[i], requests })),
    );
    // No interval: the shortest within the points limit (two hours of minutes).
    const got3 = await ok<Series>(alice.key, a1, 'requests', range);
    assert.equal(got3.interval, '1m');
    assert.equal(got3.points.length, 120);
    assert.deepEqual(
      got3.points.map((p) => p.requests),
      perBucket(aliceRows, 60_000).req,
    );
    // Hourly, through a time zone offset in the parameters.
    const h = new Date(since + 2 * HOUR).toISOString().slice(0, 19);
    const got4 = await ok<Series>(alice.key, a1, 'requests', {
      since: `${h}+02:00`,
      until: range.until,
      interval: '1h',
    });
    assert.deepEqual(
      got4.points.map((p) => p.requests),
      perBucket(aliceRows, HOUR).req,
    );
  });

  await t.test('bandwidth over time', async () => {
    const got = await ok<Series>(alice.key, a1, 'bandwidth', { ...range, interval: '15m', node: 'edge-b' });
    const rows = aliceRows.filter((x) => x.node === 'edge-b');
    const want = perBucket(rows, 900_000);
    assert.deepEqual(
      got.points,
      want.bytes.map((bytes, i) => ({ time: want.times[i], bytes })),
    );
    assert.equal(
      got.bytes,
      rows.reduce((a, x) => a + x.bytes, 0),
    );
  });

  await t.test('visitors over time', async () => {
    const got = await ok<Series>(alice.key, a1, 'visitors', { ...range, interval: '15m', method: 'GET' });
    const rows = aliceRows.filter((x) => x.method === 'GET');
    const sets = Array.from({ length: 8 }, () => new Set<string>());
    for (const x of rows) sets[Math.floor((x.t - since) / 900_000)].add(x.peer);
    assert.deepEqual(
      got.points,
      sets.map((set, i) => ({ time: iso(since + i * 900_000), visitors: set.size })),
    );
    assert.equal(got.visitors, new Set(rows.map((x) => x.peer)).size);
  });

  await t.test('domain summary', async () => {
    const got = await ok<Record<string, unknown>>(alice.key, a1, 'summary', range);
    assert.deepEqual(got, { ...range, ...expectedTotals(aliceRows) });
  });

  await t.test('edge-to-origin statistics', async () => {
    type Origin = { requests: number; bytes: number; share: number; upstream_ms: Record<string, number> | null };
    const got = await ok<Origin>(alice.key, a1, 'origin', { ...range, node: 'edge-a' });
    const all = aliceRows.filter((x) => x.node === 'edge-a');
    const rows = all.filter((x) => x.upstreamMs >= 0);
    const ms = rows.map((x) => x.upstreamMs).sort((a, b) => a - b);
    // nearest rank: the smallest value with at least q of the values at or below it
    const rank = (q: number) => ms[Math.ceil(q * ms.length) - 1];
    assert.equal(got.requests, rows.length);
    assert.equal(
      got.bytes,
      rows.reduce((a, x) => a + x.bytes, 0),
    );
    assert.equal(got.share, rows.length / all.length);
    assert.ok(got.upstream_ms);
    assert.ok(Math.abs(got.upstream_ms.avg - ms.reduce((a, b) => a + b, 0) / ms.length) < 1e-9);
    assert.deepEqual(
      [got.upstream_ms.p50, got.upstream_ms.p95, got.upstream_ms.p99],
      [rank(0.5), rank(0.95), rank(0.99)],
    );
    // only cache hits: nothing went to the origin
    const none = await ok<Origin>(alice.key, a1, 'origin', { ...range, cache_status: 'HIT' });
    assert.deepEqual([none.requests, none.upstream_ms], [0, null]);
  });

  await t.test('peak requests per second', async () => {
    const perSecond = new Map<number, number>();
    for (const x of aliceRows) perSecond.set(Math.floor(x.t / 1000), (perSecond.get(Math.floor(x.t / 1000)) ?? 0) + 1);
    const [second, n] = [...perSecond].sort((a, b) => b[1] - a[1] || a[0] - b[0])[0];
    assert.ok(n >= 30);
    const got = await ok<{ requests_per_second: number; time: string | null }>(alice.key, a1, 'peak-rps', range);
    assert.deepEqual([got.requests_per_second, got.time], [n, iso(second * 1000)]);
    const empty = await ok<{ requests_per_second: number; time: string | null }>(alice.key, a1, 'peak-rps', {
      ...range,
      path: '/nothing-here',
    });
    assert.deepEqual([empty.requests_per_second, empty.time], [0, null]);
  });

  await t.test('busiest day and hour', async () => {
    const busiest = (ms: number) => {
      const per = new Map<number, number>();
      for (const x of aliceRows) per.set(Math.floor(x.t / ms), (per.get(Math.floor(x.t / ms)) ?? 0) + 1);
      const [k, n] = [...per].sort((a, b) => b[1] - a[1] || a[0] - b[0])[0];
      return { time: iso(k * ms), requests: n };
    };
    const got = await ok<{ day: unknown; hour: unknown }>(alice.key, a1, 'busiest', range);
    assert.deepEqual([got.day, got.hour], [busiest(86_400_000), busiest(HOUR)]);
    const none = await ok<{ day: unknown; hour: unknown }>(alice.key, a1, 'busiest', { ...range, status: 599 });
    assert.deepEqual([none.day, none.hour], [null, null]);
  });

  await t.test('bot scores', async () => {
    const got = await ok<Record<string, unknown>>(alice.key, a1, 'bot-scores', { ...range, method: 'GET' });
    const rows = aliceRows.filter((x) => x.method === 'GET');
    const band = (lo: number, hi: number) => rows.filter((x) => (x.bot ?? 0) >= lo && (x.bot ?? 0) <= hi).length;
    const scores = breakdown(
      rows.filter((x) => x.bot !== undefined),
      (x) => x.bot!,
    )
      .map((e) => ({ score: e.value, requests: e.requests }))
      .sort((a, b) => a.score - b.score);
    assert.deepEqual(got, {
      ...range,
      requests: rows.length,
      bands: {
        not_scored: band(0, 0),
        automated: band(1, 1),
        likely_automated: band(2, 29),
        likely_human: band(30, 99),
      },
      scores,
      bot_classes: breakdown(rows, (x) => x.botClass ?? '').map((e) => ({ bot_class: e.value, requests: e.requests })),
    });
  });

  await t.test('period comparison, and the bot_class filter (AI crawlers)', async () => {
    const totals = (s: number, u: number, rows: Shipped[]) => {
      const inside = rows.filter((x) => inA1(x) && x.t >= s && x.t < u);
      const cached = inside.filter((x) => x.cache === 'HIT' || x.cache === 'STALE');
      const origin = inside.filter((x) => x.upstreamMs >= 0);
      return {
        since: iso(s),
        until: iso(u),
        requests: inside.length,
        bytes: inside.reduce((a, x) => a + x.bytes, 0),
        visitors: new Set(inside.map((x) => x.peer)).size,
        cached_requests: cached.length,
        cached_bytes: cached.reduce((a, x) => a + x.bytes, 0),
        origin_requests: origin.length,
        origin_bytes: origin.reduce((a, x) => a + x.bytes, 0),
        errors_4xx: inside.filter((x) => x.status >= 400 && x.status < 500).length,
        errors_5xx: inside.filter((x) => x.status >= 500).length,
      };
    };
    const ratio = (c: number, p: number) => (p === 0 ? null : (c - p) / p);
    for (const [s, u, rows, params] of [
      [since + HOUR, until, log, {}],
      [since, until, log, {}],
      [since + HOUR, until, log.filter((x) => x.botClass === 'ai_crawler'), { bot_class: 'ai_crawler' }],
    ] as const) {
      const got = await ok<Record<string, unknown>>(alice.key, a1, 'compare', {
        since: iso(s),
        until: iso(u),
        ...params,
      });
      const current = totals(s, u, rows);
      const previous = totals(s - (u - s), s, rows);
      assert.ok(previous.requests > 0);
      assert.deepEqual(got, {
        current,
        previous,
        change: Object.fromEntries(
          Object.entries(current)
            .filter(([k]) => k !== 'since' && k !== 'until')
            .map(([k, v]) => [k, ratio(v as number, previous[k as keyof typeof previous] as number)]),
        ),
      });
    }
    const ai = aliceRows.filter((x) => x.botClass === 'ai_crawler');
    const got = await ok<Series>(alice.key, a1, 'requests', { ...range, interval: '1h', bot_class: 'ai_crawler' });
    assert.deepEqual(
      got.points.map((p) => p.requests),
      perBucket(ai, HOUR).req,
    );
  });

  await t.test('busiest rules and security actions', async () => {
    const per = new Map<string, { rule_id: number; rule_type: string; hits: number; dry_run: number }>();
    for (const x of aliceRows)
      for (const [id, type, dry] of x.rules) {
        const e = per.get(`${id} ${type}`) ?? { rule_id: id, rule_type: type, hits: 0, dry_run: 0 };
        e.hits++;
        if (dry) e.dry_run++;
        per.set(`${id} ${type}`, e);
      }
    const want = [...per.values()].sort(
      (a, b) => b.hits - a.hits || a.rule_id - b.rule_id || (a.rule_type < b.rule_type ? -1 : 1),
    );
    assert.ok(want.length >= 4);
    const got = await ok<{ rules: unknown[] }>(alice.key, a1, 'rules', { ...range, limit: 3 });
    assert.deepEqual(got.rules, want.slice(0, 3));
    const actions = new Map<string, { action: string; events: number; requests: number }>();
    for (const x of aliceRows) {
      const seen = new Set<string>();
      for (const e of x.waf ?? []) {
        const a = actions.get(e[5]) ?? { action: e[5], events: 0, requests: 0 };
        a.events++;
        if (!seen.has(e[5])) a.requests++;
        seen.add(e[5]);
        actions.set(e[5], a);
      }
    }
    const got2 = await ok<{ actions: unknown[] }>(alice.key, a1, 'security-actions', range);
    assert.deepEqual(
      got2.actions,
      [...actions.values()].sort((a, b) => b.events - a.events || (a.action < b.action ? -1 : 1)),
    );
  });

  await t.test('status codes', async () => {
    const got = await ok<{ requests: number; classes: Record<string, number>; status_codes: unknown[] }>(
      alice.key,
      a1,
      'status-codes',
      range,
    );
    assert.equal(got.requests, aliceRows.length);
    assert.deepEqual(
      got.status_codes,
      breakdown(aliceRows, (x) => x.status).map((e) => ({ status: e.value, requests: e.requests, bytes: e.bytes })),
    );
    const classes: Record<string, number> = { '1xx': 0, '2xx': 0, '3xx': 0, '4xx': 0, '5xx': 0 };
    for (const x of aliceRows) classes[`${String(x.status)[0]}xx`]++;
    assert.deepEqual(got.classes, classes);
  });

  await t.test('cache counts', async () => {
    const got = await ok<{ requests: number; hit_ratio: number; cache_statuses: unknown[] }>(alice.key, a1, 'cache', {
      ...range,
      method: 'GET',
    });
    const rows = aliceRows.filter((x) => x.method === 'GET');
    assert.equal(got.requests, rows.length);
    assert.deepEqual(
      got.cache_statuses,
      breakdown(rows, (x) => x.cache).map((e) => ({ cache_status: e.value, requests: e.requests, bytes: e.bytes })),
    );
    const n = (s: string) => rows.filter((x) => x.cache === s).length;
    assert.equal(got.hit_ratio, (n('HIT') + n('STALE')) / (n('HIT') + n('STALE') + n('MISS') + n('EXPIRED')));
  });

  await t.test('top URIs and the top-N breakdown by each dimension', async () => {
    const top = await ok<{ items: unknown[] }>(alice.key, a1, 'top-uris', { ...range, limit: 3 });
    assert.deepEqual(
      top.items,
      breakdown(aliceRows, (x) => x.path)
        .slice(0, 3)
        .map((e) => ({ path: e.value, requests: e.requests, bytes: e.bytes })),
    );
    for (const [dimension, key] of Object.entries(COLUMN_OF)) {
      const got = await ok<{ dimension: string; items: unknown[] }>(alice.key, a1, 'top', {
        ...range,
        dimension,
        limit: 100,
      });
      assert.equal(got.dimension, dimension);
      assert.deepEqual(got.items, breakdown(aliceRows, key).slice(0, 100), dimension);
    }
    const rows = aliceRows.filter((x) => x.host === `www.${a1}` && x.cache === 'HIT');
    const got = await ok<{ items: unknown[] }>(alice.key, a1, 'top', {
      ...range,
      dimension: 'client_ip',
      host: `www.${a1}`,
      cache_status: 'HIT',
      limit: 5,
    });
    assert.deepEqual(got.items, breakdown(rows, (x) => x.peer).slice(0, 5));
    // A filter value is a value: quotes and SQL in it match nothing.
    const sqlish = await ok<{ items: unknown[] }>(alice.key, a1, 'top', {
      ...range,
      dimension: 'host',
      host: "x' OR '1'='1",
    });
    assert.deepEqual(sqlish.items, []);
  });

  await t.test('raw logs: every row of the range once, newest first, paged', async () => {
    type Page = {
      logs: Line[];
      next_cursor: string | null;
    };
    const seen: Page['logs'] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page: Page = await ok<Page>(alice.key, a1, 'logs', { ...range, limit: 37, ...(cursor ? { cursor } : {}) });
      assert.ok(page.logs.length <= 37);
      seen.push(...page.logs);
      cursor = page.next_cursor;
      pages++;
      assert.ok(pages < 100);
    } while (cursor);
    assert.equal(pages, Math.ceil(aliceRows.length / 37));
    for (let i = 1; i < seen.length; i++) assert.ok(seen[i - 1].time >= seen[i].time, 'newest first');
    const key = (x: Line) => JSON.stringify([x.time, x.path, x.status, x.bytes, x.node, x.client_ip, x.rule_hits]);
    const want = aliceRows.map((x) =>
      key({
        time: iso(x.t),
        path: x.path,
        status: x.status,
        bytes: x.bytes,
        node: x.node,
        client_ip: x.peer,
        rule_hits: x.rules,
      }),
    );
    assert.deepEqual(seen.map(key).sort(), want.sort());
    // A filter, and the last page says so.
    const posts = aliceRows.filter((x) => x.method === 'POST');
    const all = await ok<Page>(alice.key, a1, 'logs', { ...range, method: 'POST', limit: 1000 });
    assert.equal(all.logs.length, posts.length);
    assert.equal(all.next_cursor, null);
  });

  await t.test("one account never sees another's domain; a member sees the shared one", async () => {
    for (const read of ALL_READS) {
      const res = await get(bob.key, a1, read, range);
      assert.equal(res.statusCode, 404, `${read}: ${res.body}`);
    }
    assert.equal((await get(bob.key, a1, 'top', { ...range, dimension: 'path' })).statusCode, 404);
    const bobRows = log.filter((x) => inB1(x) && inRange(x));
    const mine = await ok<{ requests: number }>(bob.key, b1, 'status-codes', range);
    assert.equal(mine.requests, bobRows.length);
    const hosts = await ok<{ items: { value: string }[] }>(bob.key, b1, 'top', {
      ...range,
      dimension: 'host',
      limit: 100,
    });
    assert.ok(hosts.items.every((i) => i.value.endsWith(b1)));
    // bob's filter on alice's host finds nothing in his own domain
    const probe = await ok<{ requests: number }>(bob.key, b1, 'requests', { ...range, host: a1 });
    assert.equal(probe.requests, 0);
    const viewer = await cp.user();
    await cp.addMember(a1, viewer.id, 'viewer');
    assert.equal((await ok<{ requests: number }>(viewer.key, a1, 'requests', range)).requests, aliceRows.length);
    // a read-only key reads
    const ro = await cp.key(alice.id, { readOnly: true });
    assert.equal((await ok<{ requests: number }>(ro.key, a1, 'requests', range)).requests, aliceRows.length);
    // a domain with no rows yet answers zeros
    const empty = await cp.domain(alice.key, 'reads-empty.example.org');
    const none = await ok<Series>(alice.key, empty, 'requests', { ...range, interval: '1h' });
    assert.deepEqual(
      none.points.map((p) => p.requests),
      [0, 0],
    );
  });

  await t.test('plan gating: 403 naming the missing feature', async () => {
    await setOverride(db, ids.a1, 'logs_enabled', false);
    let res = await get(alice.key, a1, 'logs', range);
    assert.equal(res.statusCode, 403);
    assert.match(res.json().error, /logs_enabled/);
    assert.equal((await get(alice.key, a1, 'requests', range)).statusCode, 200);
    await setOverride(db, ids.a1, 'analytics_enabled', false);
    for (const read of ALL_READS) {
      res = await get(alice.key, a1, read, range);
      assert.equal(res.statusCode, 403, read);
      assert.match(res.json().error, /analytics_enabled/, read);
    }
    await setOverride(db, ids.a1, 'analytics_enabled', null);
    await setOverride(db, ids.a1, 'logs_enabled', true);
    assert.equal((await get(alice.key, a1, 'logs', range)).statusCode, 200);
  });

  await t.test('bad parameters: 400 with an error', async () => {
    const day = 86_400_000;
    const cases: [string, Record<string, string | number>][] = [
      ['requests', { since: range.until, until: range.since }],
      ['requests', { since: range.since, until: range.since }],
      ['requests', { since: iso(until - 367 * day), until: range.until }],
      ['requests', { since: 'yesterday' }],
      ['requests', { since: '2026-11-25T10:00:00' }],
      ['requests', { until: '2026-02-30T10:00:00Z' }],
      ['requests', { since: `2026-11-25T10:00:00Z${' '.repeat(50)}` }],
      ['requests', { since: iso(until - 30 * day), until: range.until, interval: '1m' }],
      ['bandwidth', { since: iso(until - 366 * day), until: range.until, interval: '1h' }],
      ['requests', { interval: '2m' }],
      ['requests', { foo: 'bar' }],
      ['requests', { 'filter[host]': a1 }],
      ['requests', { client_ip: '198.51.100.1' }],
      ['status-codes', { status: 'abc' }],
      ['status-codes', { status: 99 }],
      ['cache', { path: 'x'.repeat(3000) }],
      ['top', {}],
      ['top', { dimension: 'bytes' }],
      ['top', { dimension: 'path', limit: 0 }],
      ['top', { dimension: 'path', limit: 101 }],
      ['top-uris', { limit: 1000 }],
      ['logs', { limit: 1001 }],
      ['logs', { cursor: 'nope' }],
      ['logs', { cursor: 'zzzzzzzzzzzzzzzzzz.1' }],
      ['logs', { cursor: 'zzzzzzzzzzzzz.1' }],
    ];
    for (const [read, params] of cases) {
      const res = await get(alice.key, a1, read, params);
      assert.equal(
        res.statusCode,
        400,
        `${read} ${JSON.stringify(params)}: ${res.statusCode} ${res.body.slice(0, 300)}`,
      );
      assert.ok(res.json<{ error: string }>().error.length > 0);
    }
    const many = await get(alice.key, a1, 'requests', {
      since: iso(until - 30 * day),
      until: range.until,
      interval: '1m',
    });
    assert.match(many.json().error, /points/);
    // The longest range with the longest interval is fine.
    const year = await ok<Series>(alice.key, a1, 'requests', { since: iso(until - 366 * day), until: range.until });
    assert.equal(year.interval, '1d');
  });
});
