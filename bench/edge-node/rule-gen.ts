// Seeded generator of rule sets and requests for the edge rule benchmarks: a realistic mix of types where most rules
// are scoped by host or by their first path segment (as customers write them), plus a few zone-wide ones.
import { encodeRuleBody, parsePeerAddress, validateRule, type StoredRuleType } from '@platform/shared/match';
import type { Rule } from '@platform/shared/config';
import { cpus } from 'node:os';
import type { Bench } from 'tinybench';
import { RequestContext } from '../../edge-node/src/context.js';
import { compileRuleSet, type RuleIndex } from '../../edge-node/src/rules/compile.js';
import { RULE_COMPILERS, type EngineRuleType } from '../../edge-node/src/rules/index.js';
import { prng as rng } from '@platform/shared/testing/prng';

export const DOMAIN = 'bench.example.org';

/** The rule lookups of runPhases after header rules, in its order (first match per type). */
export const FIRST_TYPES: EngineRuleType[] = [
  'drop',
  'basic_auth',
  'redirect',
  'rewrite',
  'origin_route',
  'origin_pool',
  'cache',
];

/** The anchor of the rule benchmarks: header rules (all), then the first match of each FIRST_TYPES type. */
export function lookups(idx: Map<EngineRuleType, RuleIndex>, ctx: RequestContext): number {
  ctx.hits.length = 0;
  let n = 0;
  idx.get('header')?.each(ctx, () => {
    n++;
    return false;
  });
  for (const t of FIRST_TYPES) if (idx.get(t)?.first(ctx, t !== 'cache')) n++;
  return n;
}

/** A rule of `type` from an API body, validated as the API does and encoded as the snapshot carries it. */
export function make(id: number, type: StoredRuleType, body: Record<string, unknown>): Rule {
  const v = validateRule(type, body);
  if (!v.ok) throw new Error(JSON.stringify(v.problems));
  const { enabled, priority, ...filters } = v.value.common;
  return { id, type, enabled, priority, body: encodeRuleBody({ ...filters, ...v.value.fields }) };
}

/**
 * `n` rules: header by host, redirect/rewrite/cache/origin_route/drop by path segment, and 3 zone-wide rules. With
 * `regexEvery` k > 0, every k-th rule is a regex one instead (a path-regex redirect, or every 2k-th a host-regex
 * header rule), drawn without moving the other rules.
 */
export function generateRules(n: number, seed = 42, regexEvery = 0): Rule[] {
  const r = rng(seed);
  const rules: Rule[] = [
    make(1, 'header', { response_headers: [{ op: 'set', name: 'x-edge', value: '1' }] }),
    make(2, 'drop', { ip_includes: ['198.51.100.0/24', '203.0.113.7'] }),
    make(3, 'cache', { path_includes: ['/*.css', '/*.js'], edge_ttl: 300 }),
  ];
  for (let i = rules.length; i < n; i++) {
    const id = i + 1;
    const priority = 10 + Math.floor(r() * 200);
    const kind = r();
    if (regexEvery > 0 && i % (2 * regexEvery) === 0)
      rules.push(
        make(id, 'header', {
          priority,
          host_match_type: 'regex',
          host_includes: [`^h${i}\\.bench\\.`],
          request_headers: [{ op: 'set', name: 'x-h', value: String(i) }],
        }),
      );
    else if (regexEvery > 0 && i % regexEvery === 0)
      rules.push(
        make(id, 'redirect', {
          priority,
          path_match_type: 'regex',
          path_includes: [`^/r${i}/(x|y)/`],
          target: `/new${i}/$1`,
        }),
      );
    else if (kind < 0.4)
      rules.push(
        make(id, 'header', {
          priority,
          host_includes: [`h${i}.${DOMAIN}`],
          request_headers: [{ op: 'set', name: 'x-h', value: String(i) }],
        }),
      );
    else if (kind < 0.6)
      rules.push(make(id, 'redirect', { priority, path_includes: [`/r${i}/*`], target: `/new${i}/$1` }));
    else if (kind < 0.7)
      rules.push(make(id, 'rewrite', { priority, path_includes: [`/w${i}/*`], path: `/internal/$1` }));
    else if (kind < 0.8) rules.push(make(id, 'cache', { priority, path_includes: [`/s${i}/*`], edge_ttl: 60 }));
    else if (kind < 0.9)
      rules.push(make(id, 'origin_route', { priority, path_includes: [`/a${i}/*`], address: '192.0.2.1' }));
    else
      rules.push(
        make(id, 'drop', {
          priority,
          path_includes: [`/d${i}/*`],
          ip_includes: [`10.${(i >> 8) & 255}.${i & 255}.0/24`],
        }),
      );
  }
  return rules;
}

/** `count` request contexts over hosts and paths the rules name (and some they do not). */
export function generateRequests(n: number, count: number, seed = 7): RequestContext[] {
  const r = rng(seed);
  const out: RequestContext[] = [];
  for (let k = 0; k < count; k++) {
    const i = Math.floor(r() * n);
    const pick = r();
    const host = pick < 0.3 ? `h${i}.${DOMAIN}` : `www.${DOMAIN}`;
    const path =
      pick < 0.3
        ? '/index.html'
        : pick < 0.5
          ? `/r${i}/x/y`
          : pick < 0.6
            ? `/s${i}/a.png`
            : pick < 0.7
              ? `/d${i}/z`
              : pick < 0.8
                ? '/assets/site.css'
                : `/plain/${i}`;
    const peer = parsePeerAddress(r() < 0.5 ? `10.${(i >> 8) & 255}.${i & 255}.9` : '192.0.2.55');
    const ctx = new RequestContext({
      method: 'GET',
      host,
      path,
      query: '',
      headers: [],
      peer,
      scheme: 'http',
      startedAt: 0,
    });
    ctx.recordId = 1;
    out.push(ctx);
  }
  return out;
}

/** Prints the machine and each task's ops/s, ns/op and cost relative to the first task (the anchor). */
export function printAgainstAnchor(bench: Bench): void {
  const rows: Record<string, unknown>[] = [];
  const anchorOps = bench.tasks[0].result?.throughput?.mean ?? 0;
  for (const task of bench.tasks) {
    const ops = task.result?.throughput?.mean ?? 0;
    rows.push({
      task: task.name,
      'ops/s': Math.round(ops),
      'ns/op': ops > 0 ? Math.round(1e9 / ops) : 0,
      'cost / anchor': ops > 0 ? (anchorOps / ops).toFixed(2) : '',
    });
  }
  console.log(`Node ${process.version}, ${cpus()[0]?.model ?? 'cpu'} x${cpus().length}`);
  console.table(rows);
}

/** Rules compiled as a node compiles a snapshot's rule set; a rule that does not compile fails the benchmark. */
export function compileRules(rules: Rule[]): Map<EngineRuleType, RuleIndex> {
  return compileRuleSet(rules, RULE_COMPILERS, (_r, err) => {
    throw err;
  });
}
