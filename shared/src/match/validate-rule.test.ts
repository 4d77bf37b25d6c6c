import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  hashRulePasswords,
  MAX_HOST_ENTRIES,
  MAX_PATH_ENTRIES,
  MAX_RECORD_IDS,
  validateRule,
} from './validate-rule.js';
import { verifyPassword } from './password.js';

test('defaults: zone-wide, priority 100, enforce, no host filter, path [/*]', () => {
  const r = validateRule('origin_route', { address: '192.0.2.1' });
  assert.ok(r.ok);
  assert.deepEqual(r.value.common, {
    record_ids: [],
    enabled: true,
    priority: 100,
    host_pattern: '',
    host_match_type: '',
    host_includes: [],
    host_excludes: [],
    ip_includes: [],
    ip_excludes: [],
    action_mode: 'enforce',
    path_match_type: 'wildcard',
    path_includes: ['/*'],
    path_excludes: [],
  });
  assert.deepEqual(r.value.fields, { address: '192.0.2.1', scheme: 'http', port: 80, host_header: '', name: '' });
});

const hostCases: { name: string; body: Record<string, unknown>; ok: boolean; type?: string }[] = [
  {
    name: 'list without type defaults to wildcard',
    body: { host_includes: ['*.example.org'] },
    ok: true,
    type: 'wildcard',
  },
  { name: 'pattern alone defaults to wildcard', body: { host_pattern: 'www.example.org' }, ok: true, type: 'wildcard' },
  {
    name: 'empty type with a list is rejected',
    body: { host_match_type: '', host_includes: ['a.example.org'] },
    ok: false,
  },
  { name: 'non-empty type with nothing set is rejected', body: { host_match_type: 'exact' }, ok: false },
  { name: 'exact with * is rejected', body: { host_match_type: 'exact', host_includes: ['*.example.org'] }, ok: false },
  {
    name: 'bad regex is rejected at write time',
    body: { host_match_type: 'regex', host_includes: ['(unclosed'] },
    ok: false,
  },
  { name: 'unknown type is rejected', body: { host_match_type: 'glob', host_includes: ['a'] }, ok: false },
];
for (const c of hostCases) {
  test(`host_match_type: ${c.name}`, () => {
    const r = validateRule('drop', c.body);
    assert.equal(r.ok, c.ok, JSON.stringify(r));
    if (r.ok && c.type) assert.equal(r.value.common.host_match_type, c.type);
  });
}

test('record_id is folded into record_ids without duplicates', () => {
  const r = validateRule('drop', { record_id: 7, record_ids: [3, 7] });
  assert.ok(r.ok);
  assert.deepEqual(r.value.common.record_ids, [3, 7]);
});

test('every problem is collected with its path', () => {
  const r = validateRule('redirect', {
    priority: 'x',
    ip_includes: ['1.2.3.4', 'nope'],
    path_match_type: 'regex',
    path_includes: ['[bad'],
    status_code: 303,
    action_mode: 'maybe',
  });
  assert.equal(r.ok, false);
  if (r.ok) return;
  const paths = r.problems.map((p) => p.path).sort();
  assert.deepEqual(
    paths,
    ['action_mode', 'ip_includes[1]', 'path_includes[0]', 'priority', 'status_code', 'target'].sort(),
  );
});

test('ip lists are canonicalised on write', () => {
  const r = validateRule('drop', {
    ip_includes: ['10.9.9.9/8', '::ffff:192.0.2.1', '10.0.0.0/8'],
    ip_excludes: ['2001:DB8::1'],
  });
  assert.ok(r.ok);
  assert.deepEqual(r.value.common.ip_includes, ['10.0.0.0/8', '192.0.2.1']);
  assert.deepEqual(r.value.common.ip_excludes, ['2001:db8::1']);
});

test('basic_auth: validation hashes nothing; hashRulePasswords hashes off the event loop; the hash round-trips', async () => {
  const users = Array.from({ length: 1000 }, (_, i) => ({ username: `u${i}`, password: `p${i}` }));
  const r = validateRule('basic_auth', { users });
  assert.ok(r.ok);
  assert.equal(r.value.passwords.length, 1000, 'every new password waits for hashing');
  assert.ok((r.value.fields.users as object[]).every((u) => !('password_hash' in u)));

  const one = validateRule('basic_auth', { users: [{ username: 'alice', password: 's3cret' }] });
  assert.ok(one.ok);
  let ticks = 0;
  const ticking = setInterval(() => ticks++, 0);
  await hashRulePasswords(one.value);
  clearInterval(ticking);
  assert.ok(ticks > 0, 'timers ran while the password was hashed');
  assert.deepEqual(one.value.passwords, []);
  const hashed = one.value.fields.users as { username: string; password_hash: string }[];
  assert.ok(await verifyPassword('s3cret', hashed[0].password_hash));
  assert.ok(!(await verifyPassword('wrong', hashed[0].password_hash)));
  const again = validateRule('basic_auth', { users: hashed });
  assert.ok(again.ok);
  assert.deepEqual(again.value.passwords, [], 'a hash read back is kept, not hashed again');
  assert.deepEqual(again.value.fields.users, hashed);
});

test('lists are bounded before any per-entry work', () => {
  const over = (n: number, f: (i: number) => unknown) => Array.from({ length: n }, (_, i) => f(i));
  const cases: [string, unknown[], number][] = [
    ['record_ids', over(MAX_RECORD_IDS + 1, (i) => i + 1), MAX_RECORD_IDS],
    ['host_includes', over(MAX_HOST_ENTRIES + 1, () => '(a+)+$'), MAX_HOST_ENTRIES],
    ['path_excludes', over(MAX_PATH_ENTRIES + 1, () => 'no slash'), MAX_PATH_ENTRIES],
    ['ip_includes', over(300, () => 'not an ip'), 256],
  ];
  for (const [key, list, max] of cases) {
    const r = validateRule('drop', { [key]: list });
    assert.ok(!r.ok);
    assert.deepEqual(r.problems, [{ path: key, message: `at most ${max} entries` }], 'one problem, no entry checked');
  }
  const users = validateRule('basic_auth', { users: over(1001, () => ({ username: '' })) });
  assert.ok(!users.ok);
  assert.deepEqual(users.problems, [{ path: 'users', message: 'at most 1000 entries' }]);
});

test('record_ids keep their first order without duplicates (linear)', () => {
  const ids = Array.from({ length: MAX_RECORD_IDS }, (_, i) => (i % 500) + 1);
  const r = validateRule('drop', { record_ids: ids });
  assert.ok(r.ok);
  assert.deepEqual(
    r.value.common.record_ids,
    Array.from({ length: 500 }, (_, i) => i + 1),
  );
});

test('unknown fields of an engine type are rejected (every type has an engine now)', () => {
  assert.equal(validateRule('redirect', { target: '/x', colour: 'red' }).ok, false);
  assert.equal(validateRule('optimize', { sensitivity: 'high' }).ok, false);
  assert.equal(validateRule('waf', { sensitivity: 'high' }).ok, false);
  assert.equal(validateRule('fingerprint', { sensitivity: 'high' }).ok, false);
  assert.equal(validateRule('bot_route', { sensitivity: 'high' }).ok, false);
});

const typeCases: { type: Parameters<typeof validateRule>[0]; body: Record<string, unknown>; ok: boolean }[] = [
  { type: 'redirect', body: { target: 'https://example.net/$1', status_code: 308 }, ok: true },
  { type: 'redirect', body: { target: 'ftp://x' }, ok: false },
  { type: 'rewrite', body: {}, ok: false },
  { type: 'rewrite', body: { path: '/new' }, ok: true },
  { type: 'header', body: { response_headers: [{ op: 'set', name: 'X-A', value: '1' }] }, ok: true },
  { type: 'header', body: { request_headers: [{ op: 'set', name: 'bad name', value: '1' }] }, ok: false },
  { type: 'drop', body: { action: 'close' }, ok: true },
  { type: 'drop', body: { status_code: 200 }, ok: false },
  { type: 'error_page', body: { statuses: ['404', '500-599'], body: '<h1>oops</h1>' }, ok: true },
  { type: 'error_page', body: { statuses: ['599-500'], body: 'x' }, ok: false },
  { type: 'cache', body: { edge_ttl: 60, query: 'sort' }, ok: true },
  { type: 'cache', body: { action: 'maybe' }, ok: false },
  { type: 'waf', body: {}, ok: true },
  {
    type: 'waf',
    body: {
      paranoia_level: 3,
      anomaly_threshold: 10,
      excluded_rules: ['942100', '941', 'XSS'],
      exclusions: [{ rule_ids: ['sqli'], paths: ['/admin/*'], args: ['q', 'cookie:prefs'] }, { args: ['token'] }],
      inspect_body: false,
    },
    ok: true,
  },
  { type: 'waf', body: { paranoia_level: 5 }, ok: false },
  { type: 'waf', body: { anomaly_threshold: 0 }, ok: false },
  { type: 'waf', body: { excluded_rules: ['999999'] }, ok: false },
  { type: 'waf', body: { excluded_rules: ['9'] }, ok: false },
  { type: 'waf', body: { excluded_rules: Array.from({ length: 101 }, () => 'sqli') }, ok: false },
  { type: 'waf', body: { exclusions: [{}] }, ok: false },
  { type: 'waf', body: { exclusions: [{ paths: ['no-slash'] }] }, ok: false },
  { type: 'waf', body: { exclusions: [{ args: [''] }] }, ok: false },
  { type: 'waf', body: { exclusions: [{ args: ['q'], colour: 'red' }] }, ok: false },
  { type: 'waf', body: { exclusions: ['sqli'] }, ok: false },
  { type: 'waf', body: { exclusions: Array.from({ length: 51 }, () => ({ args: ['q'] })) }, ok: false },
  {
    type: 'origin_pool',
    body: {
      origins: [
        { address: '192.0.2.1', weight: 2 },
        { address: 'origin.example.net', scheme: 'https' },
      ],
    },
    ok: true,
  },
  { type: 'origin_pool', body: { origins: [] }, ok: false },
  { type: 'origin_route', body: { address: 'not a host!' }, ok: false },
  { type: 'origin_route', body: { address: '192.0.2.1', name: 'x'.repeat(65) }, ok: false },
  // Framing, hop-by-hop and (on requests) Host belong to the edge (issue 10 item 7).
  { type: 'header', body: { response_headers: [{ op: 'set', name: 'Content-Length', value: '0' }] }, ok: false },
  {
    type: 'header',
    body: { response_headers: [{ op: 'add', name: 'transfer-encoding', value: 'chunked' }] },
    ok: false,
  },
  { type: 'header', body: { response_headers: [{ op: 'set', name: 'Connection', value: 'close' }] }, ok: false },
  { type: 'header', body: { request_headers: [{ op: 'set', name: 'Host', value: 'other.example' }] }, ok: false },
  { type: 'header', body: { request_headers: [{ op: 'set', name: 'content-length', value: '5' }] }, ok: false },
  { type: 'header', body: { response_headers: [{ op: 'set', name: 'X-Frame-Options', value: 'DENY' }] }, ok: true },
];
test('a header rule on an edge-owned header names it', () => {
  const r = validateRule('header', { response_headers: [{ op: 'set', name: 'Content-Length', value: '0' }] });
  assert.equal(r.ok, false);
  assert.deepEqual(!r.ok && r.problems, [
    {
      path: 'response_headers[0].name',
      message: 'content-length is managed by the edge and cannot be changed by a rule',
    },
  ]);
});
for (const c of typeCases) {
  test(`${c.type} ${JSON.stringify(c.body)} → ${c.ok}`, () => assert.equal(validateRule(c.type, c.body).ok, c.ok));
}

test('waf fields are normalised: defaults, lower-cased ids without duplicates, argument names lower case', () => {
  const r = validateRule('waf', { excluded_rules: ['SQLI', 'sqli', '942100'], exclusions: [{ args: ['Q'] }] });
  assert.ok(r.ok);
  assert.deepEqual(r.value.fields, {
    paranoia_level: 1,
    anomaly_threshold: 5,
    inspect_body: true,
    excluded_rules: ['sqli', '942100'],
    exclusions: [{ rule_ids: [], paths: [], args: ['q'] }],
  });
  const bad = validateRule('waf', { exclusions: [{ rule_ids: ['nope'] }] });
  assert.ok(!bad.ok);
  assert.equal(bad.problems[0].path, 'exclusions[0].rule_ids[0]');
});
