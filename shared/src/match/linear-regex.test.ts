import { test } from 'node:test';
import assert from 'node:assert/strict';
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
