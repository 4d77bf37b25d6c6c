import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parsePeerAddress } from '@platform/shared/match';
import { RequestContext } from '../context.js';
import { rule } from '../testing/harness.js';
import { compileRuleSet, ruleMatches, type CompiledRule } from './compile.js';
import { RULE_COMPILERS } from './index.js';

const ctx = (host: string, path: string, ip = '192.0.2.1') => {
  const c = new RequestContext({
    method: 'GET',
    host,
    path,
    query: '',
    headers: [],
    peer: parsePeerAddress(ip),
    scheme: 'http',
    startedAt: 0,
  });
  c.recordId = 1;
  return c;
};

test('the bucketed index visits exactly the matching rules, in priority order, once each', () => {
  const rules = [];
  for (let i = 0; i < 60; i++) {
    const kind = i % 6;
    const priority = (i * 37) % 50;
    const h = { response_headers: [{ op: 'set', name: 'x', value: String(i) }], priority };
    if (kind === 0) rules.push(rule('header', { ...h, host_includes: [`h${i % 5}.example.org`] }));
    else if (kind === 1)
      rules.push(rule('header', { ...h, host_includes: ['*.example.org', `h${i % 5}.example.org`] }));
    else if (kind === 2)
      rules.push(rule('header', { ...h, path_includes: [`/p${i % 4}/*`, `/q${i % 3}`, `/i${i % 2}/*.png`] }));
    else if (kind === 3)
      rules.push(rule('header', { ...h, path_match_type: 'regex', path_includes: [`^/p${i % 4}/`] }));
    else if (kind === 4)
      rules.push(
        rule('header', {
          ...h,
          ip_includes: ['192.0.2.0/25'],
          host_match_type: 'regex',
          host_includes: ['^h[0-2]\\.'],
        }),
      );
    else rules.push(rule('header', { ...h, action_mode: i % 12 === 5 ? 'dry_run' : 'enforce' }));
  }
  const index = compileRuleSet(rules, RULE_COMPILERS, (_r, err) => {
    throw err;
  }).get('header')!;
  assert.equal(index.size, 60);
  const all = index.rules as CompiledRule[];
  for (const host of ['h0.example.org', 'h3.example.org', 'example.org', 'x.y.example.org', 'other.net']) {
    for (const path of ['/', '/p1/a', '/q2', '/p3/', '/z', '/i1/x/a.png', '/i0/a.gif']) {
      for (const ip of ['192.0.2.1', '192.0.2.200']) {
        const c = ctx(host, path, ip);
        const got: number[] = [];
        index.each(c, (r) => {
          got.push(r.id);
          return false;
        });
        const want = all.filter((r) => ruleMatches(r, c) && !r.dryRun).map((r) => r.id);
        assert.deepEqual(got, want, `${host} ${path} ${ip}`);
        const dry = all
          .filter((r) => ruleMatches(r, c) && r.dryRun)
          .map((r) => r.id)
          .sort();
        assert.deepEqual(c.hits.map((h) => h.id).sort(), dry);
      }
    }
  }
});

test("an index whose rules all name their paths' first segments walks none for a path outside them, and misses no match", () => {
  const pathRule = (i: number) => {
    const h = { response_headers: [{ op: 'set', name: 'x', value: String(i) }], priority: (i * 7) % 5 };
    switch (i % 5) {
      case 0:
        return rule('header', { ...h, path_includes: [`/p${i % 4}/*`] });
      case 1:
        return rule('header', { ...h, path_includes: [`/q${i % 3}`, `/i${i % 2}/*.png`] });
      case 2:
        return rule('header', { ...h, path_match_type: 'regex', path_includes: [`^/p${i % 4}/`] });
      case 3:
        return rule('header', { ...h, path_includes: ['/'], host_includes: [`h${i % 3}.example.org`] });
      default:
        return rule('header', { ...h, path_includes: [`/w${i % 2}/*`], path_excludes: ['/w0/no'] });
    }
  };
  const paths = ['/', '/p1', '/p1/a', '/P1/a', '/p3/', '/q2', '/q2/x', '/i1/x/a.png', '/i0/a.gif', '/w0/no', '/w1/a'];
  for (const size of [1, 3, 10, 16, 17, 40]) {
    for (const generic of [false, true]) {
      const rules = Array.from({ length: size }, (_, i) => pathRule(i));
      // One rule matching any path: the gate is off and every path is walked.
      if (generic) rules.push(rule('header', { response_headers: [{ op: 'set', name: 'x', value: 'g' }] }));
      const index = compileRuleSet(rules, RULE_COMPILERS, (_r, err) => {
        throw err;
      }).get('header')!;
      const all = index.rules as CompiledRule[];
      for (const host of ['h0.example.org', 'h1.example.org', 'other.net'])
        for (const path of paths) {
          const c = ctx(host, path);
          const got = index.all(c, []).map((r) => r.id);
          const want = all.filter((r) => ruleMatches(r, c)).map((r) => r.id);
          assert.deepEqual(got, want, `${size} rules${generic ? ' + a generic one' : ''}: ${host} ${path}`);
          assert.equal(index.first(c)?.id, want[0], `first: ${size} ${host} ${path}`);
        }
    }
  }
  // A path outside every rule's segments walks no rule: a rule's filter would have run (and failed) otherwise.
  const rules = [pathRule(0), pathRule(1), pathRule(5)];
  const index = compileRuleSet(rules, RULE_COMPILERS, (_r, err) => {
    throw err;
  }).get('header')!;
  let walked = 0;
  for (const r of index.rules) {
    const matches = r.path.matches.bind(r.path);
    r.path.matches = (p: string) => (walked++, matches(p));
  }
  assert.equal(index.first(ctx('h0.example.org', '/elsewhere/a')), undefined);
  assert.equal(walked, 0);
  assert.equal(index.first(ctx('h0.example.org', '/p0/a'))?.id, rules[0]!.id);
  assert.ok(walked > 0);
});
