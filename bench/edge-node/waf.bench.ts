// The WAF (issue 13 item 1): detection and false-positive rates of each paranoia level on the corpora
// (test/fixtures/waf: the tuning sets and the held-out sets), then its cost per request beside the rules benchmark's
// anchor (the rule lookups of the request phases on the seeded 100-rule mix, bench/edge-node/rule-gen.ts). The WAF
// rows evaluate the benign corpus's requests in turn (GETs with browser headers and queries, forms, JSON and
// multipart bodies), as the edge's waf phase does (phase 1, then phase 2 on the body): paranoia 1 and 4, a plain
// browser GET alone (its User-Agent's reading cached, as on a site whose visitors send the same few), the same GET
// with a new User-Agent each time (no cache hit), and the attack corpus (requests with findings cost more: events).
// Run: node --import tsx bench/edge-node/waf.bench.ts
import { Bench } from 'tinybench';
import { compileRuleSet } from '../../edge-node/src/rules/compile.js';
import { RULE_COMPILERS } from '../../edge-node/src/rules/index.js';
import { compileWaf } from '../../edge-node/src/rules/waf.js';
import { evaluate, type WafRequest } from '../../edge-node/src/waf/engine.js';
import { loadCorpus, runCorpus, toWafRequest } from '../../edge-node/src/testing/waf-corpus.js';
import { generateRequests, generateRules, lookups, printAgainstAnchor } from './rule-gen.js';

const sets = [
  ['tuning', loadCorpus('attacks'), loadCorpus('benign')],
  ['held out', loadCorpus('holdout-attacks'), loadCorpus('holdout-benign')],
] as const;
const rows: Record<string, unknown>[] = [];
for (const [name, attacks, benign] of sets)
  for (const pl of [1, 2, 3, 4]) {
    const a = runCorpus(attacks, pl, true);
    const b = runCorpus(benign, pl, false);
    rows.push({
      corpus: name,
      paranoia: pl,
      attacks: a.total,
      'blocked %': ((100 * a.blocked) / a.total).toFixed(1),
      benign: b.total,
      'false positives %': ((100 * b.blocked) / b.total).toFixed(1),
    });
  }
console.log('Detection (anomaly threshold 5)');
console.table(rows);

const idx = compileRuleSet(generateRules(100), RULE_COMPILERS, (_r, err) => {
  throw err;
});
const ctxs = generateRequests(100, 4096);
const benign: WafRequest[] = loadCorpus('benign').map(toWafRequest);
const attacks: WafRequest[] = loadCorpus('attacks').map(toWafRequest);
const browserGet = benign.find((r) => r.method === 'GET' && r.query !== '' && r.headers.length >= 3)!;
const pl1 = compileWaf({ paranoia_level: 1 });
const pl4 = compileWaf({ paranoia_level: 4 });

let i = 0;
let sink = 0;
const bench = new Bench({ time: 1500, warmupTime: 300 });
bench
  .add('anchor: rule lookups, 100 rules', () => {
    sink += lookups(idx, ctxs[i++ & 4095]);
  })
  .add('waf PL1: one browser GET with a query', () => {
    sink += evaluate(pl1, browserGet).score;
  })
  .add('waf PL1: the same GET, a new User-Agent each time', () => {
    const ua: [string, string] = ['user-agent', `Mozilla/5.0 (X11; Linux x86_64; rv:${i++}.0) Gecko/20100101`];
    sink += evaluate(pl1, { ...browserGet, headers: [ua, ...browserGet.headers.slice(1)] }).score;
  })
  .add('waf PL1: benign corpus in turn', () => {
    sink += evaluate(pl1, benign[i++ % benign.length]).score;
  })
  .add('waf PL4: benign corpus in turn', () => {
    sink += evaluate(pl4, benign[i++ % benign.length]).score;
  })
  .add('waf PL1: attack corpus in turn', () => {
    sink += evaluate(pl1, attacks[i++ % attacks.length]).score;
  });
await bench.run();
printAgainstAnchor(bench);
if (sink === -1) console.log(sink);
