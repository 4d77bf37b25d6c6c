// nsec3Label (our SHA-1, no allocation) against node:crypto's SHA-1 of the same wire form, for names of every length.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { prng } from '@platform/shared/testing/prng';
import { nameWire } from './keys.js';
import { base32hex, nsec3Hash } from './nsec3.js';
import { nsec3Label } from './hash-label.js';

test('nsec3Label is base32hex(SHA-1(wire name)) for names of every length', () => {
  const rand = prng(7);
  const names = ['', 'org', 'example.org', '*.example.org', 'a.b.c.d.e.f.g.example.org'];
  // Wire lengths 2..255 cross every padding boundary of SHA-1's 64-byte blocks (55/56 and 119/120 bytes above all).
  for (let len = 1; len <= 253; len++) {
    const labels: string[] = [];
    let left = len;
    while (left > 0) {
      const l = Math.min(left, 1 + Math.floor(rand() * 63));
      labels.push(
        Array.from({ length: l }, () => 'abcdefghijklmnopqrstuvwxyz0123456789-_'[Math.floor(rand() * 38)]).join(''),
      );
      left -= l + 1;
    }
    names.push(labels.join('.'));
  }
  for (const name of names) assert.equal(nsec3Label(name), base32hex(nsec3Hash(name)), name);
  // The wire length really crosses the block boundaries.
  const lengths = new Set(names.map((n) => nameWire(n).length));
  for (const l of [55, 56, 64, 119, 120, 128]) assert.ok(lengths.has(l), `a name of ${l} wire bytes`);
});

test('a dot inside a label (\\x00 in the query key) is hashed as the byte 0x2e inside that label', () => {
  const wire = Buffer.from([3, 0x61, 0x2e, 0x62, 7, ...Buffer.from('example'), 3, ...Buffer.from('org'), 0]);
  assert.equal(nsec3Label('a\x00b.example.org'), base32hex(createHash('sha1').update(wire).digest()));
});
