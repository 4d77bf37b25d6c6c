// Micro-benchmark of the client phase (issue 13 items 4 and 5) beside the rules benchmark's anchor: the rule lookups
// of the request phases on the seeded 100-rule mix (bench/edge-node/rule-gen.ts), then the same with a zone-wide
// fingerprint rule of 100 fingerprints (the JA4H-style fingerprint computed on every request: three SHA-256), a
// zone-wide bot_route rule (every request classified: user-agent tables and header shape), and both, evaluated as
// runPhases does (decideClient). Requests look like browsers (10 headers, a cookie), so no rule decides and nothing
// asks DNS (a claimed crawler costs one Map lookup more once its verification is cached).
// Run: node --import tsx bench/edge-node/bot-fingerprint.bench.ts
import assert from 'node:assert/strict';
import { Bench } from 'tinybench';
import { parsePeerAddress } from '@platform/shared/match';
import type { RuleIndex } from '../../edge-node/src/rules/compile.js';
import type { EngineRuleType } from '../../edge-node/src/rules/index.js';
import { decideClient } from '../../edge-node/src/rules/client-rules.js';
import type { BotRouteAction } from '../../edge-node/src/rules/bot.js';
import type { FingerprintAction } from '../../edge-node/src/rules/fingerprint.js';
import type { RequestContext } from '../../edge-node/src/context.js';
import { compileRules, generateRequests, generateRules, lookups, make, printAgainstAnchor } from './rule-gen.js';
import { FINGERPRINTS } from './security-rules.js';

function withClient(idx: Map<EngineRuleType, RuleIndex>, ctx: RequestContext): number {
  ctx.fingerprint = '';
  ctx.botScore = 0;
  const fp = idx.get('fingerprint') as RuleIndex<FingerprintAction> | undefined;
  const bot = idx.get('bot_route') as RuleIndex<BotRouteAction> | undefined;
  const decided = fp || bot ? decideClient(fp, bot, ctx) : undefined;
  return (decided ? 1 : 0) + lookups(idx, ctx);
}

const compile = compileRules;

/** Browser-shaped requests from spread-out addresses. */
const requests = generateRequests(100, 4096);
requests.forEach((ctx, i) => {
  ctx.peer = parsePeerAddress(`10.${(i >> 8) & 255}.${i & 255}.${(i * 7) & 255}`);
  ctx.headers = [
    ['host', ctx.host],
    ['connection', 'keep-alive'],
    ['sec-ch-ua', '"Chromium";v="131", "Not_A Brand";v="24"'],
    ['user-agent', `Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 Chrome/131.0.${i & 63}.0`],
    ['accept', 'text/html,application/xhtml+xml'],
    ['sec-fetch-mode', 'navigate'],
    ['referer', 'https://www.example.org/'],
    ['accept-encoding', 'gzip, deflate, br'],
    ['accept-language', 'en-US,en;q=0.9'],
    ['cookie', `session=s${i}; theme=dark; consent=1`],
  ];
});
const fpRule = make(100_000, 'fingerprint', { fingerprints: FINGERPRINTS, action: 'block', priority: 5 });
const botRule = make(100_001, 'bot_route', {
  classes: ['ai_crawler', 'automation', 'unverified_crawler'],
  action: 'block',
  priority: 5,
});
const base = generateRules(100);
const anchor = compile(base);
const withFp = compile([...base, fpRule]);
const withBot = compile([...base, botRule]);
const withBoth = compile([...base, fpRule, botRule]);

// Correctness before timing: no request is decided; every one is fingerprinted and scored as a person.
for (const ctx of requests) {
  assert.equal(withClient(withBoth, ctx), lookups(anchor, ctx));
  assert.match(ctx.fingerprint, /^ge11cr08enus_/);
  assert.equal(ctx.botClass, 'human');
}

let k = 0;
const bench = new Bench({ time: 1000, warmupTime: 200 });
bench.add('anchor: 100-rule mix, no client rules', () => {
  lookups(anchor, requests[k++ & 4095]);
});
bench.add('+ fingerprint rule (100 values): JA4H computed', () => {
  withClient(withFp, requests[k++ & 4095]);
});
bench.add('+ bot_route rule: request classified', () => {
  withClient(withBot, requests[k++ & 4095]);
});
bench.add('+ both', () => {
  withClient(withBoth, requests[k++ & 4095]);
});
await bench.run();

printAgainstAnchor(bench);
