import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadConfig } from '../config.js';

test('TEMPORAL_ADDRESS: unset takes the default, set but empty disables workflows', () => {
  assert.equal(loadConfig({}).temporal.address, '127.0.0.1:7233');
  assert.equal(loadConfig({ NODE_ENV: 'test' }).temporal.address, '');
  assert.equal(loadConfig({ TEMPORAL_ADDRESS: '' }).temporal.address, '');
  assert.equal(loadConfig({ TEMPORAL_ADDRESS: '10.0.0.1:7233' }).temporal.address, '10.0.0.1:7233');
});
