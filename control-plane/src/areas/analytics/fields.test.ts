// The request-log fields added after the first set (TLS, protocol, user-agent category, serving path, unserved
// reason, origin bytes, Markdown, tripped rate-limit key, country and network): an analytics.duckdb written before
// them gets the columns on start and keeps every row; a shipped record's fields are stored bounded and typed; the
// GeoIP lookup takes any text.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { eq } from 'drizzle-orm';
import { pack } from 'msgpackr';
import { ensureNodeToken } from '@platform/shared/node-token';
import { startTestControlPlane } from '../../../../test/helpers/control-plane.js';
import { domains } from '../../db/schema.js';
import { setOverride } from '../../plans/subscriptions.js';
import { openDuckDbStore } from './duckdb-store.js';
import { lookupClient } from './geo.js';
import { shippedFields } from './ingest.js';
import { LOG_COLUMNS, type LogRow } from './store.js';
import { lcg, pick, type Rec } from './test-log.js';

/** The domain table as the first analytics store wrote it (before the later fields). */
const FIRST_COLUMNS = `time TIMESTAMPTZ NOT NULL, time_utc TIMESTAMP NOT NULL, domain_id INTEGER NOT NULL, owner_id INTEGER NOT NULL,
  node VARCHAR NOT NULL, host VARCHAR NOT NULL, path VARCHAR NOT NULL, method VARCHAR NOT NULL,
  status INTEGER NOT NULL, bytes BIGINT NOT NULL, cache_status VARCHAR NOT NULL, rule_hits JSON NOT NULL,
  waf_events JSON NOT NULL, duration_ms DOUBLE NOT NULL, upstream_ms DOUBLE NOT NULL, client_ip VARCHAR NOT NULL,
  fingerprint VARCHAR NOT NULL, bot_score INTEGER NOT NULL, bot_class VARCHAR NOT NULL`;

const LATER = [
  'tls_version',
  'http_protocol',
  'ua_category',
  'serving_path',
  'unserved_reason',
  'origin_bytes',
  'markdown',
  'rate_limit_rule',
  'rate_limit_key',
  'country',
  'asn',
  'as_org',
];

const baseRow = (domainId: number, i: number): LogRow => ({
  time: new Date(Date.UTC(2026, 10, 25, 10, 0, i)),
  domainId,
  ownerId: 1,
  node: 'n1',
  host: 'old.example.org',
  path: `/p${i}`,
  method: 'GET',
  status: 200,
  bytes: 100 + i,
  cacheStatus: 'MISS',
  ruleHits: [],
  wafEvents: [],
  durationMs: 1,
  upstreamMs: 1,
  clientIp: '192.0.2.1',
  fingerprint: '',
  botScore: 0,
  botClass: '',
});

test('an analytics.duckdb of the first columns gets the later ones on start, every row kept', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'analytics-fields-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  // The file as an older control plane left it: two domain tables of the first columns, with rows.
  const old = await DuckDBInstance.create(join(dir, 'analytics.duckdb'));
  const c = await old.connect();
  for (const id of [11, 12]) {
    await c.run(`CREATE TABLE main.d_${id} (${FIRST_COLUMNS})`);
    for (let i = 0; i < 5; i++)
      await c.run(
        `INSERT INTO main.d_${id} VALUES (TIMESTAMPTZ '2026-11-25 10:00:0${i}+00', TIMESTAMP '2026-11-25 10:00:0${i}',
          ${id}, 1, 'n1', 'old.example.org', '/p${i}', 'GET', 200, ${100 + i}, 'MISS', '[]', '[]', 1, 1, '192.0.2.1', '', 0, '')`,
      );
  }
  c.closeSync();
  old.closeSync();

  const store = openDuckDbStore({ dir, memoryLimitMb: 256, threads: 1 });
  t.after(() => store.close());
  assert.deepEqual(await store.domainIds(), [11, 12]);
  assert.equal(await store.countRows(11), 5);
  assert.equal(await store.countRows(12), 5);
  // New rows go into the altered table, with and without the later fields.
  await store.append([
    {
      ...baseRow(11, 7),
      tlsVersion: 'TLS',
      httpProtocol: 'HTTP/1.1',
      uaCategory: 'ai_crawler',
      servingPath: 'origin',
      unservedReason: '',
      originBytes: 4096,
      markdown: true,
      rateLimitRule: 9,
      rateLimitKey: 'ip=192.0.2.1',
      country: 'US',
      asn: 15169,
      asOrg: 'Google LLC',
    },
    baseRow(11, 8),
  ]);
  const res = await store.query(
    `SELECT path, ${LATER.join(', ')} FROM logs ORDER BY domain_id, path`,
    [
      { id: 11, name: 'old.example.org' },
      { id: 12, name: 'old2.example.org' },
    ],
    { timeoutMs: 10_000, maxRows: 100 },
  );
  assert.deepEqual(
    res.columns.map((x) => x.name),
    ['path', ...LATER],
  );
  const unknown = ['', '', '', '', '', 0, false, 0, '', '', 0, ''];
  assert.equal(res.rows.length, 12);
  assert.deepEqual(res.rows[0], ['/p0', ...unknown], 'an old row reads the defaults');
  assert.deepEqual(res.rows[5], [
    '/p7',
    'TLS',
    'HTTP/1.1',
    'ai_crawler',
    'origin',
    '',
    4096,
    true,
    9,
    'ip=192.0.2.1',
    'US',
    15169,
    'Google LLC',
  ]);
  assert.deepEqual(res.rows[6], ['/p8', ...unknown], 'a row without the later fields stores the defaults');
  assert.deepEqual(res.rows[11], ['/p4', ...unknown]);
  // The whole `logs` relation has the documented columns, in order.
  const all = await store.query('SELECT * FROM logs LIMIT 1', [{ id: 12, name: 'old2.example.org' }], {
    timeoutMs: 10_000,
    maxRows: 1,
  });
  assert.deepEqual(
    all.columns.map((x) => x.name),
    LOG_COLUMNS.map(([name]) => name),
  );
  await store.close();

  // Opened again: nothing to add, nothing lost.
  const again = openDuckDbStore({ dir, memoryLimitMb: 256, threads: 1 });
  t.after(() => again.close());
  assert.equal(await again.countRows(11), 7);
  assert.equal(await again.countRows(12), 5);
});

test('shipped fields: known values kept, anything else unknown, numbers bounded', () => {
  assert.deepEqual(
    shippedFields({
      tls: 'TLS',
      proto: 'HTTP/1.1',
      ua: 'mobile',
      served: 'cache',
      unserved: 'rate_limited',
      originBytes: 12,
      md: true,
      rlRule: 5,
      rlKey: 'ip=192.0.2.7',
    }),
    {
      tlsVersion: 'TLS',
      httpProtocol: 'HTTP/1.1',
      uaCategory: 'mobile',
      servingPath: 'cache',
      unservedReason: 'rate_limited',
      originBytes: 12,
      markdown: true,
      rateLimitRule: 5,
      rateLimitKey: 'ip=192.0.2.7',
    },
  );
  const bad = shippedFields({
    tls: 'SSLv3'.repeat(10_000),
    proto: { toString: () => 'HTTP/1.1' },
    ua: 'robot',
    served: ['cache'],
    unserved: "waf_block'; DROP TABLE logs",
    originBytes: 2 ** 60,
    md: 'true',
    rlRule: -3,
    rlKey: 'x',
  });
  assert.deepEqual(bad, {
    tlsVersion: '',
    httpProtocol: '',
    uaCategory: '',
    servingPath: '',
    unservedReason: '',
    originBytes: 0,
    markdown: false,
    rateLimitRule: 0,
    rateLimitKey: '',
  });
  assert.equal(shippedFields({ rlRule: 4, rlKey: 'k'.repeat(100_000) }).rateLimitKey.length, 256);
  assert.equal(shippedFields({ rlRule: 2 ** 40, rlKey: 'k' }).rateLimitRule, 0);
});

test('GeoIP lookup: addresses of both families; anything else is unknown, whatever its size', () => {
  const google = lookupClient('8.8.8.8');
  assert.equal(google.country.length, 2);
  assert.equal(google.asn, 15169);
  assert.ok(google.asOrg.length > 0);
  // An IPv4-mapped IPv6 address is its IPv4 address; IPv6 is looked up in its own tables.
  assert.deepEqual(lookupClient('::ffff:8.8.8.8'), google);
  assert.deepEqual(lookupClient('::FFFF:8.8.8.8'), google);
  assert.equal(lookupClient('2001:4860:4860::8888').asn, 15169);
  assert.equal(lookupClient('2001:4860:4860:0:0:0:0:8888').asn, 15169);
  const unknown = { country: '', asn: 0, asOrg: '' };
  for (const bad of [
    '',
    'x',
    'localhost',
    '127.0.0.1',
    '::1',
    '::',
    '10.0.0.1',
    '999.1.1.1',
    '1.2.3',
    '1.2.3.4.5',
    '01.02.03.04',
    '1.2.3.4 ',
    ' 1.2.3.4',
    '1.2.3.4/24',
    '[2001:db8::1]',
    '::ffff:999.1.1.1',
    '2001:4860:4860::8888::1',
    'g::1',
    '١.١.١.١',
    '8.8.8.8\u0000',
    '1'.repeat(1_000_000),
    ':'.repeat(100_000),
    `8.8.8.8%${'z'.repeat(100)}`,
  ])
    assert.deepEqual(lookupClient(bad), unknown, JSON.stringify(bad.slice(0, 40)));
  // Not a string at all (a record built by hand): unknown, no throw.
  assert.deepEqual(lookupClient(undefined as unknown as string), unknown);
  assert.deepEqual(lookupClient(8 as unknown as string), unknown);
  // A zone is not part of the address.
  assert.deepEqual(lookupClient('fe80::1%eth0'), lookupClient('fe80::1'));
});

interface FieldRec extends Rec {
  node: string;
  tls?: string;
  proto?: string;
  ua?: string;
  served?: string;
  unserved?: string;
  originBytes?: number;
  md?: boolean;
  rlRule?: number;
  rlKey?: string;
}

type Item = { requests: number; bytes: number } & Record<string, unknown>;

/** requests and bytes (and origin bytes) per key, most requests first, ties by key. */
function groups<K extends string | number>(rows: FieldRec[], key: (x: FieldRec) => K) {
  const m = new Map<K, { value: K; requests: number; bytes: number; originBytes: number }>();
  for (const x of rows) {
    const k = key(x);
    const e = m.get(k) ?? { value: k, requests: 0, bytes: 0, originBytes: 0 };
    e.requests++;
    e.bytes += x.bytes;
    e.originBytes += x.originBytes ?? 0;
    m.set(k, e);
  }
  return [...m.values()].sort(
    (a, b) => b.requests - a.requests || (a.value < b.value ? -1 : a.value > b.value ? 1 : 0),
  );
}

test('the reads of the later fields: numbers match the generated log', { timeout: 300_000 }, async (t) => {
  const cp = await startTestControlPlane(t);
  const db = cp.database.db;
  const token = ensureNodeToken(cp.config.dataDir, (cp.config as { nodeToken?: string }).nodeToken);
  const alice = await cp.user();
  const bob = await cp.user();
  const a1 = await cp.domain(alice.key, 'fields-alice.example.org');
  const [{ id: a1Id }] = await db.select().from(domains).where(eq(domains.name, a1));
  await setOverride(db, a1Id, 'logs_enabled', true);

  const HOUR = 3_600_000;
  const base = Math.floor(Date.now() / HOUR) * HOUR - HOUR;
  const r = lcg(4242);
  const peers = [
    '8.8.8.8',
    '1.1.1.1',
    '9.9.9.9',
    '2001:4860:4860::8888',
    '192.0.2.44',
    '81.2.69.160',
    '::ffff:1.0.0.1',
  ];
  const reasons = [
    'rate_limited',
    'waf_block',
    'challenge_issued',
    'challenge_issued',
    'challenge_passed',
    'challenge_failed',
    'origin_timeout',
    'origin_unreachable',
    'stale_on_origin_error',
    'redirect',
  ];
  const log: FieldRec[] = [];
  for (let i = 0; i < 800; i++) {
    const cache = pick(r, ['HIT', 'MISS', 'STALE', 'BYPASS', 'DYNAMIC', '']);
    const x: FieldRec = {
      t: base + Math.floor(r() * HOUR),
      host: pick(r, [a1, `www.${a1}`]),
      path: pick(r, ['/', '/docs', '/blog/post', '/a.css']),
      method: 'GET',
      status: 200,
      bytes: Math.floor(r() * 20_000),
      cache,
      rules: [],
      ms: 1,
      upstreamMs: -1,
      peer: pick(r, peers),
      node: 'edge-a',
      tls: pick(r, ['none', 'TLS', 'TLS', 'TLSv1.3']),
      proto: 'HTTP/1.1',
      ua: pick(r, ['browser', 'browser', 'mobile', 'crawler', 'ai_crawler', 'library', 'empty', 'other']),
    };
    if (cache === 'HIT' || cache === 'STALE') x.served = 'cache';
    else if (r() < 0.25) {
      x.served = 'edge';
      x.unserved = pick(r, reasons);
      x.status = 403;
      if (x.unserved === 'rate_limited' || (x.unserved === 'challenge_issued' && r() < 0.5)) {
        x.rlRule = pick(r, [31, 32]);
        x.rlKey = pick(r, ['ip=8.8.8.8', 'ip=1.1.1.1', 'path=/docs']);
      }
      if (x.unserved === 'challenge_issued' && x.rlRule === undefined)
        x.rules = r() < 0.5 ? [[0, 'under_attack', false]] : [[12, 'captcha', false]];
    } else {
      x.served = 'origin';
      x.upstreamMs = 10;
      x.originBytes = Math.floor(r() * 30_000);
      if (x.ua === 'ai_crawler' || r() < 0.05) x.md = r() < 0.7;
    }
    if (cache === 'STALE') x.unserved = 'stale_on_origin_error';
    log.push(x);
  }
  // A record of an older edge: none of the later fields.
  const {
    tls: _t,
    proto: _p,
    ua: _u,
    served: _s,
    unserved: _x,
    originBytes: _o,
    md: _m,
    rlRule: _r,
    rlKey: _k,
    ...older
  } = log[0];
  log.push({ ...older, rules: [] });
  const res = await cp.app.inject({
    method: 'POST',
    url: '/internal/request-logs',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/x-msgpack' },
    payload: pack({ node: 'edge-a', records: log.map(({ node: _n, ...rec }) => rec) }),
  });
  assert.equal(res.statusCode, 200, res.body);

  const range = { since: new Date(base).toISOString(), until: new Date(base + HOUR).toISOString() };
  const ok = async <T>(read: string, params: Record<string, string | number | boolean> = {}, key = alice.key) => {
    const qs = new URLSearchParams(
      Object.entries({ ...range, ...params }).map(([k, v]): [string, string] => [k, String(v)]),
    );
    const got = await cp.call(key, 'GET', `/domains/${a1}/analytics/${read}?${qs}`);
    assert.equal(got.statusCode, 200, `${read}: ${got.body.slice(0, 300)}`);
    return got.json<T>();
  };
  const items = (g: ReturnType<typeof groups>, field: string) =>
    g.map((e) => ({ [field]: e.value, requests: e.requests, bytes: e.bytes }));
  const country = new Map(peers.map((p) => [p, lookupClient(p)]));

  await t.test('countries and networks (looked up at ingest)', async () => {
    const got = await ok<{ requests: number; items: Item[] }>('countries');
    assert.equal(got.requests, log.length);
    assert.deepEqual(
      got.items,
      items(
        groups(log, (x) => country.get(x.peer)!.country),
        'country',
      ),
    );
    assert.ok(got.items.some((i) => i.country === 'US'));
    const nets = await ok<{ requests: number; items: Item[] }>('networks', { limit: 3 });
    assert.equal(nets.requests, log.length);
    assert.deepEqual(
      nets.items,
      groups(log, (x) => country.get(x.peer)!.asn)
        .slice(0, 3)
        .map((e) => ({
          asn: e.value,
          organisation: [...country.values()].find((c) => c.asn === e.value)!.asOrg,
          requests: e.requests,
          bytes: e.bytes,
        })),
    );
    // a filter by the looked-up fields
    const us = await ok<{ requests: number }>('requests', { country: 'US' });
    assert.equal(us.requests, log.filter((x) => country.get(x.peer)!.country === 'US').length);
    const google = await ok<{ requests: number }>('requests', { asn: 15169 });
    assert.equal(google.requests, log.filter((x) => country.get(x.peer)!.asn === 15169).length);
  });

  await t.test('protocols, TLS and user-agent categories', async () => {
    const protocols = await ok<{ items: Item[] }>('protocols');
    assert.deepEqual(
      protocols.items,
      items(
        groups(log, (x) => x.proto ?? ''),
        'http_protocol',
      ),
    );
    const tls = await ok<{ items: Item[] }>('tls');
    assert.deepEqual(
      tls.items,
      items(
        groups(log, (x) => x.tls ?? ''),
        'tls_version',
      ),
    );
    const ua = await ok<{ requests: number; items: Item[] }>('user-agents');
    assert.equal(ua.requests, log.length);
    assert.deepEqual(
      ua.items,
      items(
        groups(log, (x) => x.ua ?? ''),
        'category',
      ),
    );
    const mobile = await ok<{ requests: number }>('requests', { ua_category: 'mobile' });
    assert.equal(mobile.requests, log.filter((x) => x.ua === 'mobile').length);
  });

  await t.test('unserved reasons, Under Attack Mode results, tripped rate-limit keys', async () => {
    const got = await ok<{ requests: number; unserved: number; reasons: Item[] }>('unserved');
    const unserved = log.filter((x) => x.unserved);
    assert.equal(got.requests, log.length);
    assert.equal(got.unserved, unserved.length);
    assert.deepEqual(
      got.reasons,
      items(
        groups(unserved, (x) => x.unserved!),
        'reason',
      ),
    );

    const n = (reason: string) => log.filter((x) => x.unserved === reason).length;
    const attack = await ok<Record<string, number>>('under-attack');
    assert.deepEqual(attack, {
      ...range,
      issued: n('challenge_issued'),
      passed: n('challenge_passed'),
      failed: n('challenge_failed'),
      solve_rate: n('challenge_passed') / n('challenge_issued'),
      under_attack_issued: log.filter((x) => x.rules.some((h) => h[1] === 'under_attack')).length,
    });
    assert.ok(attack.under_attack_issued > 0 && attack.under_attack_issued < attack.issued);

    const keys = await ok<{ requests: number; keys: Item[]; rules: Item[] }>('rate-limit-keys', { limit: 2 });
    const tripped = log.filter((x) => x.rlRule);
    assert.equal(keys.requests, tripped.length);
    assert.deepEqual(
      keys.keys,
      items(
        groups(tripped, (x) => x.rlKey!),
        'key',
      ).slice(0, 2),
    );
    assert.deepEqual(
      keys.rules,
      items(
        groups(tripped, (x) => x.rlRule!),
        'rule_id',
      ),
    );
  });

  await t.test('cache: search crawlers, egress by cache status and serving path, edge-to-origin', async () => {
    const crawlers = log.filter((x) => x.ua === 'crawler');
    const got = await ok<{ requests: number; hit_ratio: number; cache_statuses: Item[] }>('crawler-cache');
    assert.equal(got.requests, crawlers.length);
    assert.deepEqual(
      got.cache_statuses,
      items(
        groups(crawlers, (x) => x.cache),
        'cache_status',
      ),
    );
    const served = crawlers.filter((x) => x.cache === 'HIT' || x.cache === 'STALE').length;
    const looked = crawlers.filter((x) => ['HIT', 'STALE', 'MISS', 'EXPIRED'].includes(x.cache)).length;
    assert.equal(got.hit_ratio, served / looked);

    const egress = await ok<{
      bytes: number;
      bytes_from_origin: number;
      cache_statuses: Item[];
      serving_paths: Item[];
    }>('egress');
    const sum = (rows: FieldRec[], f: (x: FieldRec) => number) => rows.reduce((a, x) => a + f(x), 0);
    assert.equal(
      egress.bytes,
      sum(log, (x) => x.bytes),
    );
    assert.equal(
      egress.bytes_from_origin,
      sum(log, (x) => x.originBytes ?? 0),
    );
    const withOrigin = (g: ReturnType<typeof groups>, field: string) =>
      g.map((e) => ({ [field]: e.value, requests: e.requests, bytes: e.bytes, bytes_from_origin: e.originBytes }));
    assert.deepEqual(
      egress.cache_statuses,
      withOrigin(
        groups(log, (x) => x.cache),
        'cache_status',
      ),
    );
    assert.deepEqual(
      egress.serving_paths,
      withOrigin(
        groups(log, (x) => x.served ?? ''),
        'serving_path',
      ),
    );

    const origin = await ok<{ requests: number; bytes_from_origin: number; failures: Record<string, number> }>(
      'origin',
    );
    assert.equal(origin.requests, log.filter((x) => x.upstreamMs >= 0).length);
    assert.equal(
      origin.bytes_from_origin,
      sum(log, (x) => x.originBytes ?? 0),
    );
    const n = (reason: string) => log.filter((x) => x.unserved === reason).length;
    assert.deepEqual(origin.failures, {
      unreachable: n('origin_unreachable'),
      timeout: n('origin_timeout'),
      refused: 0,
      certificate: 0,
      stale_served: n('stale_on_origin_error'),
    });
  });

  await t.test('Markdown-for-Agents preview', async () => {
    const md = log.filter((x) => x.md);
    const got = await ok<Record<string, unknown>>('markdown', { limit: 2 });
    const ai = log.filter((x) => x.ua === 'ai_crawler');
    assert.deepEqual(got, {
      ...range,
      requests: md.length,
      bytes: md.reduce((a, x) => a + x.bytes, 0),
      bytes_from_origin: md.reduce((a, x) => a + (x.originBytes ?? 0), 0),
      share_of_ai_crawlers: ai.filter((x) => x.md).length / ai.length,
      user_agents: items(
        groups(md, (x) => x.ua!),
        'category',
      ),
      paths: items(
        groups(md, (x) => x.path),
        'path',
      ).slice(0, 2),
    });
    assert.ok(md.length > 10);
    const filtered = await ok<{ requests: number }>('requests', { markdown: true });
    assert.equal(filtered.requests, md.length);
  });

  await t.test('raw logs carry the later fields', async () => {
    const page = await ok<{ logs: Record<string, unknown>[] }>('logs', { limit: 1000 });
    assert.equal(page.logs.length, log.length);
    const limited = page.logs.filter((l) => l.rate_limit_rule !== 0);
    assert.equal(limited.length, log.filter((x) => x.rlRule).length);
    for (const l of limited) assert.match(String(l.rate_limit_key), /^(ip|path)=/);
    const old = page.logs.filter((l) => l.serving_path === '');
    assert.equal(old.length, 1, 'the older record has no serving path');
    assert.equal(old[0].country, country.get(log[0].peer)!.country, 'but its country is looked up');
  });

  await t.test('bad filter values are 400; another account gets 404; no analytics in the plan is 403', async () => {
    for (const [read, params] of [
      ['requests', { asn: -1 }],
      ['requests', { asn: 2 ** 33 }],
      ['countries', { markdown: 'maybe' }],
      ['tls', { country: 'USA' }],
      ['networks', { limit: 0 }],
      ['rate-limit-keys', { limit: 101 }],
      ['markdown', { ua_category: 'x'.repeat(17) }],
    ] as const) {
      const qs = new URLSearchParams(Object.entries(params).map(([k, v]): [string, string] => [k, String(v)]));
      const got = await cp.call(alice.key, 'GET', `/domains/${a1}/analytics/${read}?${qs}`);
      assert.equal(got.statusCode, 400, `${read} ${qs}: ${got.body}`);
    }
    for (const read of NEW_READS) {
      const got = await cp.call(bob.key, 'GET', `/domains/${a1}/analytics/${read}`);
      assert.equal(got.statusCode, 404, read);
    }
    await setOverride(db, a1Id, 'analytics_enabled', false);
    for (const read of NEW_READS) {
      const got = await cp.call(alice.key, 'GET', `/domains/${a1}/analytics/${read}`);
      assert.equal(got.statusCode, 403, read);
      assert.match(got.json<{ error: string }>().error, /analytics_enabled/, read);
    }
    await setOverride(db, a1Id, 'analytics_enabled', null);
  });
});

const NEW_READS = [
  'countries',
  'networks',
  'protocols',
  'tls',
  'user-agents',
  'unserved',
  'crawler-cache',
  'egress',
  'under-attack',
  'rate-limit-keys',
  'markdown',
];
