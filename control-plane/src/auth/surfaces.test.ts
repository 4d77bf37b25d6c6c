import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isDeniedSurface, readOnlyMayCall, requestPath } from './surfaces.js';

const cases: Array<[string, string, boolean]> = [
  ['GET', '/users/me', true],
  ['GET', '/users', true],
  ['GET', '/usersx', false],
  ['POST', '/auth/login', true],
  ['GET', '/billing/plans', true],
  ['DELETE', '/admin/x', true],
  ['POST', '/wallet/topup', true],
  ['GET', '/wallet/topup', false],
  ['GET', '/wallet/', false],
  ['POST', '/subscriptions/purchase', true],
  ['POST', '/subscriptions/switch', true],
  ['POST', '/subscriptions/auto-renew', true],
  ['GET', '/subscriptions/', false],
  ['POST', '/domains/a.org/subscriptions/purchase', true],
  ['POST', '/domains/a.org/subscriptions/switch', true],
  ['POST', '/domains/a.org/subscriptions/auto-renew', true],
  ['GET', '/domains/a.org/subscription', false],
  ['POST', '/domains/a.org/records/', false],
  ['GET', '/USERS/me', true],
];
for (const [method, path, denied] of cases) {
  test(`${method} ${path} denied=${denied}`, () => assert.equal(isDeniedSurface(method, path), denied));
}

test('read-only keys: safe methods and POST /analytics/query only', () => {
  for (const m of ['GET', 'HEAD', 'OPTIONS']) assert.equal(readOnlyMayCall(m, '/domains/'), true);
  for (const m of ['POST', 'PUT', 'PATCH', 'DELETE']) assert.equal(readOnlyMayCall(m, '/domains/'), false);
  assert.equal(readOnlyMayCall('POST', '/analytics/query'), true);
  assert.equal(readOnlyMayCall('PUT', '/analytics/query'), false);
});

test('requestPath drops the query and decodes', () => {
  assert.equal(requestPath('/%75sers/me?x=1'), '/users/me');
  assert.equal(requestPath('/bad%zz'), '/bad%zz');
});

test('requestPath is the path the router routes: absolute-form targets and fragments (issue 8)', () => {
  assert.equal(requestPath('http://x/users/me'), '/users/me');
  assert.equal(requestPath('HTTPS://x:8080/%75sers/me?a=1'), '/users/me');
  assert.equal(requestPath('http://x'), '/');
  assert.equal(requestPath('http://x?a=/users/'), '/');
  assert.equal(requestPath('/users/me#x'), '/users/me');
  assert.equal(requestPath('/users#/x'), '/users');
  for (const target of ['http://x/users/me', 'http://x/billing/plans', '/users#x', '/admin?x']) {
    assert.equal(isDeniedSurface('GET', requestPath(target)), true, target);
  }
});
