// Tenant patterns and paths against a running edge node process (issue 10, items 2 and 3): a regex built to
// backtrack cannot stall the worker that serves every tenant, and a path-scoped rule cannot be walked past by
// spelling the path another way (the origin receives the path the rules saw).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { hashPassword } from '@platform/shared/match';
import { proxiedRecord, rule, send, snapshot, startStubOrigin } from '../../edge-node/src/testing/harness.js';
import { startEdgeNodeProcess } from './edge-harness.js';

/** Long enough for a loaded machine, far shorter than the minutes a backtracking engine spends on the attack. */
const ANSWER_WITHIN_MS = 5_000;

test('tenant patterns and paths at a running edge node', { timeout: 120_000 }, async (t) => {
  const origin = await startStubOrigin('patterns');
  t.after(() => origin.close());
  const attacker = 'redos.example.org';
  const neighbour = 'neighbour.example.org';
  const guarded = 'guarded.example.org';
  const edge = await startEdgeNodeProcess(null, { EDGE_WORKERS: '1' }, [
    {
      ...snapshot(attacker, {
        records: [proxiedRecord('www', origin.port)],
        rules: [rule('drop', { path_match_type: 'regex', path_includes: ['^/(a+)+$'] })],
      }),
      domainId: 1,
    },
    { ...snapshot(neighbour, { records: [proxiedRecord('www', origin.port)] }), domainId: 2 },
    {
      ...snapshot(guarded, {
        records: [proxiedRecord('www', origin.port)],
        rules: [
          rule('basic_auth', {
            path_includes: ['/openapi.json'],
            realm: 'API',
            users: [{ username: 'ops', password_hash: await hashPassword('s3cret') }],
          }),
        ],
      }),
      domainId: 3,
    },
  ]);
  t.after(() => edge.stop());

  await t.test("a backtracking regex answers at once, and another tenant's request in flight is answered", async () => {
    // 32 a's then a character the pattern refuses: 2^32 ways for a backtracking engine to split the a's.
    const attack = send(edge.httpPort, `www.${attacker}`, `/${'a'.repeat(32)}!`, { timeoutMs: ANSWER_WITHIN_MS });
    const other = send(edge.httpPort, `www.${neighbour}`, '/home', { timeoutMs: ANSWER_WITHIN_MS });
    const [a, b] = await Promise.all([attack, other]);
    assert.equal(a.status, 200, 'the path does not match the drop rule: proxied');
    assert.equal(b.status, 200);
    assert.equal(b.body, 'origin patterns /home');
    const dropped = await send(edge.httpPort, `www.${attacker}`, `/${'a'.repeat(32)}`, { timeoutMs: ANSWER_WITHIN_MS });
    assert.equal(dropped.status, 403, 'the rule still drops what it matches');
  });

  await t.test(
    'a path-scoped rule holds for every spelling of its path; the origin gets the path the rule saw',
    async () => {
      const get = (path: string, headers: Record<string, string> = {}) =>
        send(edge.httpPort, `www.${guarded}`, path, { headers, timeoutMs: ANSWER_WITHIN_MS });
      const seenBefore = origin.seen.length;
      for (const spelling of [
        '/openapi.json',
        '/%6Fpenapi.json',
        '/./openapi.json',
        '//openapi.json',
        '/x/../openapi.json',
      ])
        assert.equal((await get(spelling)).status, 401, spelling);
      for (const spelling of [
        '/x/%2E%2E/openapi.json',
        '/%2e/openapi%2Ejson',
        '/x\\..\\openapi.json',
        '/openapi.json#x',
      ])
        assert.equal((await get(spelling)).status, 401, spelling);
      assert.equal(origin.seen.length, seenBefore, 'no spelling reached the origin without credentials');

      const authorization = `Basic ${Buffer.from('ops:s3cret').toString('base64')}`;
      const allowed = await get('/%6Fpenapi.json', { authorization });
      assert.equal(allowed.status, 200);
      assert.equal(origin.seen.at(-1)?.url, '/openapi.json');

      const open = await get('/docs/./a//b/%7Euser/%2e%2E/c%2fd?x=%2e&y=/../');
      assert.equal(open.status, 200);
      assert.equal(origin.seen.at(-1)?.url, '/docs/a/b/c%2Fd?x=%2e&y=/../', 'the query is passed as it came');

      const other = await send(edge.httpPort, `www.${neighbour}`, '/home', { timeoutMs: ANSWER_WITHIN_MS });
      assert.equal(other.status, 200);
    },
  );
});
