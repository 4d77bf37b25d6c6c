import { test } from 'node:test';
import assert from 'node:assert/strict';
import { prng } from '../testing/prng.js';
import { WildcardPattern } from './wildcard.js';

/** The regex the wildcard used to compile to: the reference for what matches and what each `*` captures. */
function reference(pattern: string, minRun: 0 | 1): RegExp {
  const escaped = pattern.split('*').map((s) => s.replace(/[.+?^${}()|[\]\\]/g, '\\$&'));
  return new RegExp(`^${escaped.join(minRun === 0 ? '([^]*)' : '([^]+)')}$`);
}

test('wildcards decide and capture like the greedy regex they replace (random patterns and inputs)', () => {
  const rnd = prng(10);
  const pick = (alphabet: string, max: number) => {
    let s = '';
    for (let n = Math.floor(rnd() * max); n > 0; n--) s += alphabet[Math.floor(rnd() * alphabet.length)];
    return s;
  };
  let matched = 0;
  for (let i = 0; i < 20_000; i++) {
    const pattern = pick('ab/.*', 8);
    const text = pick('ab/.', 12);
    const minRun = rnd() < 0.5 ? 0 : 1;
    const w = new WildcardPattern(pattern, minRun);
    const m = reference(pattern, minRun).exec(text);
    const what = `${JSON.stringify(pattern)} min ${minRun} on ${JSON.stringify(text)}`;
    assert.equal(w.test(text), m !== null, what);
    assert.deepEqual(w.captures(text), m === null ? null : m.slice(1), what);
    if (m) matched++;
  }
  assert.ok(matched > 1_000, `enough matching cases (${matched})`);
});

test('a wildcard built to make a regex backtrack is answered at once', () => {
  const w = new WildcardPattern('/*a*a*a*a*a*a*a*a*a*a*a*a*b');
  assert.equal(w.test(`/${'a'.repeat(50_000)}`), false);
  assert.deepEqual(new WildcardPattern('/blog/*/*').captures('/blog/2024/x/y'), ['2024/x', 'y']);
});
