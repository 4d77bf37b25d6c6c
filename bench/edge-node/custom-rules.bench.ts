// Micro-benchmark of custom-rule evaluation (issue 13 item 7), beside the rules benchmark's anchor: the rule lookups of
// the request phases on the seeded 100-rule mix (bench/edge-node/rule-gen.ts, as in rules.bench.ts and
// rate-limit.bench.ts), then the same with 20 zone-wide custom rules evaluated as runPhases does (decideCustom: the
// index finds the rules whose filters match, each compiled expression runs until one decides). The 20 expressions are
// a realistic mix (wildcards, CIDR lists, header tests, len/lower, 2 RE2 regexes) that no request matches, so every
// request runs all 20; one row with the regexes left out, one with a `log` rule matching every request first.
// Run: node --import tsx bench/edge-node/custom-rules.bench.ts
import assert from 'node:assert/strict';
import { Bench } from 'tinybench';
import type { Rule } from '@platform/shared/config';
import { parsePeerAddress } from '@platform/shared/match';
import { compileRuleSet, type RuleIndex } from '../../edge-node/src/rules/compile.js';
import { RULE_COMPILERS, type EngineRuleType } from '../../edge-node/src/rules/index.js';
import { decideCustom, type CustomAction } from '../../edge-node/src/rules/custom.js';
import type { RequestContext } from '../../edge-node/src/context.js';
import { generateRequests, generateRules, lookups, printAgainstAnchor } from './rule-gen.js';
import { CUSTOM_EXPRESSIONS as EXPRESSIONS, customRules } from './security-rules.js';

function withCustom(idx: Map<EngineRuleType, RuleIndex>, ctx: RequestContext): number {
  const custom = idx.get('custom') as RuleIndex<CustomAction> | undefined;
  const decided = custom ? decideCustom(custom, ctx) : undefined;
  return (decided ? 1 : 0) + lookups(idx, ctx);
}

const compile = (rules: Rule[]) =>
  compileRuleSet(rules, RULE_COMPILERS, (_r, err) => {
    throw err;
  });

const requests = generateRequests(100, 4096);
for (let i = 0; i < requests.length; i++) {
  requests[i].peer = parsePeerAddress(`10.${(i >> 8) & 255}.${i & 255}.${(i * 7) & 255}`);
  requests[i].headers = [
    ['user-agent', `Mozilla/5.0 (bench ${i & 63})`],
    ['accept', 'text/html'],
    ['cookie', `session=s${i}`],
  ];
  requests[i].query = i % 3 === 0 ? `q=item${i}&page=2` : '';
}
const base = generateRules(100);
const anchor = compile(base);
const twenty = compile([...base, ...customRules(EXPRESSIONS, 100_000)]);
const noRegex = EXPRESSIONS.filter((e) => !e.includes('matches'));
const eighteen = compile([...base, ...customRules(noRegex, 100_000)]);
const logged = compile([
  ...base,
  ...customRules(['http.request.uri.path wildcard "/*"'], 99_000, 'log'),
  ...customRules(EXPRESSIONS, 100_000),
]);

// Correctness before timing: no request is decided by the 20 rules; a crafted one is.
for (const ctx of requests) assert.equal(withCustom(twenty, ctx) >= 0 && ctx.hits.length, 0);
const probe = requests[0];
const savedPath = probe.path;
probe.path = '/wp-login.php';
assert.equal(decideCustom(twenty.get('custom') as RuleIndex<CustomAction>, probe)?.id, 100_007);
probe.path = savedPath;

let k = 0;
const bench = new Bench({ time: 1000, warmupTime: 200 });
bench.add('anchor: 100-rule mix, no custom rules', () => {
  lookups(anchor, requests[k++ & 4095]);
});
bench.add('+ 20 custom rules (2 regexes), none matching: all 20 run', () => {
  withCustom(twenty, requests[k++ & 4095]);
});
bench.add(`+ ${noRegex.length} custom rules without the regexes`, () => {
  withCustom(eighteen, requests[k++ & 4095]);
});
bench.add('+ 1 log rule matching every request, then the 20', () => {
  withCustom(logged, requests[k++ & 4095]);
});
await bench.run();

printAgainstAnchor(bench);

// Compile cost (once per config version): the 20 expressions, as the edge compiles them from the rule bodies.
const bodies = customRules(EXPRESSIONS, 100_000);
const t0 = performance.now();
for (let i = 0; i < 100; i++) compile(bodies);
console.log(`compile 20 custom rules: ${((performance.now() - t0) / 100).toFixed(2)} ms`);
