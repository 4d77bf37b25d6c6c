// Micro-benchmark of uptime detection at the edge (issue 14): what counting a proxied request's origin outcome per
// minute and hostname (OriginMinuteCounts.add) costs on top of the request-log record the edge already writes for
// every request (the anchor), with one hostname, 100 and 10,000 hostnames. The clock is read once per request by
// the log record and handed to the counter, so the counter's rows take it as given. The probe rows: what deciding
// whether a watched scope is thin costs per logged record, read off the proxied path when the shipper drains the
// batch (UptimeProber.observe), for a hostname no monitor watches and for one watched by 20 monitor scopes.
// Run: node --import tsx bench/edge-node/uptime-detect.bench.ts
import { cpus } from 'node:os';
import { Bench } from 'tinybench';
import { parsePeerAddress } from '@platform/shared/match';
import { RequestContext } from '../../edge-node/src/context.js';
import { RequestLogBuffer } from '../../edge-node/src/log/buffer.js';
import { OriginMinuteCounts } from '../../edge-node/src/log/origin-minutes.js';
import type { RequestLogRecord } from '../../edge-node/src/log/buffer.js';
import { compileDomain, DomainTable } from '../../edge-node/src/store/snapshot.js';
import { proxiedRecord, snapshot } from '../../edge-node/src/testing/harness.js';
import { UptimeProber } from '../../edge-node/src/uptime/probes.js';

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
// Probes: a domain whose www has 20 monitors (paths /m0/* … /m19/*), planned once as the prober does each minute.
const table = new DomainTable();
table.set(
  compileDomain(
    snapshot('probed.example.org', {
      records: [proxiedRecord('www', 8080, { monitor: true }), proxiedRecord('other', 8080)],
      settings: {
        uptime: {
          minRequestsPerMinute: 20,
          monitors: Array.from({ length: 20 }, (_, i) => ({
            id: i + 1,
            hostMatchType: 'exact',
            hostIncludes: ['www.probed.example.org'],
            hostExcludes: [],
            pathMatchType: 'wildcard',
            pathIncludes: [`/m${i}/*`],
            pathExcludes: [],
          })),
        },
      },
    }),
  ),
);
const prober = new UptimeProber(table, { probe: async () => 200 }, { rule: { nodeBudgetPerMinute: 0 } });
prober.tick();
const logged = (host: string): RequestLogRecord[] =>
  Array.from({ length: 64 }, (_, i) => ({
    t: Date.now(),
    host,
    path: `/m${i % 25}/items`,
    method: 'GET',
    status: 200,
    bytes: 10,
    cache: '',
    rules: [],
    ms: 3,
    upstreamMs: 2,
    peer: '192.0.2.7',
  }));
for (const [name, records] of [
  ['hostname not watched', logged('other.probed.example.org')],
  ['hostname with 20 monitor scopes', logged('www.probed.example.org')],
] as const)
  bench.add(`probes: UptimeProber.observe per shipped record, ${name}`, () => {
    prober.observe([], [records[k++ % records.length]!]);
  });
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
