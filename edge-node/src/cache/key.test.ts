// The cache key's parts: Accept-Encoding classes, Vary names, variants, bounded and linear on hostile input.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parsePeerAddress } from '@platform/shared/match';
import { prng } from '@platform/shared/testing/prng';
import { RequestContext } from '../context.js';
import {
  VARIANT_MAX_LENGTH,
  VARY_MAX_NAMES,
  baseKey,
  codingFits,
  encodingClass,
  hostOffset,
  upstreamValue,
  variantSuffix,
  varyNames,
} from './key.js';

const ctx = (headers: [string, string][], scheme: 'http' | 'https' = 'http') =>
  new RequestContext({
    method: 'GET',
    host: 'www.example.org',
    path: '/a',
    query: '',
    headers,
    peer: parsePeerAddress('192.0.2.7'),
    scheme,
    startedAt: 0,
  });

test('Accept-Encoding classes', () => {
  const cases: [string | undefined, string][] = [
    [undefined, 'identity'],
    ['', 'identity'],
    ['gzip, deflate, br, zstd', 'br'],
    ['br;q=1.0, gzip;q=0.8, *;q=0.1', 'br'],
    ['GZip , Br', 'br'],
    ['*', 'br'],
    ['*;q=0', 'identity'],
    ['gzip', 'gzip'],
    ['x-gzip', 'gzip'],
    ['gzip, br;q=0', 'gzip'],
    ['gzip, br; q=0.000', 'gzip'],
    ['gzip, br;q=0.001', 'br'],
    ['br, gzip;q=0', 'identity'],
    ['br', 'identity'],
    ['deflate, compress', 'identity'],
    ['identity;q=1, *;q=0', 'identity'],
    ['gzip;foo=bar;q=0', 'identity'],
    [',,, ;;; =', 'identity'],
    ['brotli, gzipped', 'identity'],
  ];
  for (const [v, cls] of cases) assert.equal(encodingClass(v), cls, JSON.stringify(v));
});

test('an Accept-Encoding of 100 KB is classed in one pass', () => {
  assert.equal(encodingClass('gzip;q=0;'.repeat(10_000) + ', br, gzip'), 'br');
  assert.equal(encodingClass(';'.repeat(100_000)), 'identity');
  assert.equal(encodingClass('q='.repeat(50_000)), 'identity');
});

test('Vary names: sorted, unique, lower case; Content-Encoding adds Accept-Encoding; refusals', () => {
  assert.deepEqual(varyNames(undefined, false), []);
  assert.deepEqual(varyNames(undefined, true), ['accept-encoding']);
  assert.deepEqual(varyNames('Accept-Encoding', true), ['accept-encoding']);
  assert.deepEqual(varyNames(['User-Agent, accept-language', 'Accept-Language'], true), [
    'accept-encoding',
    'accept-language',
    'user-agent',
  ]);
  assert.deepEqual(varyNames(' , ', false), []);
  for (const v of ['*', 'Accept-Encoding, *', 'Cookie', 'authorization', 'Proxy-Authorization', 'x'.repeat(65)])
    assert.equal(varyNames(v, false), null, v);
  const many = Array.from({ length: VARY_MAX_NAMES + 1 }, (_, i) => `x-h${i}`).join(', ');
  assert.equal(varyNames(many, false), null);
});

test('variants use what the origin is sent; too long is no variant', () => {
  const c = ctx([
    ['accept-encoding', 'gzip'],
    ['accept-language', ' fr '],
    ['x-a', '1'],
    ['x-a', '2'],
  ]);
  const ops = [
    { op: 'add' as const, name: 'x-a', value: '3' },
    { op: 'set' as const, name: 'x-b', value: 'rule' },
  ];
  assert.equal(
    variantSuffix(['accept-encoding', 'accept-language', 'x-a', 'x-b', 'x-c'], c, ops),
    '\naccept-encoding=gzip\naccept-language=fr\nx-a=1, 2, 3\nx-b=rule\nx-c=',
  );
  assert.equal(upstreamValue(c, [{ op: 'remove', name: 'x-a', value: '' }], 'x-a'), undefined);
  assert.equal(upstreamValue(c, [], 'x-forwarded-for'), '192.0.2.7', 'the edge sets it from the peer');
  assert.equal(variantSuffix(varyNames('Accept-Encoding', false)!, c, []), '\naccept-encoding=gzip');
  const long = ctx([['x-long', 'y'.repeat(VARIANT_MAX_LENGTH)]]);
  assert.equal(variantSuffix(['x-long'], long, []), undefined);
});

test('base keys: scheme first, purges match after it', () => {
  const http = baseKey('http', 'www.example.org', '/a', 'q=1');
  const https = baseKey('https', 'www.example.org', '/a', 'q=1');
  assert.equal(http, 'http://www.example.org/a?q=1');
  assert.equal(https, 'https://www.example.org/a?q=1');
  assert.ok(http.startsWith('www.example.org/a', hostOffset(http)));
  assert.ok(https.startsWith('www.example.org/a', hostOffset(https)));
});

test('base keys from the memo of recent keys: the same as concatenated, whatever comes in which order', () => {
  // Few paths (the memo's slots are shared: 1,024 of them, 3,000 paths) under two hosts, both schemes, query parts
  // that differ, and paths longer than the memo keeps; each string a new copy, as uWS gives them.
  const random = prng(12);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
  const copy = (v: string) => v.split('').join('');
  const paths = Array.from({ length: 3000 }, (_, i) => `/p/${i}`).concat([`/${'l'.repeat(600)}`, '/', '/a']);
  for (let i = 0; i < 30_000; i++) {
    const scheme = pick(['http', 'https'] as const);
    const host = copy(pick(['www.example.org', 'example.org']));
    const path = copy(i % 3 === 0 ? pick(paths.slice(0, 20)) : pick(paths));
    const query = copy(pick(['', '', 'q=1', 'q=2', `x=${'y'.repeat(600)}`]));
    assert.equal(baseKey(scheme, host, path, query), `${scheme}://${host}${path}?${query}`);
  }
});

test('a stored coding must fit the whole Accept-Encoding class', () => {
  assert.ok(codingFits(undefined, 'identity'));
  assert.ok(codingFits('gzip', 'gzip'));
  assert.ok(codingFits('gzip', 'br'));
  assert.ok(codingFits('br', 'br'));
  assert.ok(!codingFits('br', 'gzip'));
  assert.ok(!codingFits('gzip', 'identity'));
  assert.ok(!codingFits('zstd', 'br'));
  assert.ok(!codingFits('gzip, br', 'br'));
});
