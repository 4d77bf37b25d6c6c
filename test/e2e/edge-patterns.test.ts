// Tenant patterns and paths against a running edge node process (issue 10, items 2 and 3): a regex built to
// backtrack cannot stall the worker that serves every tenant.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { proxiedRecord, rule, send, snapshot, startStubOrigin } from '../../edge-node/src/testing/harness.js';
import { startEdgeNodeProcess } from './edge-harness.js';

/** Long enough for a loaded machine, far shorter than the minutes a backtracking engine spends on the attack. */
const ANSWER_WITHIN_MS = 5_000;

test('tenant patterns and paths at a running edge node', { timeout: 120_000 }, async (t) => {
  const origin = await startStubOrigin('patterns');
  t.after(() => origin.close());
  const attacker = 'redos.example.org';
  const neighbour = 'neighbour.example.org';
  const edge = await startEdgeNodeProcess(null, { EDGE_WORKERS: '1' }, [
    {
      ...snapshot(attacker, {
        records: [proxiedRecord('www', origin.port)],
        rules: [rule('drop', { path_match_type: 'regex', path_includes: ['^/(a+)+$'] })],
      }),
      domainId: 1,
    },
    { ...snapshot(neighbour, { records: [proxiedRecord('www', origin.port)] }), domainId: 2 },
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
});
