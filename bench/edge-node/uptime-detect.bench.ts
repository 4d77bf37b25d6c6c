// Micro-benchmark of uptime detection at the edge (issue 14): what counting a proxied request's origin outcome per
// minute and hostname (OriginMinuteCounts.add) costs on top of the request-log record the edge already writes for
// every request (the anchor), with one hostname, 100 and 10,000 hostnames. The clock is read once per request by
// the log record and handed to the counter, so the counter's rows take it as given.
// Run: node --import tsx bench/edge-node/uptime-detect.bench.ts
import { cpus } from 'node:os';
import { Bench } from 'tinybench';
import { parsePeerAddress } from '@platform/shared/match';
import { RequestContext } from '../../edge-node/src/context.js';
import { RequestLogBuffer } from '../../edge-node/src/log/buffer.js';
import { OriginMinuteCounts } from '../../edge-node/src/log/origin-minutes.js';

function contexts(hosts: number): RequestContext[] {
  return Array.from({ length: Math.max(hosts, 64) }, (_, i) => {
    const ctx = new RequestContext({
      method: 'GET',
      host: `h${i % hosts}.example.org`,
      path: '/api/items',
      query: '',
      headers: [],
      peer: parsePeerAddress('192.0.2.7'),
      scheme: 'https',
      startedAt: performance.now(),
    });
    ctx.status = i % 10 === 0 ? 502 : 200;
    ctx.upstreamMs = i % 10 === 0 ? -1 : 12.5;
    return ctx;
  });
}

let k = 0;
const bench = new Bench({ time: 800, warmupTime: 200 });
const one = contexts(1);
const hundred = contexts(100);
const many = contexts(10_000);
// The anchor: the whole request-log record (now including the count), drained as the shipper would.
const buffer = new RequestLogBuffer(1_000_000);
bench.add('anchor: request-log record (RequestLogBuffer.add, counting included)', () => {
  buffer.add(hundred[k++ % hundred.length]);
  if (buffer.size >= 500_000) {
    buffer.drain();
    buffer.origins.drain();
  }
});
for (const [name, ctxs] of [
  ['1 hostname', one],
  ['100 hostnames', hundred],
  ['10,000 hostnames', many],
] as const) {
  const counts = new OriginMinuteCounts();
  let n = 0;
  const now = Date.now();
  bench.add(`detection only: OriginMinuteCounts.add, ${name}`, () => {
    counts.add(ctxs[k++ % ctxs.length], now + (n >> 20));
    if (++n % 1_000_000 === 0) counts.drain();
  });
}
await bench.run();
console.log(`Node ${process.version}, ${cpus()[0]?.model ?? 'cpu'} x${cpus().length}`);
const anchor = (bench.tasks[0].result as { throughput?: { mean: number } } | undefined)?.throughput?.mean ?? 0;
console.table(
  bench.tasks.map((task) => {
    const ops = (task.result as { throughput?: { mean: number } } | undefined)?.throughput?.mean ?? 0;
    return {
      task: task.name,
      'ops/s': Math.round(ops),
      'ns/op': ops > 0 ? Math.round(1e9 / ops) : 0,
      'vs anchor (time)': ops > 0 && anchor > 0 ? (anchor / ops).toFixed(2) : '',
    };
  }),
);
