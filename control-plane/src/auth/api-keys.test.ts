import { test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKey, hashKey, KEY_LENGTH, KEY_PATTERN } from './api-keys.js';

test('keys are svc_ + 65 base62 characters, 69 in all, each one different', () => {
  const keys = Array.from({ length: 2000 }, generateKey);
  assert.equal(KEY_LENGTH, 69);
  for (const k of keys) {
    assert.equal(k.length, 69);
    assert.match(k, KEY_PATTERN);
  }
  assert.equal(new Set(keys).size, keys.length);
});

test('every character of the alphabet appears with roughly equal frequency (no modulo bias)', () => {
  const counts = new Map<string, number>();
  for (let i = 0; i < 2000; i++) for (const c of generateKey().slice(4)) counts.set(c, (counts.get(c) ?? 0) + 1);
  assert.equal(counts.size, 62);
  const expected = (2000 * 65) / 62;
  for (const [c, n] of counts) assert.ok(Math.abs(n - expected) < expected * 0.15, `${c}: ${n} vs ${expected}`);
});

test('hashKey is the hex sha256', () => {
  assert.match(hashKey('svc_x'), /^[0-9a-f]{64}$/);
});
