// Micro-benchmark of rule evaluation (the request phases' rule lookups, no I/O) with 10, 100, 1,000 and 10,000 rules:
// the compiled indexes (candidate) against a linear scan of the same compiled rules in priority order (baseline).
// Run: node --import tsx bench/edge-node/rules.bench.ts
import assert from 'node:assert/strict';
import { cpus } from 'node:os';
import { Bench } from 'tinybench';
import { compileRuleSet, ruleMatches, type CompiledRule, type RuleIndex } from '../../edge-node/src/rules/compile.js';
import { RULE_COMPILERS } from '../../edge-node/src/rules/index.js';
import type { RequestContext } from '../../edge-node/src/context.js';
import { generateRequests, generateRules } from './rule-gen.js';

/** The rule lookups of runPhases in its order: header (all), drop, basic_auth, redirect, rewrite, origin_route, origin_pool, cache. */
const FIRST_TYPES = ['drop', 'basic_auth', 'redirect', 'rewrite', 'origin_route', 'origin_pool', 'cache'];

function indexed(idx: Map<string, RuleIndex>, ctx: RequestContext): string {
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

const results: Record<string, unknown>[] = [];
for (const n of [10, 100, 1_000, 10_000]) {
  const rules = generateRules(n);
  const t0 = performance.now();
  const idx = compileRuleSet(rules, RULE_COMPILERS, (_r, err) => {
    throw err;
  });
  const compileMs = performance.now() - t0;
  const byType = new Map([...idx].map(([t, i]) => [t, i.rules as CompiledRule[]]));
  const requests = generateRequests(n, 4096);
  // Correctness before timing: both evaluations decide the same for every request.
  for (const ctx of requests) assert.equal(indexed(idx, ctx), linear(byType, ctx));
  let k = 0;
  const bench = new Bench({ time: n >= 10_000 ? 1500 : 800, warmupTime: 200 });
  bench.add(`indexed ${n} rules`, () => {
    indexed(idx, requests[k++ & 4095]);
  });
  bench.add(`linear ${n} rules (baseline)`, () => {
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
      'compile ms': Math.round(compileMs),
    });
  }
}
console.log(`Node ${process.version}, ${cpus()[0]?.model ?? 'cpu'} x${cpus().length}`);
console.table(results);
