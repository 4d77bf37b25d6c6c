import { test } from 'node:test';
import assert from 'node:assert/strict';
import { applyOverrides, requireFeature, requireRuleType } from './entitlements.js';

const plan = {
  max_records: 200,
  custom_ssl_enabled: false,
  logs_enabled: true,
  disabled_rule_types: ['waf', 'bot_route'],
};

test('plan features pass through; missing limits read 0 and booleans false', () => {
  const f = applyOverrides('free', plan, {});
  assert.equal(f.max_records, 200);
  assert.equal(f.max_rules_per_set, 0);
  assert.equal(f.logs_enabled, true);
  assert.equal(f.shield_enabled, false);
  assert.deepEqual(f.disabled_rule_types, ['waf', 'bot_route']);
  assert.equal(f.plan, 'free');
});

test('overrides win; disabled_rule_types override is a JSON array string; "[]" lifts every restriction', () => {
  const f = applyOverrides('free', plan, { max_records: 5000, custom_ssl_enabled: true, disabled_rule_types: '[]' });
  assert.equal(f.max_records, 5000);
  assert.equal(f.custom_ssl_enabled, true);
  assert.deepEqual(f.disabled_rule_types, []);
});

test('requireFeature and requireRuleType answer 403 naming the feature', () => {
  const f = applyOverrides('free', plan, {});
  assert.throws(() => requireFeature(f, 'custom_ssl_enabled'), {
    statusCode: 403,
    message: 'your plan (free) does not include the custom_ssl_enabled feature',
  });
  assert.doesNotThrow(() => requireFeature(f, 'logs_enabled'));
  assert.throws(() => requireRuleType(f, 'waf'), {
    statusCode: 403,
    message: 'your plan (free) does not include rules of type waf',
  });
  assert.doesNotThrow(() => requireRuleType(f, 'cache'));
});
