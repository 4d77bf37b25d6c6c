// Settings read by config.ts itself (the Temporal ones are tested beside temporal-config.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadConfig } from './config.js';

test('rate limits: the per-address budget follows the per-key one unless set', () => {
  assert.equal(loadConfig({}).anonymousRateLimitPerMinute, 300);
  assert.equal(loadConfig({ RATE_LIMIT_PER_MINUTE: '50' }).anonymousRateLimitPerMinute, 50);
  const both = loadConfig({ RATE_LIMIT_PER_MINUTE: '50', RATE_LIMIT_ANONYMOUS_PER_MINUTE: '7' });
  assert.deepEqual([both.rateLimitPerMinute, both.anonymousRateLimitPerMinute], [50, 7]);
});

test('TRUST_PROXY: addresses, CIDRs and range names; anything else is refused at start with the entry named', () => {
  assert.deepEqual(loadConfig({}).trustProxy, []);
  assert.deepEqual(loadConfig({ TRUST_PROXY: ' 10.0.0.0/8, ::1 ,192.0.2.7,loopback' }).trustProxy, [
    '10.0.0.0/8',
    '::1',
    '192.0.2.7',
    'loopback',
  ]);
  for (const bad of ['localhost', '10.0.0.0/33', '10.0.0.1/8/1', 'fe80::/129', '10.0.0.0/x']) {
    assert.throws(
      () => loadConfig({ TRUST_PROXY: bad }),
      new RegExp(
        `TRUST_PROXY entries must be IP addresses, CIDRs, loopback, linklocal or uniquelocal, got "${bad.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}"`,
      ),
    );
  }
});
