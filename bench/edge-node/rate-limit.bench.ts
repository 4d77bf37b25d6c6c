// Micro-benchmark of rate_limit evaluation (issue 13 item 3), beside the rules benchmark's anchor: the rule lookups
// of the request phases on the seeded 100-rule mix (bench/edge-node/rule-gen.ts, as in rules.bench.ts), then the same
// with rate_limit rules added, evaluated as runPhases does (every matching rate_limit rule found by the index, each
// counted in the fixed-size table). Requests come from 4,096 client addresses (a different address per request in
// turn); a row with 1,000,000 addresses shows the table full and evicting. Afterwards, heap bytes allocated per
// counted request over 1,000,000 counts (`--expose-gc` for a clean start). One more row: the clearance cookie checked
// on every request (Under Attack Mode, a client that solved the challenge): one HMAC-SHA-256 per request.
// Run: node --expose-gc --import tsx bench/edge-node/rate-limit.bench.ts
import { Bench } from 'tinybench';
import type { Rule } from '@platform/shared/config';
import { parsePeerAddress } from '@platform/shared/match';
import { compileRuleSet, type CompiledRule, type RuleIndex } from '../../edge-node/src/rules/compile.js';
import { RULE_COMPILERS, type EngineRuleType } from '../../edge-node/src/rules/index.js';
import { RateLimitTable, type RateLimitAction } from '../../edge-node/src/rules/rate-limit.js';
import { CLEARANCE_COOKIE, clearance, hasClearance } from '../../edge-node/src/rules/challenge.js';
import type { RequestContext } from '../../edge-node/src/context.js';
import { generateRequests, generateRules, lookups, make, printAgainstAnchor } from './rule-gen.js';

const scratch: CompiledRule<RateLimitAction>[] = [];
function withRateLimits(
  idx: Map<EngineRuleType, RuleIndex>,
  table: RateLimitTable,
  ctx: RequestContext,
  now: number,
): number {
  let n = 0;
  const limits = idx.get('rate_limit') as RuleIndex<RateLimitAction> | undefined;
  if (limits) {
    limits.all(ctx, scratch, false);
    for (let i = 0; i < scratch.length; i++) if (table.check(scratch[i].action, ctx, now) > 0) n++;
    scratch.length = 0;
  }
  return n + lookups(idx, ctx);
}

function rateRules(count: number, firstId: number): Rule[] {
  const keys = ['ip', 'ip_path', 'path', 'ip_header', 'header'];
  return Array.from({ length: count }, (_, i) => {
    const key = keys[i % keys.length];
    return make(firstId + i, 'rate_limit', {
      // zone-wide and path-scoped rules, the way a site limits everything and its API harder
      path_includes: i % 2 === 0 ? ['/*'] : [`/p${i}/*`],
      requests: 1_000_000,
      period_s: 60,
      key,
      ...(key.endsWith('header') ? { key_header: 'user-agent' } : {}),
    });
  });
}

const compile = (rules: Rule[]) =>
  compileRuleSet(rules, RULE_COMPILERS, (_r, err) => {
    throw err;
  });

const base = generateRules(100);
function benchRequests(): RequestContext[] {
  const out = generateRequests(100, 4096);
  for (let i = 0; i < out.length; i++) {
    out[i].peer = parsePeerAddress(`10.${(i >> 8) & 255}.${i & 255}.${(i * 7) & 255}`);
    out[i].headers = [['user-agent', `bench/${i & 63}`]];
  }
  return out;
}
const requests = benchRequests();
/** The same requests for the row that changes their addresses. */
const spread = benchRequests();
const anchor = compile(base);
const one = compile([...base, ...rateRules(1, 100_000)]);
const ten = compile([...base, ...rateRules(10, 100_000)]);
const table = new RateLimitTable();
const wide = new RateLimitTable();
const manyPeers = Array.from({ length: 1 << 20 }, (_, i) =>
  parsePeerAddress(`10.${i >> 16}.${(i >> 8) & 255}.${i & 255}`),
);

let k = 0;
const now = Date.now();
const bench = new Bench({ time: 1000, warmupTime: 200 });
bench.add('anchor: 100-rule mix, no rate_limit', () => {
  lookups(anchor, requests[k++ & 4095]);
});
bench.add('+ 1 zone-wide rate_limit rule', () => {
  withRateLimits(one, table, requests[k++ & 4095], now);
});
bench.add('+ 10 rate_limit rules (5 zone-wide)', () => {
  withRateLimits(ten, table, requests[k++ & 4095], now);
});
let p = 0;
bench.add('+ 10 rate_limit rules, 1,048,576 addresses (table full, evicting)', () => {
  const ctx = spread[k++ & 4095];
  ctx.peer = manyPeers[p++ & 0xfffff];
  withRateLimits(ten, wide, ctx, now);
});
// Under Attack Mode (or a captcha rule) for a client that holds a clearance: the cookie is checked on every request.
const cleared = requests.map((r) => `a=1; ${CLEARANCE_COOKIE}=${clearance(r.peer.text, r.host, 1800)}`);
bench.add('anchor + clearance cookie checked (Under Attack Mode, cleared client)', () => {
  const i = k++ & 4095;
  const ctx = requests[i];
  if (!hasClearance(cleared[i], ctx.peer.text, ctx.host, now)) throw new Error('refused');
  lookups(anchor, ctx);
});
await bench.run();

printAgainstAnchor(bench);
console.log(`evictions in the full table: ${wide.evictions}; table bytes: ${table.bytes}`);

// Heap allocated per counted request (the table's check alone: hashing in place, typed arrays, no objects).
const gc = (globalThis as { gc?: () => void }).gc;
const action = (ten.get('rate_limit')!.rules[0] as CompiledRule<RateLimitAction>).action;
const counted = new RateLimitTable();
for (let i = 0; i < 10_000; i++) counted.check(action, requests[i & 4095], now);
gc?.();
const before = process.memoryUsage().heapUsed;
const N = 1_000_000;
for (let i = 0; i < N; i++) counted.check(action, requests[i & 4095], now);
const after = process.memoryUsage().heapUsed;
console.log(
  `heap growth over ${N} checks: ${after - before} bytes (${((after - before) / N).toFixed(3)} bytes/check)` +
    (gc ? '' : ' (run with --expose-gc for a clean start)'),
);
