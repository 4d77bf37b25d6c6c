// How ACME failures are described and when a rate-limited one may be retried.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { challengeName, describeAcmeError, retryAfterOf } from './acme.js';

test("retryAfterOf reads a CA's retry time; anything else has none", () => {
  const le =
    'the certificate issuer refused: too many certificates (5) already issued for this exact set of identifiers in ' +
    'the last 168h0m0s, retry after 2025-01-02 03:04:05 UTC: see https://letsencrypt.org/docs/rate-limits/';
  assert.equal(retryAfterOf(le), Date.parse('2025-01-02T03:04:05Z'));
  assert.equal(retryAfterOf('retry after 2025-01-02T03:04:05Z'), Date.parse('2025-01-02T03:04:05Z'));
  assert.equal(retryAfterOf('No TXT records found for DNS challenge'), undefined);
  assert.equal(retryAfterOf('retry after soon'), undefined);
  assert.equal(retryAfterOf('retry after 2025-13-45 99:99:99 UTC'), undefined);
  // Linear in a long hostile detail.
  assert.equal(retryAfterOf('retry after '.repeat(10_000)), undefined);
});

test('describeAcmeError: unreachable or 5xx is "issuer unavailable", a problem document its detail', () => {
  const url = 'https://ca.test/dir';
  assert.equal(
    describeAcmeError(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' }), url),
    'certificate issuer unavailable at https://ca.test/dir: ECONNREFUSED (connect ECONNREFUSED 127.0.0.1:1)',
  );
  assert.match(describeAcmeError({ response: { status: 503 } }, url), /^certificate issuer unavailable .*HTTP 503/);
  assert.equal(
    describeAcmeError(new Error('Error creating new order :: identifier\nis blocked'), url),
    'the certificate issuer refused: Error creating new order :: identifier is blocked',
  );
  assert.equal(challengeName('*.example.org'), '_acme-challenge.example.org');
  assert.equal(challengeName('www.example.org'), '_acme-challenge.www.example.org');
});
