// Micro-benchmark of the per-request cost of the wrk benchmark's 20 rules (issue 12's "20 rules" row): the edge's whole
// request handler (server.ts makeHandler: headers, path, host → domain, every rule phase, cache key, answer) called
// with the stand-ins for uWS's request/response (fake-uws.ts), so no socket time is counted. The request is a cache
// hit, so the origin's side is out of the figure and what differs between the rows is the rule path: a domain with
// only a cache rule against the domain with the 20 rules of twenty-rules.ts, where a request to /s1/… runs every
// phase (the response header rule, both drops, 6 redirects, 4 rewrites, 3 origin_routes, the cache rules) before the
// hit. Both entries are put in the cache by real requests through the edge to a stub origin first; every timed request
// is checked to be a HIT. Rows alternate in one process (tinybench), so compare a tree with another by running this
// file in each, in turn, several times.
// Run: node --import tsx bench/edge-node/rules-request.bench.ts [rounds (default 3)]
import assert from 'node:assert/strict';
import { cpus } from 'node:os';
import { Bench } from 'tinybench';
import { makeHandler } from '../../edge-node/src/server.js';
import {
  proxiedRecord,
  rule,
  send,
  snapshot,
  startStubOrigin,
  startTestEdge,
} from '../../edge-node/src/testing/harness.js';
import { BROWSER, FakeRequest, answerAs } from './fake-uws.js';
import { twentyRules } from './twenty-rules.js';

const rounds = Math.min(Math.max(Number(process.argv[2] ?? 3) || 3, 1), 20);

const origin = await startStubOrigin('bench', (_req, res) => {
  res.setHeader('content-type', 'text/css');
  res.setHeader('cache-control', 'public, max-age=600');
  res.end('x'.repeat(1024));
});
const edge = await startTestEdge(null, [
  snapshot('cache.bench.example.org', {
    records: [proxiedRecord('@', origin.port)],
    rules: [rule('cache', { path_includes: ['/s1/*'], edge_ttl: 300 })],
  }),
  snapshot('rules.bench.example.org', {
    records: [proxiedRecord('@', origin.port)],
    rules: twentyRules(origin.port),
  }),
]);
const node = edge.node;
const handler = makeHandler(
  { table: node.table, pools: node.pools, cache: node.cache, cacheMaxObjectBytes: 8 << 20, log: () => {} },
  'http',
);
const port = node.server.httpPort;
for (const host of ['cache.bench.example.org', 'rules.bench.example.org']) {
  await send(port, host, '/s1/a.css', { headers: Object.fromEntries(BROWSER) });
  const r = await send(port, host, '/s1/a.css', { headers: Object.fromEntries(BROWSER) });
  assert.equal(r.headers['x-cache-status'], 'HIT', `${host} is cached before timing`);
}

const request = (host: string) => new FakeRequest('/s1/a.css', '', [['host', host], ...BROWSER]);
const oneRule = request('cache.bench.example.org');
const twenty = request('rules.bench.example.org');

const run = (req: FakeRequest) => answerAs(handler, req, '200 OK', 'HIT');

console.log(`Node ${process.version}, ${cpus()[0]?.model ?? 'cpu'} x${cpus().length}`);
for (let round = 1; round <= rounds; round++) {
  const bench = new Bench({ time: 1000, warmupTime: 300 });
  bench.add('cache hit, 1 cache rule', () => run(oneRule));
  bench.add('cache hit after the 20 rules', () => run(twenty));
  await bench.run();
  const ns = bench.tasks.map((task) => {
    const ops = (task.result as { throughput?: { mean: number } } | undefined)?.throughput?.mean ?? 0;
    return ops > 0 ? 1e9 / ops : 0;
  });
  console.log(
    `round ${round}: 1 rule ${Math.round(ns[0]!)} ns, 20 rules ${Math.round(ns[1]!)} ns, ` +
      `the 20 rules' share ${Math.round(ns[1]! - ns[0]!)} ns`,
  );
}
await edge.close();
await origin.close();
