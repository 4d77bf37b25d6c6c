// A rule set change reaches the rules a request is evaluated with (CompiledDomain.byType, what the request phases
// read): through a real edge node and its store, each step applied as the sync client would (a delta naming the rules
// it writes or removes, a whole snapshot, a tombstone), then a request shows the rules now in force — a rule added,
// a second rule of the type ahead of it, the two reordered by priority, both removed (the type gone), a type removed
// by a snapshot, the domain removed, and the domain back with other rules.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Rule } from '@platform/shared/config';
import { deltaEntry, tombstoneEntry } from '@platform/shared/testing/config-entries';
import { proxiedRecord, rule, send, snapshot, startStubOrigin, startTestEdge } from './testing/harness.js';

const HOST = 'rule-changes.example';

test('rules added, reordered and removed by deltas and snapshots, and the domain removed, reach the next request', async (t) => {
  const origin = await startStubOrigin('o');
  t.after(() => origin.close());
  const records = [proxiedRecord('@', origin.port)];
  const tagged: Rule = rule('header', { response_headers: [{ op: 'set', name: 'x-tag', value: 'one' }] });
  const edge = await startTestEdge(t, [snapshot(HOST, { records, rules: [tagged] })]);
  const port = edge.node.server.httpPort;
  const delta = (rules: Rule[], removedRuleIds: number[] = []) =>
    edge.node.store.apply(deltaEntry(++edge.version, snapshot(HOST, { records: [] }), { rules, removedRuleIds }));
  const answer = async (path = '/r/x') => {
    const r = await send(port, HOST, path);
    return `${r.status} ${r.headers.location ?? '-'} ${r.headers['x-tag'] ?? '-'}`;
  };

  assert.equal(await answer(), '200 - one', 'the header rule alone');
  const first = rule('redirect', { priority: 10, path_includes: ['/r/*'], target: '/first' });
  delta([first]);
  assert.equal(await answer(), '302 /first one', 'a redirect rule added (a type the domain had no rule of)');
  const second = rule('redirect', { priority: 5, path_includes: ['/r/*'], target: '/second' });
  delta([second]);
  assert.equal(await answer(), '302 /second one', 'a second redirect added ahead of the first');
  delta([{ ...second, priority: 20 }]);
  assert.equal(await answer(), '302 /first one', 'reordered: the second redirect now after the first');
  delta([], [first.id]);
  assert.equal(await answer(), '302 /second one', 'the first removed');
  delta([], [second.id]);
  assert.equal(await answer(), '200 - one', 'the last redirect removed: no redirect index');
  delta([{ ...tagged, body: rule('header', { response_headers: [{ op: 'set', name: 'x-tag', value: 'two' }] }).body }]);
  assert.equal(await answer(), '200 - two', 'the header rule rewritten');

  edge.apply(snapshot(HOST, { records, rules: [rule('drop', { path_includes: ['/r/*'] })] }));
  assert.equal(await answer(), '403 - -', 'a whole snapshot: the header rule gone, a drop rule in force');
  assert.equal(await answer('/other'), '200 - -');

  edge.node.store.apply(tombstoneEntry(++edge.version, HOST));
  assert.equal((await send(port, HOST, '/r/x')).status, 421, 'the domain removed');
  edge.apply(snapshot(HOST, { records, rules: [first] }));
  assert.equal(await answer(), '302 /first -', 'the domain back with other rules');
});
