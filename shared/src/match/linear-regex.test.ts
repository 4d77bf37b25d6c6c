import { test } from 'node:test';
import assert from 'node:assert/strict';
import { prng } from '../testing/prng.js';
import { RegexPattern, regexProblem } from './linear-regex.js';

test('a catastrophic-backtracking regex runs in linear time on RE2', () => {
  // JavaScript's RegExp takes minutes on this input (2^32 ways to split the a's); RE2 answers at once.
  const p = new RegexPattern('^/(a+)+$');
  assert.equal(p.test(`/${'a'.repeat(32)}!`), false);
  assert.equal(p.test(`/${'a'.repeat(100_000)}!`), false);
  assert.equal(p.test(`/${'a'.repeat(32)}`), true);
});

test('regex patterns: case-insensitive hosts, groups as strings, UTF-8 input', () => {
  assert.equal(new RegexPattern('^(www|api)\\.example\\.org$', 'i').test('API.example.org'), true);
  assert.deepEqual(new RegexPattern('^/blog/([^/]+)/(x)?').captures('/blog/été/'), ['été', '']);
  assert.equal(new RegexPattern('^/blog/').captures('/other'), null);
  const p = new RegexPattern('\\.php$');
  // The encoded input is reused for the same text and replaced for another.
  assert.equal(p.test('/a.php'), true);
  assert.equal(p.test('/a.php'), true);
  assert.equal(p.test('/a.html'), false);
});

test('what a linear-time engine cannot run is refused with the reason', () => {
  for (const source of ['(a)\\1', '(?=a)b', '(?!a)b', '(?<=a)b', '(?<!a)b', '(?<n>a)\\k<n>', '((a{100}){100}){100}'])
    assert.match(regexProblem(source) ?? 'accepted', /^invalid regex for the linear-time engine/, source);
  assert.equal(regexProblem('^/api/v[0-9]+/(?<id>[^/]+)$'), undefined);
});

test('the leading path segment a regex guarantees, only when certain', () => {
  const cases: [string, string | null][] = [
    ['^/api/v[0-9]+/', '/api'],
    ['^/r12/(x|y)/', '/r12'],
    ['^/a-b_c~/$', '/a-b_c~'],
    ['^/api/', '/api'],
    ['^/api/?x', null],
    ['^/api/*', null],
    ['^/api', null],
    ['^/a.i/', null],
    ['/api/', null],
    ['^/api/x|^/other/', null],
    ['^/api/[|]x', '/api'],
    ['^/api/\\|x', '/api'],
    ['^/api/(a|b)|c', null],
    ['^/api/x)|(y', null],
    ['^/api/[[:alpha:]]', null],
    ['^/api/\\Q|\\E', null],
  ];
  for (const [source, want] of cases) {
    let p: RegexPattern;
    try {
      p = new RegexPattern(source);
    } catch {
      continue; // not a valid pattern (e.g. unbalanced): never compiled, never indexed
    }
    assert.equal(p.leadingSegment, want, source);
  }
  assert.equal(new RegexPattern('^/api/', 'i').leadingSegment, null, 'case-insensitive: /API/ matches too');
});

test('random regexes: every path a regex matches starts with the segment it was indexed under', () => {
  const rnd = prng(12);
  const tokens = ['^/a/', '^/ab/', 'a', 'b', '/', '|', '(', ')', '?', '*', '+', '[', ']', '^', '\\', '.', '$', '{2}'];
  const pathChars = ['/', 'a', 'b', 'b'];
  let keyed = 0;
  let matched = 0;
  for (let i = 0; i < 5_000; i++) {
    let source = rnd() < 0.7 ? tokens[Math.floor(rnd() * 2)] : '';
    for (let n = Math.floor(rnd() * 8); n > 0; n--) source += tokens[Math.floor(rnd() * tokens.length)];
    let p: RegexPattern;
    try {
      p = new RegexPattern(source);
    } catch {
      continue;
    }
    if (p.leadingSegment === null) continue;
    keyed++;
    for (let j = 0; j < 40; j++) {
      let path = '/';
      for (let n = Math.floor(rnd() * 8); n > 0; n--) path += pathChars[Math.floor(rnd() * pathChars.length)];
      if (!p.test(path)) continue;
      matched++;
      const end = path.indexOf('/', 1);
      assert.equal(end < 0 ? path : path.slice(0, end), p.leadingSegment, `${source} on ${path}`);
    }
  }
  assert.ok(keyed > 500 && matched > 500, `enough keyed patterns (${keyed}) and matches (${matched})`);
});
