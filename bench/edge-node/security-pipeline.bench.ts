// The cost per request of the whole security pipeline (issue 13 "Must show"): one domain with a rule of every
// security type (security-rules.ts: WAF PL1, a rate_limit never reached, bot_route, fingerprint, 20 custom rules, a
// captcha rule on another path, optimize; Under Attack Mode off) against a domain with no rules, through the edge's
// whole per-request handler (makeHandler: headers read, path normalised, host → domain, every phase, the answer
// written) of a running edge node, called with stand-ins for uWS's request and response so no client socket time
// counts. Two pairs of rows:
// - answered by a cache hit (a cache rule on both domains, the entry stored by a real request first): no origin, so
//   the difference is the security phases alone against the cheapest answer the edge gives;
// - proxied to an origin (a separate process on 127.0.0.1 answering 1 KB, one request at a time on kept-alive
//   connections): the plain proxy path with no rules against the same with every security type.
// Plus the pipeline with the client taking brotli (optimize compresses the 1 KB answer) and with a captcha rule on
// the request's path that the client's clearance passes. Every answer is checked (status, cache status, hits logged).
// Run: node --import tsx bench/edge-node/security-pipeline.bench.ts (npm run bench -- security-pipeline)
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { cpus } from 'node:os';
import { Bench } from 'tinybench';
import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import type { Rule } from '@platform/shared/config';
import { makeHandler } from '../../edge-node/src/server.js';
import type { EdgeState } from '../../edge-node/src/phases.js';
import type { RequestContext } from '../../edge-node/src/context.js';
import { CLEARANCE_COOKIE, clearance } from '../../edge-node/src/rules/challenge.js';
import { proxiedRecord, send, snapshot, startTestEdge } from '../../edge-node/src/testing/harness.js';
import { FakeRequest, FakeResponse } from './fake-uws.js';
import { make } from './rule-gen.js';
import { SECURITY_HEADERS, SECURITY_PATH, everySecurityType } from './security-rules.js';

// The origin: another process, so its work is not on this thread's clock.
const originProc = spawn(
  process.execPath,
  [
    '-e',
    `const body = 'a'.repeat(1024);
     const s = require('node:http').createServer((req, res) => {
       res.setHeader('content-type', 'text/plain');
       res.setHeader('cache-control', 'max-age=300');
       res.end(body);
     });
     s.keepAliveTimeout = 60000;
     s.listen(0, '127.0.0.1', () => console.log(s.address().port));`,
  ],
  { stdio: ['ignore', 'pipe', 'inherit'] },
);
process.on('exit', () => originProc.kill());
const [portLine] = (await once(originProc.stdout!, 'data')) as [Buffer];
const originPort = Number(portLine.toString().trim());

const rec = (name: string) => proxiedRecord(name, originPort, { timeout: 30 });
const cacheRule = make(800_001, 'cache', { priority: 1, path_includes: ['/static/*'], edge_ttl: 300 });
const pipeline = everySecurityType();
const ofType = (type: string) => pipeline.filter((r) => r.type === type);
const clearedCaptcha = make(900_050, 'captcha', { path_includes: ['/search', '/static/*'] });
/** Domain (first label) → its rules besides the cache rule on /static/*. */
const DOMAINS: Record<string, Rule[]> = {
  plain: [],
  secure: pipeline,
  cleared: [...pipeline, clearedCaptcha],
  waf: ofType('waf'),
  rate: ofType('rate_limit'),
  bot: ofType('bot_route'),
  fp: ofType('fingerprint'),
  custom: ofType('custom'),
  captcha: ofType('captcha'),
  opt: ofType('optimize'),
  nopt: pipeline.filter((r) => r.type !== 'optimize'),
};
const host = (label: string) => `${label}.bench.example.org`;
const edge = await startTestEdge(
  null,
  Object.entries(DOMAINS).map(([label, rules]) =>
    snapshot(host(label), { records: [rec('@')], rules: [cacheRule, ...rules] }),
  ),
);
const node = edge.node;

let lastLogged: RequestContext | null = null;
const state: EdgeState = {
  table: node.table,
  pools: node.pools,
  cache: node.cache,
  cacheMaxObjectBytes: 8 << 20,
  log: (ctx) => {
    lastLogged = ctx;
  },
};
const handler = makeHandler(state, 'http');

const [pathOnly, query] = SECURITY_PATH.split('?');
const req = (label: string, path: string, extra: [string, string][] = []) =>
  new FakeRequest(path, query, [['host', host(label)], ...SECURITY_HEADERS, ...extra]);
const cleared: [string, string][] = [
  ['cookie', `${CLEARANCE_COOKIE}=${clearance('127.0.0.1', host('cleared'), 1800, Date.now())}`],
];
const BR: [string, string][] = [['accept-encoding', 'gzip, deflate, br']];

// Cache entries stored by real requests through the edge (the clearance cookie passes the captcha on /static/*).
for (const label of Object.keys(DOMAINS)) {
  const headers = Object.fromEntries([...SECURITY_HEADERS, ...(label === 'cleared' ? cleared : [])]);
  await send(node.server.httpPort, host(label), `/static/a.css?${query}`, { headers });
  const r = await send(node.server.httpPort, host(label), `/static/a.css?${query}`, { headers });
  assert.equal(r.headers['x-cache-status'], 'HIT', `${label}: cached before timing`);
}

/** One request through the handler, synchronous answers (421, cache hit) and proxied ones alike; checked. */
function run(r: FakeRequest, status: string, cache: string, encoding = ''): Promise<void> | void {
  const res = new FakeResponse();
  const check = () => {
    if (res.status !== status || res.cache !== cache || res.encoding !== encoding)
      throw new Error(`expected ${status} ${cache} ${encoding}, got ${res.status} ${res.cache} ${res.encoding}`);
  };
  handler(res as unknown as HttpResponse, r as unknown as HttpRequest);
  if (res.finished) return check();
  return new Promise<void>((resolve) => {
    res.onFinish = resolve;
  }).then(check);
}

// Correctness before timing: every security rule was evaluated and none acted (no hit but optimize's compression, no
// WAF finding; the request was fingerprinted and classified human).
for (const [r, encoding] of [
  [req('secure', pathOnly), ''],
  [req('secure', pathOnly, BR), 'br'],
  [req('cleared', pathOnly, cleared), ''],
] as const) {
  await run(r, '200 OK', 'DYNAMIC', encoding);
  const seen = lastLogged as RequestContext | null;
  const acted = seen?.hits.filter((h) => h.type !== 'optimize');
  assert.ok(seen && acted?.length === 0 && seen.waf === null, `no rule acted: ${JSON.stringify(acted)}`);
  assert.equal(seen.botClass, 'human');
  assert.match(seen.fingerprint, /^ge11[cn]n0[56]engb_/);
}

const OK = '200 OK';
/** [row, request, cache status, content-encoding, the row it is compared with]. */
const rows: [string, FakeRequest, string, string, string][] = [
  ['floor: handler, unknown host (421)', req('unknown', pathOnly), '', '', ''],
  ['cache hit, no rules (plain)', req('plain', '/static/a.css'), 'HIT', '', ''],
  ['cache hit + waf PL1 only', req('waf', '/static/a.css'), 'HIT', '', 'cache hit, no rules (plain)'],
  ['cache hit + rate_limit only', req('rate', '/static/a.css'), 'HIT', '', 'cache hit, no rules (plain)'],
  ['cache hit + bot_route only', req('bot', '/static/a.css'), 'HIT', '', 'cache hit, no rules (plain)'],
  ['cache hit + fingerprint (100 values) only', req('fp', '/static/a.css'), 'HIT', '', 'cache hit, no rules (plain)'],
  ['cache hit + 20 custom rules only', req('custom', '/static/a.css'), 'HIT', '', 'cache hit, no rules (plain)'],
  ['cache hit + captcha (other path) only', req('captcha', '/static/a.css'), 'HIT', '', 'cache hit, no rules (plain)'],
  ['cache hit, every security type', req('secure', '/static/a.css'), 'HIT', '', 'cache hit, no rules (plain)'],
  [
    'cache hit, every security type + captcha on the path, clearance held',
    req('cleared', '/static/a.css', cleared),
    'HIT',
    '',
    'cache hit, no rules (plain)',
  ],
  ['proxied, no rules (plain proxy path)', req('plain', pathOnly), 'DYNAMIC', '', ''],
  ['proxied + waf PL1 only', req('waf', pathOnly), 'DYNAMIC', '', 'proxied, no rules (plain proxy path)'],
  ['proxied + optimize only', req('opt', pathOnly), 'DYNAMIC', '', 'proxied, no rules (plain proxy path)'],
  [
    'proxied, every security type but optimize',
    req('nopt', pathOnly),
    'DYNAMIC',
    '',
    'proxied, no rules (plain proxy path)',
  ],
  ['proxied, every security type', req('secure', pathOnly), 'DYNAMIC', '', 'proxied, no rules (plain proxy path)'],
  [
    'proxied, every security type, client takes br (1 KB compressed)',
    req('secure', pathOnly, BR),
    'DYNAMIC',
    'br',
    'proxied, no rules (plain proxy path)',
  ],
];
const bench = new Bench({ time: 1500, warmupTime: 300 });
for (const [name, r, cache, encoding] of rows)
  bench.add(name, () => run(r, name.startsWith('floor') ? '421 Misdirected Request' : OK, cache, encoding));
await bench.run();
for (const t of bench.tasks) if (t.result?.error) throw t.result.error;

const us = (name: string) => {
  const ops = bench.tasks.find((x) => x.name === name)?.result?.throughput?.mean ?? 0;
  return ops > 0 ? 1e6 / ops : 0;
};
console.log(`Node ${process.version}, ${cpus()[0]?.model ?? 'cpu'} x${cpus().length}`);
console.table(
  rows.map(([name, , , , anchor]) => ({
    task: name,
    'µs/request': us(name).toFixed(2),
    '× plain': anchor ? (us(name) / us(anchor)).toFixed(2) : '',
    'added µs': anchor ? (us(name) - us(anchor)).toFixed(2) : '',
  })),
);
await edge.close();
originProc.kill();
