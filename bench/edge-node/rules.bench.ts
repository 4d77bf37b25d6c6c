// Micro-benchmark of rule evaluation (the request phases' rule lookups, no I/O) with 10, 100, 1,000 and 10,000 rules:
// the compiled indexes (what the edge runs) against a linear scan of the same compiled rules in priority order, and
// today's matchers (wildcards without regexes, user regexes on RE2) against the V8 RegExp matchers they replaced
// (bench/edge-node/v8-matchers.ts), in the same run, on the usual rule mix and on a mix with 5 % regex rules.
// Run: node --import tsx bench/edge-node/rules.bench.ts
import assert from 'node:assert/strict';
import { cpus } from 'node:os';
import { Bench } from 'tinybench';
import type { HostFilter, PathFilter } from '@platform/shared/match';
import { compileRuleSet, ruleMatches, type CompiledRule, type RuleIndex } from '../../edge-node/src/rules/compile.js';
import { RULE_COMPILERS, type EngineRuleType } from '../../edge-node/src/rules/index.js';
import type { RequestContext } from '../../edge-node/src/context.js';
import { FIRST_TYPES, generateRequests, generateRules } from './rule-gen.js';
import { V8HostFilter, V8PathFilter } from './v8-matchers.js';

function indexed(idx: Map<EngineRuleType, RuleIndex>, ctx: RequestContext): string {
  ctx.hits.length = 0;
  let sig = '';
  idx.get('header')?.each(ctx, (r) => {
    sig += `h${r.id},`;
    return false;
  });
  for (const t of FIRST_TYPES) {
    const r = idx.get(t)?.first(ctx, t !== 'cache');
    if (r) {
      sig += `${t}${r.id},`;
      if (t === 'drop' || t === 'redirect') break;
    }
  }
  return sig;
}

function linear(byType: Map<string, CompiledRule[]>, ctx: RequestContext): string {
  ctx.hits.length = 0;
  let sig = '';
  for (const r of byType.get('header') ?? []) if (ruleMatches(r, ctx)) sig += `h${r.id},`;
  for (const t of FIRST_TYPES) {
    const r = (byType.get(t) ?? []).find((x) => ruleMatches(x, ctx));
    if (r) {
      sig += `${t}${r.id},`;
      if (t === 'drop' || t === 'redirect') break;
    }
  }
  return sig;
}

function compile(rules: ReturnType<typeof generateRules>): Map<EngineRuleType, RuleIndex> {
  return compileRuleSet(rules, RULE_COMPILERS, (_r, err) => {
    throw err;
  });
}

/** The same compiled set with each rule's host and path filter rebuilt by the V8 RegExp matchers of before. */
function withV8Matchers(idx: Map<EngineRuleType, RuleIndex>): Map<EngineRuleType, RuleIndex> {
  for (const index of idx.values())
    for (const r of index.rules as CompiledRule[]) {
      const f = r.fields;
      const hostIncludes = f.host_pattern ? [...f.host_includes, f.host_pattern] : f.host_includes;
      r.host = new V8HostFilter(f.host_match_type, hostIncludes, f.host_excludes) as unknown as HostFilter;
      r.path = new V8PathFilter(f.path_match_type, f.path_includes, f.path_excludes) as unknown as PathFilter;
    }
  return idx;
}

const SCENARIOS = [
  { name: 'mix', regexEvery: 0 },
  { name: 'mix + 5 % regex', regexEvery: 20 },
];

const results: Record<string, unknown>[] = [];
for (const n of [10, 100, 1_000, 10_000]) {
  for (const scenario of SCENARIOS) {
    const rules = generateRules(n, 42, scenario.regexEvery);
    const t0 = performance.now();
    const idx = compile(rules);
    const compileMs = performance.now() - t0;
    const v8 = withV8Matchers(compile(rules));
    const byType = new Map([...idx].map(([t, i]) => [t, i.rules as CompiledRule[]]));
    const requests = generateRequests(n, 4096);
    // Correctness before timing: every evaluation decides the same for every request.
    for (const ctx of requests) {
      const want = linear(byType, ctx);
      assert.equal(indexed(idx, ctx), want);
      assert.equal(indexed(v8, ctx), want);
    }
    let k = 0;
    const bench = new Bench({ time: n >= 10_000 ? 1500 : 800, warmupTime: 200 });
    const tag = `${n} rules, ${scenario.name}`;
    bench.add(`indexed, RE2 + wildcards (today): ${tag}`, () => {
      indexed(idx, requests[k++ & 4095]);
    });
    bench.add(`indexed, V8 RegExp (before): ${tag}`, () => {
      indexed(v8, requests[k++ & 4095]);
    });
    if (scenario.regexEvery === 0)
      bench.add(`linear scan (baseline): ${tag}`, () => {
        linear(byType, requests[k++ & 4095]);
      });
    await bench.run();
    for (const task of bench.tasks) {
      const r = task.result as { throughput?: { mean: number } } | undefined;
      const ops = r?.throughput?.mean ?? 0;
      // ns/op from throughput: tinybench's per-sample latency includes the timer's own cost at these speeds.
      results.push({
        task: task.name,
        'ops/s': Math.round(ops),
        'ns/op': ops > 0 ? Math.round(1e9 / ops) : 0,
        'compile ms': task.name.includes('V8') ? '' : Math.round(compileMs),
      });
    }
  }
}
console.log(`Node ${process.version}, ${cpus()[0]?.model ?? 'cpu'} x${cpus().length}`);
console.table(results);
