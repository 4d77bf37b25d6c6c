// fingerprint rules: the JA4H-style format (unit), and through a running edge every action, enforce and dry run, the
// fingerprint in the request log, and abuse (huge header counts, many cookies) answered in bounded work.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { validateRule } from '@platform/shared/match';
import { proxiedRecord, rule, send, snapshot, startStubOrigin, startTestEdge } from '../testing/harness.js';
import { MAX_FINGERPRINT_COOKIES, ja4h } from './fingerprint.js';

const h12 = (s: string) => createHash('sha256').update(s).digest('hex').slice(0, 12);
const ZERO = '000000000000';

test('JA4H format', () => {
  const headers: [string, string][] = [
    ['host', 'www.example.org'],
    ['user-agent', 'Mozilla/5.0'],
    ['accept', 'text/html'],
    ['accept-language', 'en-US,en;q=0.9'],
    ['cookie', 'b=2; a=1'],
    ['referer', 'https://example.org/'],
  ];
  assert.equal(
    ja4h('GET', headers),
    `ge11cr04enus_${h12('host,user-agent,accept,accept-language')}_${h12('a,b')}_${h12('a=1,b=2')}`,
  );
  // No cookie, no referer, no language; the method's first two letters; header order matters, cookie order not.
  assert.equal(ja4h('POST', [['host', 'x']]), `po11nn010000_${h12('host')}_${ZERO}_${ZERO}`);
  assert.notEqual(
    ja4h('GET', [
      ['accept', '*/*'],
      ['host', 'x'],
    ]),
    ja4h('GET', [
      ['host', 'x'],
      ['accept', '*/*'],
    ]),
  );
  assert.equal(ja4h('GET', [['cookie', 'a=1; b=2']]), ja4h('GET', [['cookie', 'b=2;a=1']]));
  // Two Cookie headers read as one; a cookie without `=` has an empty value; empty pieces are skipped.
  assert.equal(
    ja4h('GET', [
      ['cookie', 'a=1'],
      ['cookie', 'flag; ;b=2'],
    ]).split('_')[2],
    h12('a,b,flag'),
  );
  // Language: first tag, letters and digits only, four characters padded with 0; `zh` → `zh00`, `*` → `0000`.
  assert.equal(ja4h('GET', [['accept-language', 'zh']]).slice(8, 12), 'zh00');
  assert.equal(ja4h('GET', [['accept-language', '*']]).slice(8, 12), '0000');
  assert.equal(ja4h('GET', [['accept-language', 'de-CH;q=1']]).slice(8, 12), 'dech');
  // The header count stops at 99 in part a.
  const many = Array.from({ length: 150 }, (_, i) => [`x-h${i}`, 'v'] as [string, string]);
  assert.equal(ja4h('GET', many).slice(6, 8), '99');
  // Odd methods stay two letters or digits.
  assert.equal(ja4h('M-SEARCH', []).slice(0, 2), 'ms');
  assert.equal(ja4h('X', []).slice(0, 2), 'x0');
});

test('fingerprint rule fields are validated', () => {
  const fp = 'ge11nn05enus_1a2b3c4d5e6f_000000000000_000000000000';
  const ok = validateRule('fingerprint', { fingerprints: [fp.toUpperCase(), fp], action: 'challenge' });
  assert.ok(ok.ok);
  assert.deepEqual(ok.ok && ok.value.fields, { fingerprints: [fp], action: 'challenge' });
  const problems = (body: Record<string, unknown>) => {
    const v = validateRule('fingerprint', body);
    return v.ok ? [] : v.problems.map((p) => p.path);
  };
  assert.deepEqual(problems({}), ['fingerprints']);
  assert.deepEqual(problems({ fingerprints: [] }), ['fingerprints']);
  assert.deepEqual(problems({ fingerprints: ['t13d1516h2_8daaf6152771_02713d6af862'] }), ['fingerprints[0]']);
  assert.deepEqual(problems({ fingerprints: [fp], action: 'route' }), ['action']);
  assert.deepEqual(problems({ fingerprints: [fp], ja4: [] }), ['ja4']);
  assert.deepEqual(problems({ fingerprints: Array.from({ length: 1001 }, () => fp) }), ['fingerprints']);
});

test('fingerprint rules through the edge', async (t) => {
  const origin = await startStubOrigin('main');
  t.after(() => origin.close());
  const name = 'fp.example.org';
  const host = `www.${name}`;
  const rec = proxiedRecord('www', origin.port);
  const PLACEHOLDER = 'ge11nn05enus_1a2b3c4d5e6f_000000000000_000000000000';
  // A log rule everywhere makes the edge compute the fingerprint; read it from the request log.
  const edge = await startTestEdge(t, [
    snapshot(name, { records: [rec], rules: [rule('fingerprint', { fingerprints: [PLACEHOLDER], action: 'log' })] }),
  ]);
  const port = edge.node.server.httpPort;
  const scripted = { 'user-agent': 'scripted/1.0', 'x-one': '1' };
  const browser = { 'user-agent': 'Mozilla/5.0', accept: 'text/html', 'accept-language': 'fr-FR' };
  const fpOf = async (path: string, headers: Record<string, string>) => {
    edge.node.logs.drain();
    assert.equal((await send(port, host, path, { headers })).status, 200);
    const rec = edge.node.logs.drain().find((l) => l.path === path);
    assert.ok(rec?.fp, 'the fingerprint is in the log record');
    return rec.fp;
  };
  const fp = await fpOf('/', scripted);
  assert.match(fp, /^ge11nn\d\d0000_[0-9a-f]{12}_0{12}_0{12}$/);
  assert.equal(await fpOf('/other', scripted), fp, 'same client shape, same fingerprint');
  const other = await fpOf('/', browser);
  assert.notEqual(other, fp);
  assert.equal(other.slice(8, 12), 'frfr');

  const apply = (rules: ReturnType<typeof rule>[]) => edge.apply(snapshot(name, { records: [rec], rules }));
  const lastLog = (path: string) => edge.node.logs.drain().find((l) => l.path === path)!;

  // block, enforce: 403; another fingerprint passes.
  const block = rule('fingerprint', { fingerprints: [fp], action: 'block' });
  apply([block]);
  edge.node.logs.drain();
  let r = await send(port, host, '/b', { headers: scripted });
  assert.equal(r.status, 403);
  assert.equal(r.body, 'blocked by a fingerprint rule\n');
  assert.deepEqual(lastLog('/b').rules, [[block.id, 'fingerprint', false]]);
  assert.equal((await send(port, host, '/b', { headers: browser })).status, 200);

  // block, dry run: passes, logged as a dry hit with the fingerprint.
  const dryBlock = rule('fingerprint', { fingerprints: [fp], action: 'block', action_mode: 'dry_run' });
  apply([dryBlock]);
  r = await send(port, host, '/d', { headers: scripted });
  assert.equal(r.status, 200);
  let log = lastLog('/d');
  assert.deepEqual(log.rules, [[dryBlock.id, 'fingerprint', true]]);
  assert.equal(log.fp, fp);

  // challenge: the proof-of-work page; dry run passes.
  const challenge = rule('fingerprint', { fingerprints: [fp], action: 'challenge' });
  apply([challenge]);
  r = await send(port, host, '/c', { headers: scripted });
  assert.equal(r.status, 403);
  assert.equal(r.headers['x-edge-challenge'], 'pow');
  assert.deepEqual(lastLog('/c').rules, [[challenge.id, 'fingerprint', false]]);
  assert.equal((await send(port, host, '/c', { headers: browser })).status, 200);
  const dryChallenge = rule('fingerprint', { fingerprints: [fp], action: 'challenge', action_mode: 'dry_run' });
  apply([dryChallenge]);
  assert.equal((await send(port, host, '/c2', { headers: scripted })).status, 200);
  assert.deepEqual(lastLog('/c2').rules, [[dryChallenge.id, 'fingerprint', true]]);

  // allow: a later (lower-priority) block of the same fingerprint does not act; log: recorded, passes.
  const allow = rule('fingerprint', { fingerprints: [fp], action: 'allow', priority: 1 });
  const laterBlock = rule('fingerprint', { fingerprints: [fp], action: 'block', priority: 2 });
  const logRule = rule('fingerprint', { fingerprints: [fp, other], action: 'log', priority: 0 });
  apply([allow, laterBlock, logRule]);
  assert.equal((await send(port, host, '/a', { headers: scripted })).status, 200);
  assert.deepEqual(lastLog('/a').rules, [
    [logRule.id, 'fingerprint', false],
    [allow.id, 'fingerprint', false],
  ]);
  // allow in dry run acts as nothing: the block goes on to act.
  const dryAllow = rule('fingerprint', { fingerprints: [fp], action: 'allow', priority: 1, action_mode: 'dry_run' });
  apply([dryAllow, laterBlock]);
  assert.equal((await send(port, host, '/a2', { headers: scripted })).status, 403);
  log = lastLog('/a2');
  assert.deepEqual(log.rules, [
    [dryAllow.id, 'fingerprint', true],
    [laterBlock.id, 'fingerprint', false],
  ]);

  // A path filter keeps the fingerprint from being computed where no rule looks.
  apply([rule('fingerprint', { fingerprints: [fp], path_includes: ['/only/*'] })]);
  edge.node.logs.drain();
  assert.equal((await send(port, host, '/elsewhere', { headers: scripted })).status, 200);
  assert.equal(lastLog('/elsewhere').fp, undefined);
  assert.equal((await send(port, host, '/only/x', { headers: scripted })).status, 403);

  // Abuse: many headers and a Cookie header of thousands of cookies are answered (bounded work), and the
  // cookies past MAX_FINGERPRINT_COOKIES do not change the fingerprint.
  apply([rule('fingerprint', { fingerprints: [PLACEHOLDER], action: 'log' })]);
  const manyHeaders: Record<string, string> = {};
  for (let i = 0; i < 90; i++) manyHeaders[`x-h${i}`] = 'v';
  edge.node.logs.drain();
  // uWS refuses a request over its own header limits by closing the connection (status 0 here): bounded either way.
  const sendOrClosed = (path: string, headers: Record<string, string>) =>
    send(port, host, path, { headers }).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'ECONNRESET') throw err;
      return { status: 0, headers: {}, body: '' };
    });
  r = await sendOrClosed('/many', manyHeaders);
  assert.ok(r.status === 0 || r.status === 431, `status ${r.status}: uWS takes about 50 headers`);
  const fortyFive: Record<string, string> = {};
  for (let i = 0; i < 45; i++) fortyFive[`x-h${i}`] = 'v';
  assert.equal((await send(port, host, '/many', { headers: fortyFive })).status, 200);
  assert.equal(lastLog('/many').fp!.slice(6, 8), '47', 'host, the 45, connection');
  const cookies = (n: number, tail = '') =>
    Array.from({ length: n }, (_, i) => `c${String(i).padStart(4, '0')}=v`).join('; ') + tail;
  const base = await fpOf('/cookies', { cookie: cookies(MAX_FINGERPRINT_COOKIES) });
  const more = await fpOf('/cookies', { cookie: cookies(MAX_FINGERPRINT_COOKIES, '; zz=1; zy=2') });
  assert.equal(more, base, 'cookies beyond the bound are not read');
  r = await sendOrClosed('/cookies', { cookie: cookies(700) });
  assert.ok(r.status === 200 || r.status === 0 || r.status === 431, `status ${r.status}`);
  // The edge still answers afterwards.
  assert.equal((await send(port, host, '/after', { headers: scripted })).status, 200);
});
