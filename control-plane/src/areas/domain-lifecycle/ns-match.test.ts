// Table tests of the delegation judgement: exactly one accepted set, in full, never mixed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { judgeDelegation, matchNsSet } from './ns-match.js';

const SETS = [
  ['ns1.p.test', 'ns2.p.test'],
  ['ns3.p.test', 'ns4.p.test'],
];

const cases: Array<{ name: string; seen: string[]; index: number | null; error?: RegExp }> = [
  { name: 'first set', seen: ['ns1.p.test', 'ns2.p.test'], index: 0 },
  { name: 'second set, any order, case and trailing dot', seen: ['NS4.p.test.', 'ns3.p.test'], index: 1 },
  { name: 'mixed sets', seen: ['ns1.p.test', 'ns3.p.test'], index: null, error: /mix accepted sets/ },
  { name: 'incomplete', seen: ['ns1.p.test'], index: null, error: /incomplete: missing ns2\.p\.test/ },
  {
    name: 'extra foreign nameserver',
    seen: ['ns1.p.test', 'ns2.p.test', 'ns.other.net'],
    index: null,
    error: /outside the set: ns\.other\.net/,
  },
  {
    name: 'old provider',
    seen: ['a.iana-servers.net', 'b.iana-servers.net'],
    index: null,
    error: /delegated to a\.iana-servers\.net/,
  },
  { name: 'nothing', seen: [], index: null, error: /no NS records/ },
];

for (const c of cases) {
  test(`matchNsSet: ${c.name}`, () => {
    const r = matchNsSet(c.seen, SETS);
    assert.equal(r.index, c.index);
    if (c.error) assert.match(r.error ?? '', c.error);
  });
}

test('judgeDelegation: resolvers must agree; failed resolvers are ignored unless all fail', () => {
  const good = { resolver: 'a', values: ['ns1.p.test', 'ns2.p.test'] };
  assert.deepEqual(judgeDelegation([good, { resolver: 'b', values: [], error: 'timeout' }], SETS), {
    ok: true,
    nameservers: ['ns1.p.test', 'ns2.p.test'],
    matchedSet: 0,
  });
  const split = judgeDelegation([good, { resolver: 'b', values: ['ns3.p.test', 'ns4.p.test'] }], SETS);
  assert.equal(split.ok, false);
  assert.match(split.error ?? '', /disagree/);
  const none = judgeDelegation([{ resolver: 'a', values: [], error: 'SERVFAIL' }], SETS);
  assert.equal(none.ok, false);
  assert.match(none.error ?? '', /no resolver answered.*SERVFAIL/);
});
