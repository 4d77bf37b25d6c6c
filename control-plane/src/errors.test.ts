// The error-code registry: README "Errors" lists exactly it, every code src uses is in it, and the API answers each
// error with its code's status and the code itself (X-Error-Code), precise codes kept through the services.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { ensureNodeToken } from '@platform/shared/node-token';
import { startTestControlPlane } from '../../test/helpers/control-plane.js';
import { ApiError, ERRORS, type ApiErrorCode } from './errors.js';

const CONTROL_PLANE = new URL('..', import.meta.url).pathname;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(path);
    return e.name.endsWith('.ts') && !e.name.endsWith('.test.ts') ? [path] : [];
  });
}

test('README "Errors" lists the registry exactly: code, status, meaning', () => {
  const readme = readFileSync(join(CONTROL_PLANE, 'README.md'), 'utf8');
  const section = readme.slice(
    readme.indexOf('\n## Errors\n'),
    readme.indexOf('\n## ', readme.indexOf('\n## Errors\n') + 1),
  );
  const rows = section
    .split('\n')
    .filter((line) => line.startsWith('| ') && !line.startsWith('| code ') && !line.startsWith('|---'))
    .map((line) => line.split(' | ').map((cell) => cell.replace(/^\| /, '').trim()));
  const documented = rows.map(([code, status, meaning]) => [code, Number(status), meaning]);
  const registry = Object.entries(ERRORS).map(([code, e]) => [code, e.status, e.meaning]);
  assert.deepEqual(documented, registry);
});

test('every error code used in src is in the registry', () => {
  const used = new Map<string, string>();
  for (const file of sourceFiles(join(CONTROL_PLANE, 'src'))) {
    const text = readFileSync(file, 'utf8');
    const patterns = [/\bnew (?:ApiError|RecordError)\(\s*'([^']+)'/g, /['"`](CP_ERR_[A-Z0-9_]+)['"`]/g];
    for (const pattern of patterns) for (const m of text.matchAll(pattern)) used.set(m[1], file);
  }
  assert.ok(used.size > 15, 'the scan finds the codes');
  for (const [code, file] of used) assert.ok(Object.hasOwn(ERRORS, code), `${code} (${file}) is not in ERRORS`);
});

test('an ApiError takes its status from its code', () => {
  for (const code of Object.keys(ERRORS) as ApiErrorCode[]) {
    assert.equal(new ApiError(code, 'x').statusCode, ERRORS[code].status);
  }
});

test('the API answers with the status of the code and names the code (precise codes kept through services)', async (t) => {
  const cp = await startTestControlPlane(t);
  const owner = await cp.user();
  const viewer = await cp.user();
  const domain = await cp.domain(owner.key, 'codes.example.org');
  await cp.addMember(domain, viewer.id, 'viewer');
  const records = `/domains/${domain}/records/`;
  const www = { name: 'www', type: 'A', destination: '192.0.2.1' };
  assert.equal((await cp.call(owner.key, 'POST', records, www)).statusCode, 200);
  const cases: [string, () => ReturnType<typeof cp.call>, ApiErrorCode][] = [
    ['duplicate record', () => cp.call(owner.key, 'POST', records, www), 'CP_ERR_RECORD_DUPLICATE'],
    [
      'CNAME beside an A',
      () => cp.call(owner.key, 'POST', records, { name: 'www', type: 'CNAME', destination: 'x.example.net' }),
      'CP_ERR_RECORD_CONFLICT',
    ],
    [
      'bad destination',
      () => cp.call(owner.key, 'POST', records, { ...www, destination: 'not-an-ip' }),
      'CP_ERR_RECORD_INVALID',
    ],
    ['schema', () => cp.call(owner.key, 'PUT', `/domains/${domain}`, { cache_l2_ttl_days: 9 }), 'CP_ERR_INVALID_INPUT'],
    ['malformed JSON', () => cp.call(owner.key, 'POST', records, '{'), 'CP_ERR_INVALID_INPUT'],
    [
      'media type',
      () => cp.call(owner.key, 'PUT', `/domains/${domain}`, 'x', { 'content-type': 'text/csv' }),
      'CP_ERR_UNSUPPORTED_MEDIA_TYPE',
    ],
    ['no key', () => cp.call(null, 'GET', '/domains/'), 'CP_ERR_INVALID_API_KEY'],
    ['denied surface', () => cp.call(owner.key, 'GET', '/users/me'), 'CP_ERR_DENIED_SURFACE'],
    ['role', () => cp.call(viewer.key, 'POST', records, www), 'CP_ERR_ROLE'],
    ['plan', () => cp.call(owner.key, 'PUT', `/domains/${domain}`, { cache_cap_mb: 1000 }), 'CP_ERR_PLAN_LIMIT'],
    ['unknown domain', () => cp.call(owner.key, 'GET', '/domains/nope.example.org'), 'CP_ERR_NOT_FOUND'],
    ['unknown route', () => cp.call(owner.key, 'GET', '/nothing'), 'CP_ERR_ROUTE_NOT_FOUND'],
    ['other method', () => cp.call(owner.key, 'PATCH', '/domains/'), 'CP_ERR_METHOD_NOT_ALLOWED'],
    ['domain exists', () => cp.call(owner.key, 'POST', '/domains/', { name: domain }), 'CP_ERR_DOMAIN_EXISTS'],
    ['wrong state', () => cp.call(owner.key, 'POST', `/domains/${domain}/enable`), 'CP_ERR_WRONG_STATE'],
    ['workflows off', () => cp.call(owner.key, 'POST', `/domains/${domain}/check-ns`), 'CP_ERR_UNAVAILABLE'],
  ];
  for (const [what, send, code] of cases) {
    const res = await send();
    assert.deepEqual([res.statusCode, res.headers['x-error-code']], [ERRORS[code].status, code], what);
    assert.equal(typeof res.json().error, 'string', what);
  }
  const token = ensureNodeToken(cp.config.dataDir);
  await cp.call(
    null,
    'POST',
    `/internal/domains/${domain}/state`,
    { state: 'disabled' },
    { authorization: `Bearer ${token}` },
  );
  const frozen = await cp.call(owner.key, 'POST', records, { ...www, name: 'api' });
  assert.deepEqual([frozen.statusCode, frozen.headers['x-error-code']], [409, 'CP_ERR_DOMAIN_DISABLED']);
});
