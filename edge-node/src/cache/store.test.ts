// The store's variants: a marker under the base key links its variants; purges, caps and expiry drop them cleanly.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EdgeCache, type CacheEntry } from './store.js';

const entry = (body: string, now = 0): CacheEntry => ({
  status: 200,
  headers: [],
  body: Buffer.from(body),
  storedAt: now,
  freshUntil: now + 60_000,
  expiresAt: now + 120_000,
  shared: false,
});
const AE = ['accept-encoding'];
const BASE = 'https://www.example.org/a?';

test('variants are found through their marker and dropped with purges, caps and expiry', () => {
  const cache = new EdgeCache();
  const cap = 1 << 20;
  cache.setVariant('example.org', 0, BASE, AE, '\naccept-encoding=br', entry('br'), cap);
  cache.setVariant('example.org', 0, BASE, AE, '\naccept-encoding=gzip', entry('gz'), cap);
  const marker = cache.get('example.org', 0, BASE, 0)!;
  assert.deepEqual(marker.vary, AE);
  assert.equal(cache.getVariant('example.org', 0, marker, '\naccept-encoding=br', 0)?.body.toString(), 'br');
  assert.equal(cache.getVariant('example.org', 0, marker, '\naccept-encoding=gzip', 0)?.body.toString(), 'gz');
  assert.equal(cache.getVariant('example.org', 0, marker, '\naccept-encoding=identity', 0), undefined);
  assert.equal(cache.stats('example.org').entries, 3, 'one marker, two variants');

  // Replacing a variant keeps one entry for it.
  cache.setVariant('example.org', 0, BASE, AE, '\naccept-encoding=br', entry('br2'), cap);
  assert.equal(cache.getVariant('example.org', 0, marker, '\naccept-encoding=br', 0)?.body.toString(), 'br2');
  assert.equal(cache.stats('example.org').entries, 3);

  // Expired: dropped on lookup, and from the marker.
  assert.equal(cache.getVariant('example.org', 0, marker, '\naccept-encoding=gzip', 200_000), undefined);
  assert.equal(marker.variants?.has('\naccept-encoding=gzip'), false);

  // A purge of the host/path drops marker and variants (any scheme).
  assert.equal(cache.applyPurges('example.org', 0, [{ id: 1, prefixes: ['www.example.org/a'] }]), 2);
  assert.equal(cache.stats('example.org').entries, 0);
  assert.equal(cache.getVariant('example.org', 0, marker, '\naccept-encoding=br', 0), undefined);
  assert.equal(cache.bytes, 0);

  // Other names replace the marker; the answer stored without Vary replaces it too.
  cache.setVariant('example.org', 0, BASE, AE, '\naccept-encoding=br', entry('br'), cap);
  cache.setVariant('example.org', 0, BASE, ['accept-language'], '\naccept-language=fr', entry('fr'), cap);
  const m2 = cache.get('example.org', 0, BASE, 0)!;
  assert.deepEqual(m2.vary, ['accept-language']);
  assert.equal(cache.getVariant('example.org', 0, m2, '\naccept-encoding=br', 0), undefined);
  cache.set('example.org', 0, BASE, entry('plain'), cap);
  assert.equal(cache.get('example.org', 0, BASE, 0)?.body.toString(), 'plain');

  // The node-wide cap evicts variants like any entry, and their marker forgets them.
  const small = new EdgeCache(2000);
  small.setVariant('example.org', 0, BASE, AE, '\naccept-encoding=br', entry('x'.repeat(900)), cap);
  small.setVariant('example.org', 0, BASE, AE, '\naccept-encoding=gzip', entry('y'.repeat(900)), cap);
  assert.ok(small.bytes <= 2000);
  const m3 = small.get('example.org', 0, BASE, 0);
  if (m3) assert.equal(small.getVariant('example.org', 0, m3, '\naccept-encoding=br', 0), undefined);
});

test('the LRU order is exact when the most recent entry is hit again and again (no move made for it)', () => {
  const sizeOne = 1 + 'https://a/x'.length + 256; // an entry of a 1-byte body (store.ts sizeOf)
  for (const nodeWide of [false, true]) {
    // Three fit; the fourth evicts the least recently used, by the domain's cap or by the node-wide one.
    const cache = new EdgeCache(nodeWide ? 3 * sizeOne : Number.POSITIVE_INFINITY);
    const cap = nodeWide ? 1 << 20 : 3 * sizeOne;
    const put = (k: string) => cache.set('a', 0, `https://a/${k}`, entry(k), cap);
    const hit = (k: string) => assert.ok(cache.get('a', 0, `https://a/${k}`, 0), k);
    put('x');
    put('y');
    put('z');
    hit('x');
    hit('x'); // last already: nothing moves
    hit('y');
    hit('y');
    hit('x');
    // Order now z, y, x: z goes first, then y.
    put('w');
    assert.equal(cache.get('a', 0, 'https://a/z', 0), undefined, `z evicted (${nodeWide ? 'node' : 'domain'} cap)`);
    hit('x');
    put('v');
    assert.equal(cache.get('a', 0, 'https://a/y', 0), undefined, 'then y');
    // Order w, x, v. The last entry removed (expired): the next hit on another entry moves it as usual.
    cache.set('a', 0, 'https://a/v', { ...entry('v'), expiresAt: 10 }, cap);
    assert.equal(cache.get('a', 0, 'https://a/v', 20), undefined);
    hit('w');
    put('t');
    put('s');
    assert.deepEqual(
      ['w', 'x', 't', 's'].map((k) => cache.get('a', 0, `https://a/${k}`, 0) !== undefined),
      [true, false, true, true],
      'x was the least recently used',
    );
  }
});
