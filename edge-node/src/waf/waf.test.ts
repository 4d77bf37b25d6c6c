// The WAF engine on its own: the corpora (test/fixtures/waf) at paranoia 1, the decoding passes, exclusions, and
// inputs built to make a scanner quadratic (each must finish: the test's timeout, not a timing assertion).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadCorpus, runCorpus, toWafRequest } from '../testing/waf-corpus.js';
import { compileWaf } from '../rules/waf.js';
import { fold, normalise, urlDecode } from './decode.js';
import { WAF_RULES } from '@platform/shared/match';
import { evaluate, MAX_BODY_BYTES, type WafRequest } from './engine.js';

const attacks = loadCorpus('attacks');
const benign = loadCorpus('benign');

test('paranoia 1 blocks at least 95 % of the attack corpus and at most 1 % of the benign one', () => {
  const a = runCorpus(attacks, 1, true);
  const b = runCorpus(benign, 1, false);
  const missed = a.wrong.map((w) => `${w.entry.class} ${w.entry.method} ${w.entry.path}`).join('\n');
  const fps = b.wrong.map((w) => `${w.entry.note}: ${w.events.join(' | ')}`).join('\n');
  assert.ok(a.total >= 500 && b.total >= 200, 'corpora of a useful size');
  assert.ok(a.blocked / a.total >= 0.95, `attacks blocked ${a.blocked}/${a.total}; missed:\n${missed}`);
  assert.ok(b.blocked / b.total <= 0.01, `benign blocked ${b.blocked}/${b.total}:\n${fps}`);
});

test('every attack class of the corpus is covered and blocked at paranoia 1', () => {
  const classes = ['sqli', 'xss', 'lfi', 'rfi', 'rce', 'php', 'java', 'generic', 'protocol'];
  for (const c of classes) {
    const entries = attacks.filter((e) => e.class === c);
    assert.ok(entries.length >= 5, `${c}: ${entries.length} entries`);
    const r = runCorpus(entries, 1, true);
    assert.ok(r.blocked / r.total >= 0.9, `${c}: ${r.blocked}/${r.total}`);
  }
});

test('higher paranoia levels block at least what lower ones do', () => {
  let last = 0;
  for (const pl of [1, 2, 3, 4]) {
    const r = runCorpus(attacks, pl, true);
    assert.ok(r.blocked >= last, `PL${pl}`);
    last = r.blocked;
  }
});

test('decoding: URL (overlong UTF-8, %u full width), entities, escapes, repeated; folding', () => {
  assert.equal(urlDecode('%c0%ae%c0%ae%2f', false), '../');
  assert.equal(urlDecode('%uff1cscript%uff1e', false), '<script>');
  assert.equal(urlDecode('a+b%20c', true), 'a b c');
  assert.equal(urlDecode('100%', false), '100%');
  assert.equal(normalise('%2527%2520OR%25201%253D1', true).text, "' or 1=1");
  assert.equal(normalise('&#x3C;svg&#62;&lt;', false).text, '<svg><');
  assert.equal(normalise('\\u003cimg\\x20src\\u{3D}x\\076', false).text, '<img src=x>');
  assert.equal(fold('A\t\t B\r\n\r\nC\0D’'), "a b\ncd'");
});

const base: WafRequest = {
  method: 'GET',
  rawPath: '/',
  path: '/',
  query: '',
  headers: [
    ['user-agent', 'ua'],
    ['accept', '*/*'],
  ],
  body: null,
};
const score = (fields: Record<string, unknown>, req: Partial<WafRequest>) =>
  evaluate(compileWaf(fields), { ...base, ...req });

test('findings carry rule id, phase, target and truncated data', () => {
  const v = score(
    {},
    {
      method: 'POST',
      query: `q=${encodeURIComponent("' union select password from users--")}`,
      headers: [...base.headers, ['content-type', 'application/json']],
      body: Buffer.from(JSON.stringify({ user: { bio: '<script>alert(1)</script>' + 'x'.repeat(500) } })),
    },
  );
  assert.ok(v.score >= 10);
  const sqli = v.events.find((e) => e.rule === '942100');
  assert.deepEqual(sqli && { phase: sqli.phase, target: sqli.target }, { phase: 1, target: 'args:q' });
  const xss = v.events.find((e) => e.target === 'args:user.bio');
  assert.equal(xss?.phase, 2);
  assert.ok(xss!.data.length <= 64);
  for (const e of v.events) assert.ok(WAF_RULES[e.rule], e.rule);
});

test('exclusions: by rule id, by class, by id prefix, by path and by argument; excluded_rules', () => {
  const attack = { rawPath: '/search', path: '/search', query: `q=${encodeURIComponent("1' or '1'='1")}&x=1` };
  assert.ok(score({}, attack).score >= 5);
  assert.equal(score({ excluded_rules: ['sqli'] }, attack).score, 0);
  assert.equal(score({ excluded_rules: ['942'] }, attack).score, 0);
  const ids = score({}, attack).events.map((e) => e.rule);
  assert.equal(score({ excluded_rules: ids }, attack).score, 0);
  assert.equal(score({ exclusions: [{ args: ['q'] }] }, attack).score, 0);
  const upper = { ...attack, query: attack.query.replace('q=', 'Q=') };
  assert.equal(score({ exclusions: [{ args: ['Q'] }] }, upper).score, 0, 'argument names compared in lower case');
  assert.equal(score({ exclusions: [{ rule_ids: ['sqli'], paths: ['/search'], args: ['q'] }] }, attack).score, 0);
  assert.ok(score({ exclusions: [{ rule_ids: ['sqli'], paths: ['/other/*'], args: ['q'] }] }, attack).score >= 5);
  assert.ok(score({ exclusions: [{ rule_ids: ['xss'], args: ['q'] }] }, attack).score >= 5);
  assert.ok(score({ exclusions: [{ rule_ids: ['sqli'], args: ['x'] }] }, attack).score >= 5);
  // a cookie is named with its prefix
  const cookie = {
    headers: [...base.headers, ['cookie', `pref=${encodeURIComponent('<script>alert(1)</script>')}`]] as [
      string,
      string,
    ][],
  };
  assert.ok(score({}, cookie).score >= 5);
  assert.equal(score({ exclusions: [{ args: ['cookie:pref'] }] }, cookie).score, 0);
});

test('the threshold and paranoia decide', () => {
  const probe = { query: `t=${encodeURIComponent('{{7*7}}')}` };
  assert.equal(score({ paranoia_level: 1 }, probe).score, 0);
  assert.equal(score({ paranoia_level: 2 }, probe).score, 5);
  const anomaly = { query: 'a=100%' }; // a warning (3): under the default threshold, over a threshold of 3
  assert.equal(score({}, anomaly).score, 3);
  assert.ok(score({}, anomaly).score < compileWaf({}).threshold);
  assert.ok(score({ anomaly_threshold: 3 }, anomaly).score >= compileWaf({ anomaly_threshold: 3 }).threshold);
});

test('inspect_body false leaves the body unread', () => {
  const req = toWafRequest(attacks.find((e) => e.method === 'POST' && e.path === '/login' && e.class === 'sqli')!);
  assert.ok(evaluate(compileWaf({}), req).score >= 5);
  assert.equal(evaluate(compileWaf({ inspect_body: false }), req).score, 0);
});

test('inputs shaped against each scanner finish (linear scans; a quadratic one times the test out)', () => {
  const n = MAX_BODY_BYTES;
  const shapes = [
    '<a'.repeat(n / 2),
    '<a '.repeat(n / 3) + 'x',
    'on'.repeat(n / 2),
    `"${' on'.repeat(n / 3)}`,
    "'".repeat(n),
    "' or ".repeat(n / 5),
    '${'.repeat(n / 2),
    '${lower:'.repeat(n / 8),
    '../'.repeat(n / 3),
    '%'.repeat(n),
    '%c0'.repeat(n / 3),
    '&#'.repeat(n / 2),
    '\\u'.repeat(n / 2),
    'a:'.repeat(n / 2),
    'http://'.repeat(n / 7),
    ';'.repeat(n),
    '; x'.repeat(n / 3),
    '$('.repeat(n / 2),
    'exec("'.repeat(n / 6),
    'style='.repeat(n / 6),
    '<img style='.repeat(n / 11),
    'o:1'.repeat(n / 3),
    '/*'.repeat(n / 2),
    'select '.repeat(n / 7),
    'union '.repeat(n / 6),
    '(select '.repeat(n / 8),
    'alert'.repeat(n / 5),
    '{{'.repeat(n / 2),
    '\n'.repeat(n),
    '/???'.repeat(n / 4),
  ];
  const cfg = compileWaf({ paranoia_level: 4 });
  for (const s of shapes) {
    for (const body of [
      Buffer.from(`a=${encodeURIComponent(s)}`.slice(0, n)),
      Buffer.from(JSON.stringify({ a: s }).slice(0, n)),
    ])
      evaluate(cfg, {
        ...base,
        method: 'POST',
        headers: [
          ...base.headers,
          ['content-type', body[0] === 123 ? 'application/json' : 'application/x-www-form-urlencoded'],
        ],
        body,
      });
    evaluate(cfg, { ...base, query: s.slice(0, 8192), rawPath: `/${s.slice(0, 8192)}` });
  }
});
