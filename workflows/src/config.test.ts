// The worker's configuration: the webhook retry schedule defaults to the spec's and is bounded.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadConfig } from './config.js';

const base = { NODE_TOKEN: 'tok' };

test("UPTIME_WEBHOOK_RETRY_DELAYS_MS: the spec's 5 s and 30 s unless set; two delays of 100 ms to an hour", () => {
  assert.deepEqual(loadConfig(base).webhookRetryDelaysMs, [5_000, 30_000]);
  assert.deepEqual(
    loadConfig({ ...base, UPTIME_WEBHOOK_RETRY_DELAYS_MS: '100, 3600000' }).webhookRetryDelaysMs,
    [100, 3_600_000],
  );
  for (const bad of ['99,1000', '1000,3600001', '1000', '1000,2000,3000', '1000,1.5', '1000,x'])
    assert.throws(
      () => loadConfig({ ...base, UPTIME_WEBHOOK_RETRY_DELAYS_MS: bad }),
      /UPTIME_WEBHOOK_RETRY_DELAYS_MS must be two whole milliseconds from 100 to 3600000/,
      bad,
    );
});
