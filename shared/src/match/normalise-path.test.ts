import { test } from 'node:test';
import assert from 'node:assert/strict';
import { prng } from '../testing/prng.js';
import { normalisePath } from './normalise-path.js';

test('paths that mean the same are one path', () => {
  const cases: [string, string][] = [
    ['/openapi.json', '/openapi.json'],
    ['/%6Fpenapi.json', '/openapi.json'],
    ['/%6fpenapi%2Ejson', '/openapi.json'],
    ['/./openapi.json', '/openapi.json'],
    ['//openapi.json', '/openapi.json'],
    ['/x/../openapi.json', '/openapi.json'],
    ['/x/%2E%2E/openapi.json', '/openapi.json'],
    ['/x/%2e./openapi.json', '/openapi.json'],
    ['/../../openapi.json', '/openapi.json'],
    ['/x\\..\\openapi.json', '/openapi.json'],
    ['/openapi.json#frag', '/openapi.json'],
    ['/a/b/..', '/a/'],
    ['/a/b/.', '/a/b/'],
    ['/a//b///', '/a/b/'],
    ['/', '/'],
    ['', '/'],
    ['/..', '/'],
    ['/%7Euser/%41%5a', '/~user/AZ'],
  ];
  for (const [raw, want] of cases) assert.equal(normalisePath(raw), want, raw);
});

test('reserved characters stay escaped, in upper-case hex', () => {
  assert.equal(normalisePath('/a%2fb'), '/a%2Fb', '%2F is data, not a separator');
  assert.equal(normalisePath('/caf%c3%a9'), '/caf%C3%A9');
  assert.equal(normalisePath('/100%25/x%3F'), '/100%25/x%3F');
  assert.equal(normalisePath('/a%zz/%4'), '/a%25zz/%254', 'a % that starts no escape is escaped');
  assert.equal(normalisePath('/%a%66'), '/%25af', 'decoding never makes a new escape');
  assert.equal(normalisePath('/.well-known/..x/...'), '/.well-known/..x/...', 'only whole . and .. segments go');
});

test('a path already normal is returned as the same string', () => {
  for (const p of ['/', '/index.html', '/a/b/', '/api/v1/users/42', '/caf%C3%A9', '/.well-known/acme-challenge/x'])
    assert.equal(normalisePath(p), p);
});

/** An independent spelling of the rules, for random inputs. */
function reference(raw: string): string {
  const decoded = raw
    .split('#')[0]
    .replace(/%([0-9a-fA-F]{2})|%/g, (m, hex: string | undefined) => {
      if (hex === undefined) return '%25';
      const c = String.fromCharCode(parseInt(hex, 16));
      return /[A-Za-z0-9._~-]/.test(c) ? c : m.toUpperCase();
    })
    .replaceAll('\\', '/');
  const out: string[] = [];
  const segments = decoded.split('/');
  for (const s of segments) {
    if (s === '..') out.pop();
    else if (s !== '' && s !== '.') out.push(s);
  }
  const last = segments[segments.length - 1];
  const dirLike = last === '' || last === '.' || last === '..';
  return `/${out.join('/')}${dirLike && out.length > 0 ? '/' : ''}`;
}

test('random paths: as the reference spells it, and normalising twice changes nothing', () => {
  const rnd = prng(3);
  const alphabet = ['/', '/', '.', '.', '%', '2', 'e', 'E', '6', 'f', 'F', 'a', '\\', '#', '~', '%2e', '%2F', '%6f'];
  for (let i = 0; i < 50_000; i++) {
    let raw = rnd() < 0.8 ? '/' : '';
    for (let n = Math.floor(rnd() * 12); n > 0; n--) raw += alphabet[Math.floor(rnd() * alphabet.length)];
    const once = normalisePath(raw);
    assert.equal(once, reference(raw), JSON.stringify(raw));
    assert.equal(normalisePath(once), once, JSON.stringify(raw));
  }
});
