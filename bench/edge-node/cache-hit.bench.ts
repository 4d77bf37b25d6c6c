// Micro-benchmark of the edge's cache-hit path (issue 10 item 4): the whole per-request handler of a running edge
// node (headers read, path normalised, host → domain, rules, cache key, cache lookup, answer written) called with a
// stand-in for uWS's request/response objects, so no socket time is counted. The entries are put in the cache by
// real requests through the edge to a stub origin on 127.0.0.1 first, and every timed request is checked to be a HIT.
// Rows: an entry the origin sent without Vary; one sent with `Vary: Accept-Encoding` (a brotli body: the key has
// the client's Accept-Encoding class); the first with the node's request log and counters (state.log as node.ts
// sets it; the other rows log nothing); and the floor (the same handler answering 421 for an unknown host).
// Run: node --import tsx bench/edge-node/cache-hit.bench.ts
import assert from 'node:assert/strict';
import { cpus } from 'node:os';
import { Bench } from 'tinybench';
import { makeHandler } from '../../edge-node/src/server.js';
import type { EdgeState } from '../../edge-node/src/phases.js';
import {
  proxiedRecord,
  rule,
  send,
  snapshot,
  startStubOrigin,
  startTestEdge,
} from '../../edge-node/src/testing/harness.js';
import { BROWSER, FakeRequest, answerAs } from './fake-uws.js';

const origin = await startStubOrigin('bench', (req, res) => {
  res.setHeader('content-type', 'text/css');
  res.setHeader('cache-control', 'public, max-age=600');
  if (req.url?.startsWith('/br/')) {
    res.setHeader('content-encoding', 'br');
    res.setHeader('vary', 'Accept-Encoding');
  }
  res.end('x'.repeat(1024));
});
const edge = await startTestEdge(null, [
  snapshot('bench.example.org', {
    records: [proxiedRecord('www', origin.port)],
    rules: [rule('cache', { path_includes: ['/*'] })],
  }),
]);
const node = edge.node;
const state: EdgeState = {
  table: node.table,
  pools: node.pools,
  cache: node.cache,
  cacheMaxObjectBytes: 8 << 20,
  log: () => {},
};
const handler = makeHandler(state, 'http');
// The same handler with the node's request log and counters, as a serving edge runs it (node.ts).
const logged = makeHandler(
  {
    ...state,
    log: (ctx) => {
      node.requests.count(ctx.status, ctx.cacheStatus);
      node.logs.add(ctx);
    },
  },
  'http',
);
const port = node.server.httpPort;
const headers = (host: string) => [['host', host] as const, ...BROWSER];
for (const path of ['/static/a.css', '/br/a.css']) {
  await send(port, 'www.bench.example.org', path, { headers: Object.fromEntries(BROWSER) });
  const r = await send(port, 'www.bench.example.org', path, { headers: Object.fromEntries(BROWSER) });
  assert.equal(r.headers['x-cache-status'], 'HIT', `${path} is cached before timing`);
}

const plain = new FakeRequest('/static/a.css', '', headers('www.bench.example.org'));
const varied = new FakeRequest('/br/a.css', '', headers('www.bench.example.org'));
const unknown = new FakeRequest('/static/a.css', '', headers('www.unknown.example'));

function run(req: FakeRequest, status: string, cache: string, h = handler): void {
  answerAs(h, req, status, cache);
}

const bench = new Bench({ time: 1000, warmupTime: 300 });
bench.add('floor: handler, unknown host (421)', () => run(unknown, '421 Misdirected Request', ''));
bench.add('cache hit, no Vary', () => run(plain, '200 OK', 'HIT'));
bench.add('cache hit, Vary: Accept-Encoding', () => run(varied, '200 OK', 'HIT'));
bench.add('cache hit, no Vary, with the request log and counters', () => run(plain, '200 OK', 'HIT', logged));
await bench.run();
console.log(`Node ${process.version}, ${cpus()[0]?.model ?? 'cpu'} x${cpus().length}`);
console.table(
  bench.tasks.map((task) => {
    const ops = (task.result as { throughput?: { mean: number } } | undefined)?.throughput?.mean ?? 0;
    return { task: task.name, 'ops/s': Math.round(ops), 'ns/op': ops > 0 ? Math.round(1e9 / ops) : 0 };
  }),
);
await edge.close();
await origin.close();
