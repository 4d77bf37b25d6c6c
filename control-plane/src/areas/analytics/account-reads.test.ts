// The account-wide analytics reads (GET /analytics/...), the per-domain reads of account-read-routes.ts and the
// subscription's quota_period_used_bytes, on a generated log of known content: every number is computed here again
// from the generated records in plain JS. Also: an account never sees another's domains, a member sees the shared
// one, plan gating per domain (a mix of plans, none with analytics), read-only keys, bad parameters.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { eq } from 'drizzle-orm';
import { startTestControlPlane } from '../../../../test/helpers/control-plane.js';
import { attacks, subscriptions } from '../../db/schema.js';
import { setOverride } from '../../plans/subscriptions.js';
import { SECURITY_RULE_TYPES, UNBILLED_REASONS } from './account-reads.js';
import { retentionDays, sweepAnalytics } from './service.js';
import { lookupClient } from './geo.js';
import { COLUMN_OF, domainIdOf, expectedTotals, lcg, pick, shipper, type Shipped } from './test-log.js';

const HOUR = 3_600_000;
/** Client addresses: documentation ones (no country) and public ones (a country each, from the GeoIP data). */
const PEERS = [
  ...Array.from({ length: 20 }, (_, i) => `203.0.113.${i}`),
  '8.8.8.8',
  '1.1.1.1',
  '9.9.9.9',
  '193.0.6.139',
  '202.12.29.205',
  '200.160.2.3',
  '196.216.2.1',
  '2001:4860:4860::8888',
  '77.88.8.8',
  '80.67.169.12',
];
const iso = (ms: number) => new Date(ms).toISOString();
const cmp = (a: string | number, b: string | number) => (a < b ? -1 : a > b ? 1 : 0);
const sum = (rows: Shipped[]) => rows.reduce((a, x) => a + x.bytes, 0);
/** Refused by a security rule of the edge: not billed. Rows without a serving path (older edges) by their rule hits. */
const refused = (x: Shipped) =>
  x.served !== undefined
    ? (UNBILLED_REASONS as readonly string[]).includes(String(x.unserved ?? ''))
    : x.status >= 400 &&
      x.rules.some(([, type, dry]) => !dry && (SECURITY_RULE_TYPES as readonly string[]).includes(type));

/** requests, bytes, visitors per key, most requests first, ties by key. */
function groups<K extends string | number>(rows: Shipped[], key: (x: Shipped) => K) {
  const m = new Map<K, { value: K; requests: number; bytes: number; ips: Set<string> }>();
  for (const x of rows) {
    const k = key(x);
    const e = m.get(k) ?? { value: k, requests: 0, bytes: 0, ips: new Set<string>() };
    e.requests++;
    e.bytes += x.bytes;
    e.ips.add(x.peer);
    m.set(k, e);
  }
  return [...m.values()]
    .sort((a, b) => b.requests - a.requests || cmp(a.value, b.value))
    .map((e) => ({ value: e.value, requests: e.requests, bytes: e.bytes, visitors: e.ips.size }));
}

test('account-wide analytics reads, the remaining per-domain reads, quota used', { timeout: 300_000 }, async (t) => {
  const cp = await startTestControlPlane(t);
  const db = cp.database.db;
  const ship = shipper(cp);

  const alice = await cp.user();
  const bob = await cp.user();
  const carol = await cp.user();
  const a1 = await cp.domain(alice.key, 'acct-alice.example.org');
  const a2 = await cp.domain(alice.key, 'acct-alice2.example.net');
  const a3 = await cp.domain(alice.key, 'acct-alice3.example.org');
  const b1 = await cp.domain(bob.key, 'acct-bob.example.org');
  const c1 = await cp.domain(carol.key, 'acct-carol.example.org');
  await cp.addMember(c1, alice.id, 'viewer');
  const idOf = (name: string) => domainIdOf(cp, name);
  const ids: Record<string, number> = {};
  for (const d of [a1, a2, a3, b1, c1]) ids[d] = await idOf(d);
  for (const d of [a1, a2, a3, b1, c1]) await setOverride(db, ids[d], 'logs_enabled', true);
  // alice's third domain has no analytics: account reads leave it out and say so.
  await setOverride(db, ids[a3], 'analytics_enabled', false);

  // Two whole hours ending an hour before the last full hour (every row is in the past), and rows either side.
  const base = Math.floor(Date.now() / HOUR) * HOUR - 3 * HOUR;
  const since = base;
  const until = base + 2 * HOUR;
  const r = lcg(2727);
  const all = [a1, a2, a3, b1, c1];
  const log: Shipped[] = [];
  for (let i = 0; i < 1500; i++) {
    const outside = i % 89 === 0;
    const d = pick(r, all);
    const x: Shipped = {
      t: outside
        ? base + (i % 2 === 0 ? -1 - Math.floor(r() * HOUR) : 2 * HOUR + Math.floor(r() * 60_000))
        : base + Math.floor(r() * 2 * HOUR),
      host: pick(r, [d, `www.${d}`]),
      path: pick(r, ['/', '/a.css', '/b.js', '/api?q=1', '/login']),
      method: pick(r, ['GET', 'GET', 'POST', 'HEAD']),
      status: pick(r, [200, 200, 200, 301, 304, 403, 404, 429, 500]),
      bytes: Math.floor(r() * 40_000),
      cache: pick(r, ['HIT', 'MISS', 'STALE', 'BYPASS', 'DYNAMIC', '']),
      rules: [],
      ms: Math.round(r() * 500) / 10,
      upstreamMs: -1,
      peer: pick(r, PEERS),
      node: pick(r, ['edge-a', 'edge-a', 'edge-b', 'edge-c']),
    };
    if (x.cache !== 'HIT' && x.cache !== 'STALE') {
      x.upstreamMs = Math.round(r() * 2000) / 10;
      x.originBytes = Math.floor(r() * 30_000);
    }
    if (r() < 0.35)
      x.rules = [[pick(r, [5, 6, 7]), pick(r, ['waf', 'rate_limit', 'header', 'cache', 'custom']), r() < 0.3]];
    if (r() < 0.2)
      x.waf = Array.from({ length: 1 + Math.floor(r() * 2) }, () => [
        5,
        pick(r, ['942100', '941100']),
        2,
        'args',
        'x',
        pick(r, ['block', 'log']),
      ]);
    if (r() < 0.5) {
      x.bot = 1 + Math.floor(r() * 99);
      x.botClass = pick(r, ['human', 'ai_crawler', 'verified_crawler']);
    }
    if (r() < 0.5) x.ua = pick(r, ['browser', 'ai_crawler', 'crawler', 'library']);
    if (r() < 0.4) x.fp = `t13d_${Math.floor(r() * 3)}`;
    // Half the rows from an edge that says where the answer came from and why the origin did not give it.
    if (r() < 0.5) {
      x.served = pick(r, ['cache', 'origin', 'edge', 'edge']);
      if (x.served === 'edge')
        x.unserved = pick(r, ['waf_block', 'rate_limited', 'challenge_issued', 'redirect', 'challenge_passed', 'drop']);
    }
    log.push(x);
  }
  // A proxy: one address, 80 requests with six client stacks, over two of alice's domains.
  for (let k = 0; k < 80; k++)
    log.push({
      ...log[k],
      t: base + 10 * 60_000 + k * 1000,
      host: k % 2 ? a1 : a2,
      peer: '192.0.2.77',
      fp: `t13d_proxy${k % 6}`,
    });
  // A burst in one second over two of alice's domains: 18 + 17 requests.
  for (let k = 0; k < 35; k++)
    log.push({ ...log[k], host: k < 18 ? a1 : `www.${a2}`, t: base + 50 * 60_000 + ((k * 29) % 1000) });
  for (const node of ['edge-a', 'edge-b', 'edge-c']) {
    const mine = log.filter((x) => x.node === node).map(({ node: _n, ...rec }) => rec);
    for (let i = 0; i < mine.length; i += 400) await ship(node, mine.slice(i, i + 400));
  }

  const domainOf = (x: Shipped) => all.find((d) => x.host === d || x.host.endsWith(`.${d}`))!;
  const inRange = (x: Shipped) => x.t >= since && x.t < until;
  const rowsOf = (names: string[]) => log.filter((x) => names.includes(domainOf(x)) && inRange(x));
  const aliceDomains = [a1, a2, c1];
  const aliceRows = rowsOf(aliceDomains);
  const range = { since: iso(since), until: iso(until) };

  const get = (key: string, path: string, params: Record<string, string | number> = {}) => {
    const qs = new URLSearchParams(Object.entries(params).map(([k, v]): [string, string] => [k, String(v)])).toString();
    return cp.call(key, 'GET', `${path}${qs ? `${path.includes('?') ? '&' : '?'}${qs}` : ''}`);
  };
  const ok = async <T>(key: string, path: string, params: Record<string, string | number> = {}) => {
    const res = await get(key, path, params);
    assert.equal(res.statusCode, 200, `${path} ${JSON.stringify(params)}: ${res.body.slice(0, 300)}`);
    return res.json<T>();
  };
  const coverage = {
    ...range,
    domains: [a1, a2, c1].sort((x, y) => ids[x] - ids[y]),
    excluded_domains: [{ domain: a3, missing: 'analytics_enabled' }],
  };
  /** Per bucket of `ms` from since: f summed over the rows. */
  const perBucket = (rows: Shipped[], ms: number, f: (x: Shipped) => number = () => 1) => {
    const out = new Array<number>(Math.ceil((until - since) / ms)).fill(0);
    for (const x of rows) out[Math.floor((x.t - since) / ms)] += f(x);
    return out;
  };

  await t.test('account summary: alice’s domains with analytics, her shared one included', async () => {
    const got = await ok<Record<string, unknown>>(alice.key, '/analytics/summary', range);
    assert.deepEqual(got, { ...coverage, ...expectedTotals(aliceRows) });
    // a filter applies to every domain
    const posts = aliceRows.filter((x) => x.method === 'POST');
    const got2 = await ok<{ requests: number }>(alice.key, '/analytics/summary', { ...range, method: 'POST' });
    assert.equal(got2.requests, posts.length);
  });

  await t.test('per-domain totals with sparkline', async () => {
    type Item = { domain: string; requests: number; bytes: number; visitors: number; sparkline: number[] };
    const got = await ok<{ interval: string; items: Item[] }>(alice.key, '/analytics/domains', {
      ...range,
      interval: '15m',
    });
    assert.equal(got.interval, '15m');
    const want = aliceDomains
      .map((d) => {
        const rows = rowsOf([d]);
        return {
          domain: d,
          requests: rows.length,
          bytes: sum(rows),
          visitors: new Set(rows.map((x) => x.peer)).size,
          sparkline: perBucket(rows, 900_000),
        };
      })
      .sort((a, b) => b.requests - a.requests || cmp(a.domain, b.domain));
    assert.deepEqual(got.items, want);
    // without interval: the shortest with at most 60 points (two hours: 5 minutes, 24 points)
    const got2 = await ok<{ interval: string; items: Item[] }>(alice.key, '/analytics/domains', range);
    assert.equal(got2.interval, '5m');
    assert.ok(got2.items.every((i) => i.sparkline.length === 24));
  });

  await t.test('peak requests per second over the account', async () => {
    const per = new Map<number, number>();
    for (const x of aliceRows) per.set(Math.floor(x.t / 1000), (per.get(Math.floor(x.t / 1000)) ?? 0) + 1);
    const [second, n] = [...per].sort((a, b) => b[1] - a[1] || a[0] - b[0])[0];
    assert.ok(n >= 35);
    const got = await ok<{ requests_per_second: number; time: string }>(alice.key, '/analytics/peak-rps', range);
    assert.deepEqual([got.requests_per_second, got.time], [n, iso(second * 1000)]);
    // no single domain reached it
    const one = await ok<{ requests_per_second: number }>(alice.key, `/domains/${a1}/analytics/peak-rps`, range);
    assert.ok(one.requests_per_second < n);
  });

  await t.test('origin bandwidth', async () => {
    type Got = {
      requests: number;
      bytes: number;
      share: number;
      cached_bytes: number;
      fetched_bytes: number;
      points: unknown[];
    };
    const got = await ok<Got>(alice.key, '/analytics/origin-bandwidth', { ...range, interval: '1h' });
    const origin = aliceRows.filter((x) => x.upstreamMs >= 0);
    const req = perBucket(origin, HOUR);
    const bytes = perBucket(origin, HOUR, (x) => x.bytes);
    assert.equal(got.requests, origin.length);
    assert.equal(got.bytes, sum(origin));
    assert.equal(got.share, sum(origin) / sum(aliceRows));
    assert.equal(got.cached_bytes, sum(aliceRows.filter((x) => x.cache === 'HIT' || x.cache === 'STALE')));
    const fetchedOf = (x: Shipped) => Number(x.originBytes ?? 0);
    const fetched = perBucket(aliceRows, HOUR, fetchedOf);
    assert.equal(
      got.fetched_bytes,
      aliceRows.reduce((a, x) => a + fetchedOf(x), 0),
    );
    assert.ok(got.fetched_bytes > 0);
    assert.deepEqual(
      got.points,
      req.map((requests, i) => ({ time: iso(since + i * HOUR), requests, bytes: bytes[i], fetched_bytes: fetched[i] })),
    );
  });

  await t.test('proxy-like clients', async () => {
    const want = (rows: Shipped[], minReq: number, minFp: number) => {
      const m = new Map<string, Shipped[]>();
      for (const x of rows) m.set(x.peer, [...(m.get(x.peer) ?? []), x]);
      return [...m]
        .map(([ip, xs]) => ({
          client_ip: ip,
          requests: xs.length,
          bytes: sum(xs),
          fingerprints: new Set(xs.map((x) => x.fp ?? '').filter((f) => f !== '')).size,
          domains: new Set(xs.map(domainOf)).size,
          bot_classes: new Set(xs.map((x) => x.botClass ?? '').filter((c) => c !== '')).size,
        }))
        .filter((c) => c.requests >= minReq && c.fingerprints >= minFp)
        .sort((a, b) => b.fingerprints - a.fingerprints || b.requests - a.requests || cmp(a.client_ip, b.client_ip));
    };
    const got = await ok<{ clients: unknown[] }>(alice.key, '/analytics/proxy-clients', range);
    const expected = want(aliceRows, 50, 3);
    assert.equal((expected[0] as { client_ip: string }).client_ip, '192.0.2.77');
    assert.deepEqual(got.clients, expected.slice(0, 10));
    const got2 = await ok<{ clients: unknown[] }>(alice.key, '/analytics/proxy-clients', {
      ...range,
      min_requests: 5,
      min_fingerprints: 2,
      limit: 100,
    });
    assert.deepEqual(got2.clients, want(aliceRows, 5, 2).slice(0, 100));
    assert.ok(got2.clients.length > 1);
  });

  await t.test('edge nodes', async () => {
    const got = await ok<{ requests: number; nodes: unknown[] }>(alice.key, '/analytics/edge-nodes', range);
    assert.equal(got.requests, aliceRows.length);
    assert.deepEqual(
      got.nodes,
      groups(aliceRows, (x) => x.node).map((g) => ({
        node: g.value,
        requests: g.requests,
        bytes: g.bytes,
        visitors: g.visitors,
        share: g.requests / aliceRows.length,
      })),
    );
  });

  await t.test('traffic by node and country', async () => {
    const country = new Map(PEERS.map((p) => [p, lookupClient(p).country]));
    const want = groups(aliceRows, (x) => JSON.stringify([x.node, country.get(x.peer) ?? '']))
      .map((g) => {
        const [node, c] = JSON.parse(g.value) as [string, string];
        return { node, country: c, requests: g.requests, bytes: g.bytes, visitors: g.visitors };
      })
      .sort((a, b) => b.requests - a.requests || cmp(a.node, b.node) || cmp(a.country, b.country));
    assert.ok(new Set(want.map((w) => w.country).filter((c) => c !== '')).size >= 2, 'several countries');
    const got = await ok<{ items: unknown[] }>(alice.key, '/analytics/node-country', { ...range, limit: 1000 });
    assert.deepEqual(got.items, want);
    const top = await ok<{ items: unknown[] }>(alice.key, '/analytics/node-country', { ...range, limit: 5 });
    assert.deepEqual(top.items, want.slice(0, 5));
    // the country filter
    const c = want.find((w) => w.country !== '')!.country;
    const only = await ok<{ items: { country: string }[] }>(alice.key, '/analytics/node-country', {
      ...range,
      country: c,
    });
    assert.ok(only.items.length > 0 && only.items.every((i) => i.country === c));
  });

  await t.test('billable traffic: refused by an enforced security rule is not billed', async () => {
    type Got = {
      requests: number;
      bytes: number;
      billable_requests: number;
      billable_bytes: number;
      points: unknown[];
    };
    const billed = aliceRows.filter((x) => !refused(x));
    assert.ok(billed.length < aliceRows.length && aliceRows.some((x) => x.status >= 400 && x.rules.some((h) => h[2])));
    // both kinds of rows are there: an edge that says why it answered, and one that does not (its rule hits decide)
    assert.ok(aliceRows.some((x) => x.served === undefined && refused(x)));
    assert.ok(aliceRows.some((x) => x.served !== undefined && refused(x)));
    assert.ok(aliceRows.some((x) => x.served !== undefined && !refused(x) && x.status >= 400 && x.rules.length > 0));
    const got = await ok<Got>(alice.key, '/analytics/billable', { ...range, interval: '1h' });
    const bytes = perBucket(aliceRows, HOUR, (x) => x.bytes);
    const bill = perBucket(billed, HOUR, (x) => x.bytes);
    assert.deepEqual(got, {
      ...coverage,
      interval: '1h',
      requests: aliceRows.length,
      bytes: sum(aliceRows),
      billable_requests: billed.length,
      billable_bytes: sum(billed),
      points: bytes.map((b, i) => ({ time: iso(since + i * HOUR), bytes: b, billable_bytes: bill[i] })),
    });
    // and per domain
    const rows = rowsOf([a2]);
    const one = await ok<Got>(alice.key, `/domains/${a2}/analytics/billable`, { ...range, interval: '1h' });
    assert.equal(one.bytes, sum(rows));
    assert.equal(one.billable_bytes, sum(rows.filter((x) => !refused(x))));
    assert.equal(one.billable_requests, rows.filter((x) => !refused(x)).length);
  });

  await t.test('quota_period_used_bytes: billable bytes of the window so far', async () => {
    // The subscription started a day ago: the window holds every row shipped for the domain (all in the past).
    const start = new Date(base - 24 * HOUR);
    await db.update(subscriptions).set({ startedAt: start }).where(eq(subscriptions.domainId, ids[a1]));
    const sub = await ok<{ quota_period_start: string; quota_period_used_bytes: number }>(
      alice.key,
      `/domains/${a1}/subscription`,
    );
    assert.equal(sub.quota_period_start, start.toISOString());
    const rows = log.filter((x) => domainOf(x) === a1 && x.t >= start.getTime());
    assert.equal(sub.quota_period_used_bytes, sum(rows.filter((x) => !refused(x))));
    assert.ok(sub.quota_period_used_bytes > 0);
    // A window starting after the rows: nothing used.
    await db
      .update(subscriptions)
      .set({ startedAt: new Date(Date.now() - 1000) })
      .where(eq(subscriptions.domainId, ids[a1]));
    const later = await ok<{ quota_period_used_bytes: number }>(alice.key, `/domains/${a1}/subscription`);
    assert.equal(later.quota_period_used_bytes, 0);
  });

  await t.test('top files and traffic by every dimension', async () => {
    const files = await ok<{ items: unknown[] }>(alice.key, '/analytics/top-files', { ...range, limit: 7 });
    assert.deepEqual(
      files.items,
      groups(aliceRows, (x) => `${x.host} ${x.path}`)
        .slice(0, 7)
        .map((g) => ({
          host: g.value.split(' ')[0],
          path: g.value.split(' ')[1],
          requests: g.requests,
          bytes: g.bytes,
          visitors: g.visitors,
        })),
    );
    const keys: Record<string, (x: Shipped) => string | number> = {
      ...COLUMN_OF,
      status_class: (x) => Math.floor(x.status / 100),
      domain_id: (x) => ids[domainOf(x)],
    };
    for (const [dimension, key] of Object.entries(keys)) {
      const got = await ok<{ dimension: string; items: unknown[] }>(alice.key, '/analytics/top', {
        ...range,
        dimension,
        limit: 100,
      });
      let want = groups(aliceRows, key).slice(0, 100) as { value: string | number }[];
      if (dimension === 'domain_id') want = want.map((w) => ({ ...w, value: all.find((d) => ids[d] === w.value)! }));
      assert.deepEqual(got.items, want, dimension);
    }
  });

  await t.test("an account never sees another's domains; a shared domain shows for its member", async () => {
    const bobRows = rowsOf([b1]);
    const s = await ok<{ requests: number; domains: string[]; excluded_domains: unknown[] }>(
      bob.key,
      '/analytics/summary',
      range,
    );
    assert.deepEqual([s.requests, s.domains, s.excluded_domains], [bobRows.length, [b1], []]);
    const top = await ok<{ items: { value: string }[] }>(bob.key, '/analytics/top', {
      ...range,
      dimension: 'host',
      limit: 100,
    });
    assert.ok(top.items.length > 0 && top.items.every((i) => i.value.endsWith(b1)));
    const doms = await ok<{ items: { domain: string }[] }>(bob.key, '/analytics/domains', range);
    assert.deepEqual(
      doms.items.map((i) => i.domain),
      [b1],
    );
    // bob's filter on alice's host finds nothing; a filter value is a value, quotes and SQL in it match nothing
    const probe = await ok<{ requests: number }>(bob.key, '/analytics/summary', { ...range, host: a1 });
    assert.equal(probe.requests, 0);
    for (const host of ["x' OR '1'='1", "') UNION ALL SELECT * FROM main.d_1 --", '\\', '%'])
      for (const read of ['summary', 'billable', 'proxy-clients?min_fingerprints=2&min_requests=1', 'edge-nodes']) {
        const got = await ok<{ requests?: number; clients?: unknown[] }>(bob.key, `/analytics/${read}`, {
          ...range,
          host,
        });
        assert.ok((got.requests ?? 0) === 0 && (got.clients ?? []).length === 0, `${read} ${host}`);
      }
    for (const read of ['waf-logs', 'attacks', 'behaviour?dimension=status', 'ai-crawlers', 'billable']) {
      const res = await cp.call(bob.key, 'GET', `/domains/${a1}/analytics/${read}`);
      assert.equal(res.statusCode, 404, `${read}: ${res.body}`);
    }
    // carol reads her domain's account totals: alice's rows are not hers
    const cs = await ok<{ requests: number; domains: string[] }>(carol.key, '/analytics/summary', range);
    assert.deepEqual([cs.requests, cs.domains], [rowsOf([c1]).length, [c1]]);
    // a read-only key reads
    const ro = await cp.key(alice.id, { readOnly: true });
    const viaRo = await ok<{ requests: number }>(ro.key, '/analytics/summary', range);
    assert.equal(viaRo.requests, aliceRows.length);
  });

  await t.test('WAF logs: every row with findings once, newest first, paged, with its findings', async () => {
    type Line = { time: string; path: string; bytes: number; client_ip: string; waf_events: unknown };
    const seen: Line[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page: { logs: Line[]; next_cursor: string | null } = await ok(
        alice.key,
        `/domains/${a1}/analytics/waf-logs`,
        {
          ...range,
          limit: 9,
          ...(cursor ? { cursor } : {}),
        },
      );
      seen.push(...page.logs);
      cursor = page.next_cursor;
      assert.ok(++pages < 100);
    } while (cursor);
    for (let i = 1; i < seen.length; i++) assert.ok(seen[i - 1].time >= seen[i].time, 'newest first');
    const key = (x: Line) => JSON.stringify([x.time, x.path, x.bytes, x.client_ip, x.waf_events]);
    const want = rowsOf([a1])
      .filter((x) => (x.waf ?? []).length > 0)
      .map((x) => key({ time: iso(x.t), path: x.path, bytes: x.bytes, client_ip: x.peer, waf_events: x.waf }));
    assert.ok(want.length > 9);
    assert.equal(pages, Math.ceil(want.length / 9));
    assert.deepEqual(seen.map(key).sort(), want.sort());
  });

  await t.test('attacks with rule hits', async () => {
    const body = { ruleType: 'rate_limit' as const, ruleBody: {}, peakRequestsPerMinute: 900 };
    const at = (m: number) => new Date(base + m * 60_000);
    const [ended] = await db
      .insert(attacks)
      .values({ ...body, domainId: ids[a1], kind: 'request_rate', startedAt: at(20), endedAt: at(45) })
      .returning();
    const [going] = await db
      .insert(attacks)
      .values({ ...body, domainId: ids[a1], kind: 'error_rate', host: `www.${a1}`, startedAt: at(100) })
      .returning();
    await db
      .insert(attacks)
      .values({ ...body, domainId: ids[a1], kind: 'request_rate', startedAt: at(-50), endedAt: at(-40) });
    await db.insert(attacks).values({ ...body, domainId: ids[b1], kind: 'request_rate', startedAt: at(30) });
    const hits = (rows: Shipped[]) => {
      const per = new Map<string, { rule_id: number; rule_type: string; hits: number; dry_run: number }>();
      for (const x of rows)
        for (const [id, type, dry] of x.rules) {
          const e = per.get(`${id} ${type}`) ?? { rule_id: id, rule_type: type, hits: 0, dry_run: 0 };
          e.hits++;
          if (dry) e.dry_run++;
          per.set(`${id} ${type}`, e);
        }
      return [...per.values()].sort(
        (a, b) => b.hits - a.hits || a.rule_id - b.rule_id || cmp(a.rule_type, b.rule_type),
      );
    };
    const during = (s: number, u: number) => log.filter((x) => domainOf(x) === a1 && x.t >= s && x.t < u);
    type Got = { attacks: { id: number; requests: number; rule_hits: unknown[]; ended_at: string | null }[] };
    const got = await ok<Got>(alice.key, `/domains/${a1}/analytics/attacks`, range);
    assert.deepEqual(
      got.attacks.map((a) => a.id),
      [going.id, ended.id],
    );
    const e = during(at(20).getTime(), at(45).getTime());
    assert.equal(got.attacks[1].requests, e.length);
    assert.deepEqual(got.attacks[1].rule_hits, hits(e).slice(0, 20));
    // the ongoing one runs to now: every later row of the domain
    const g = during(at(100).getTime(), Date.now());
    assert.equal(got.attacks[0].ended_at, null);
    assert.equal(got.attacks[0].requests, g.length);
    assert.deepEqual(got.attacks[0].rule_hits, hits(g).slice(0, 20));
    // a filter applies to the hits
    const got2 = await ok<Got>(alice.key, `/domains/${a1}/analytics/attacks`, { ...range, method: 'GET', limit: 1 });
    assert.equal(got2.attacks.length, 1);
    assert.deepEqual(got2.attacks[0].rule_hits, hits(g.filter((x) => x.method === 'GET')).slice(0, 20));
  });

  await t.test('behaviour over time', async () => {
    const rows = rowsOf([a1]);
    for (const [dimension, key] of [
      ['status_class', (x: Shipped) => Math.floor(x.status / 100)],
      ['cache_status', (x: Shipped) => x.cache],
      ['node', (x: Shipped) => x.node],
    ] as [string, (x: Shipped) => string | number][]) {
      const got = await ok<Record<string, unknown>>(alice.key, `/domains/${a1}/analytics/behaviour`, {
        ...range,
        interval: '15m',
        dimension,
        limit: 3,
      });
      const top = groups(rows, key).slice(0, 3);
      const series = top.map((g) => {
        const mine = rows.filter((x) => key(x) === g.value);
        return { value: g.value, requests: perBucket(mine, 900_000), bytes: perBucket(mine, 900_000, (x) => x.bytes) };
      });
      const rest = rows.filter((x) => !top.some((g) => g.value === key(x)));
      assert.deepEqual(
        got,
        {
          ...range,
          interval: '15m',
          dimension,
          times: Array.from({ length: 8 }, (_, i) => iso(since + i * 900_000)),
          series,
          other: { requests: perBucket(rest, 900_000), bytes: perBucket(rest, 900_000, (x) => x.bytes) },
        },
        dimension,
      );
    }
  });

  await t.test('AI crawlers', async () => {
    const rows = rowsOf([a2]);
    const ai = rows.filter((x) => x.botClass === 'ai_crawler');
    const got = await ok<Record<string, unknown>>(alice.key, `/domains/${a2}/analytics/ai-crawlers`, {
      ...range,
      interval: '1h',
    });
    const req = perBucket(ai, HOUR);
    const bytes = perBucket(ai, HOUR, (x) => x.bytes);
    assert.deepEqual(got, {
      ...range,
      interval: '1h',
      requests: ai.length,
      bytes: sum(ai),
      share: ai.length / rows.length,
      points: req.map((requests, i) => ({ time: iso(since + i * HOUR), requests, bytes: bytes[i] })),
      top_paths: groups(ai, (x) => x.path)
        .slice(0, 10)
        .map((g) => ({ path: g.value, requests: g.requests, bytes: g.bytes })),
      top_hosts: groups(ai, (x) => x.host)
        .slice(0, 10)
        .map((g) => ({ host: g.value, requests: g.requests, bytes: g.bytes })),
      by_user_agent: {
        requests: rows.filter((x) => x.ua === 'ai_crawler').length,
        bytes: sum(rows.filter((x) => x.ua === 'ai_crawler')),
      },
    });
  });

  await t.test('plan gating: per domain in account reads; none with analytics is 403', async () => {
    // logs are needed for WAF logs (raw rows), not for the others
    await setOverride(db, ids[a1], 'logs_enabled', false);
    const res = await get(alice.key, `/domains/${a1}/analytics/waf-logs`, range);
    assert.equal(res.statusCode, 403);
    assert.match(res.json().error, /logs_enabled/);
    assert.equal((await get(alice.key, `/domains/${a1}/analytics/billable`, range)).statusCode, 200);
    await setOverride(db, ids[a1], 'logs_enabled', true);
    // a1 loses analytics: the account reads leave its rows out and name it
    await setOverride(db, ids[a1], 'analytics_enabled', false);
    const got = await ok<{ requests: number; excluded_domains: unknown[] }>(alice.key, '/analytics/summary', range);
    assert.equal(got.requests, rowsOf([a2, c1]).length);
    assert.deepEqual(got.excluded_domains, [
      { domain: a1, missing: 'analytics_enabled' },
      { domain: a3, missing: 'analytics_enabled' },
    ]);
    for (const read of ['waf-logs', 'attacks', 'behaviour?dimension=status', 'ai-crawlers', 'billable']) {
      const r403 = await cp.call(alice.key, 'GET', `/domains/${a1}/analytics/${read}`);
      assert.equal(r403.statusCode, 403, read);
      assert.match(r403.json().error, /analytics_enabled/, read);
    }
    // none of bob's domains has analytics: every account read is 403 naming it
    await setOverride(db, ids[b1], 'analytics_enabled', false);
    for (const read of [
      'summary',
      'domains',
      'peak-rps',
      'origin-bandwidth',
      'proxy-clients',
      'edge-nodes',
      'node-country',
      'billable',
      'top-files',
      'top?dimension=node',
    ]) {
      const r403 = await cp.call(bob.key, 'GET', `/analytics/${read}`);
      assert.equal(r403.statusCode, 403, read);
      assert.match(r403.json().error, /analytics_enabled/, read);
    }
    // an account without domains: the free plan decides (it includes analytics): zeros
    const dave = await cp.user();
    const none = await get(dave.key, '/analytics/summary', range);
    assert.equal(none.statusCode, 200, none.body);
    assert.deepEqual([none.json().requests, none.json().domains], [0, []]);
    await setOverride(db, ids[a1], 'analytics_enabled', null);
    await setOverride(db, ids[b1], 'analytics_enabled', null);
  });

  await t.test('quota used outlives the retention: the sweep sums what it deletes, once', async () => {
    // Run last: the sweep deletes rows the other subtests read.
    const start = new Date(base - 24 * HOUR);
    await db.update(subscriptions).set({ startedAt: start }).where(eq(subscriptions.domainId, ids[a1]));
    const want = sum(log.filter((x) => domainOf(x) === a1 && x.t >= start.getTime() && !refused(x)));
    const used = async () =>
      (await ok<{ quota_period_used_bytes: number }>(alice.key, `/domains/${a1}/subscription`)).quota_period_used_bytes;
    assert.equal(await used(), want);
    const before = await cp.app.analytics.store.countRows(ids[a1]);
    // The free plan keeps 3 days: a sweep "3 days after base + 1 h" deletes a1's rows before base + 1 h (half-hour
    // cutoffs, so an hour is split between the sums and the rows).
    const keep = retentionDays('free') * 86_400_000;
    for (const cut of [base + HOUR + 30 * 60_000, base + HOUR + 30 * 60_000, base + 2 * HOUR + 30 * 60_000]) {
      await sweepAnalytics(cp.app, new Date(cut + keep));
      const left = log.filter((x) => domainOf(x) === a1 && x.t >= cut).length;
      assert.equal(await cp.app.analytics.store.countRows(ids[a1]), left, 'rows before the cutoff deleted');
      assert.equal(await used(), want, `the same bytes used after a sweep to ${iso(cut)}`);
    }
    assert.ok((await cp.app.analytics.store.countRows(ids[a1])) < before);
    // A window that starts after the summed hours: only what the store still has (nothing here).
    await db
      .update(subscriptions)
      .set({ startedAt: new Date(base + 3 * HOUR) })
      .where(eq(subscriptions.domainId, ids[a1]));
    assert.equal(await used(), 0);
  });

  await t.test('bad parameters: 400 with an error', async () => {
    const cases: [string, Record<string, string | number>][] = [
      ['/analytics/summary', { since: range.until, until: range.since }],
      ['/analytics/summary', { foo: 1 }],
      ['/analytics/domains', { since: iso(until - 30 * 86_400_000), until: range.until, interval: '1h' }],
      ['/analytics/domains', { interval: '2m' }],
      ['/analytics/top', {}],
      ['/analytics/top', { dimension: 'bytes' }],
      ['/analytics/top', { dimension: 'node', limit: 101 }],
      ['/analytics/top-files', { limit: 0 }],
      ['/analytics/proxy-clients', { min_fingerprints: 1 }],
      ['/analytics/proxy-clients', { min_requests: 0 }],
      ['/analytics/billable', { since: iso(until - 30 * 86_400_000), until: range.until, interval: '1m' }],
      [`/domains/${a1}/analytics/behaviour`, {}],
      [`/domains/${a1}/analytics/behaviour`, { dimension: 'client_ip' }],
      [`/domains/${a1}/analytics/behaviour`, { dimension: 'status', limit: 11 }],
      [`/domains/${a1}/analytics/attacks`, { limit: 51 }],
      [`/domains/${a1}/analytics/waf-logs`, { cursor: 'nope' }],
      [`/domains/${a1}/analytics/ai-crawlers`, { interval: '1w' }],
    ];
    for (const [path, params] of cases) {
      const res = await get(alice.key, path, params);
      assert.equal(
        res.statusCode,
        400,
        `${path} ${JSON.stringify(params)}: ${res.statusCode} ${res.body.slice(0, 200)}`,
      );
      assert.ok(res.json<{ error: string }>().error.length > 0);
    }
  });
});
