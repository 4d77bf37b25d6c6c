// Micro-benchmark of attack detection's ingest (issue 13 item 8): what counting one shipped request-log record per
// domain and minute costs (tallyRecords: requests, errors, the busiest 64 client addresses, 16 hosts, 16 paths), next
// to the anchor, decoding the same record from the batch's msgpack (work POST /internal/request-logs does for every
// record anyway). Batches of 5000 records (the edge's largest): 100 addresses over 10 domains (ordinary traffic),
// and every record from a new address for a new path (a flood of distinct ones: the summaries keep cutting back).
// Run: node --import tsx bench/control-plane/attack-ingest.bench.ts
import { cpus } from 'node:os';
import { pack, unpack } from 'msgpackr';
import { Bench } from 'tinybench';
import { tallyRecords } from '../../control-plane/src/areas/security/detector.js';

const BATCH = 5000;
const now = Date.now();
const minute = now - (now % 60_000);
let serial = 0;
const batch = (address: (i: number) => string) =>
  Array.from({ length: BATCH }, (_, i) => ({
    t: minute + (i % 60_000),
    host: `www.d${i % 10}.example.org`,
    path: '/api/items',
    method: 'GET',
    status: i % 20 === 0 ? 404 : 200,
    bytes: 512,
    cache: 'MISS',
    rules: [],
    ms: 3.2,
    upstreamMs: 2.5,
    peer: address(i),
  }));
const ordinary = batch((i) => `192.0.2.${i % 100}`);
const packed = pack({ node: 'edge-bench', records: ordinary, minutes: [] });
const domainOf = (host: string) => Number(host.charCodeAt(5));
// The flood: every record from a new address and for a new path.
const distinct = () =>
  batch(() => `2001:db8::${(serial++).toString(16)}`).map((r) => ({ ...r, path: `/p/${serial++}` }));
const floods = Array.from({ length: 8 }, distinct);
let k = 0;

const bench = new Bench({ time: 1000, warmupTime: 200 });
bench.add('anchor: msgpack decode of a 5000-record batch', () => {
  unpack(packed);
});
bench.add('tallyRecords, 5000 records, 100 addresses, 10 domains', () => {
  tallyRecords(ordinary, domainOf, 60_000, minute - 3_600_000, minute + 60_000);
});
bench.add('tallyRecords, 5000 records, every address and path new (eviction)', () => {
  tallyRecords(floods[k++ % floods.length], domainOf, 60_000, minute - 3_600_000, minute + 60_000);
});
await bench.run();
console.log(`Node ${process.version}, ${cpus()[0]?.model ?? 'cpu'} x${cpus().length}`);
const mean = (i: number) => (bench.tasks[i].result as { throughput?: { mean: number } } | undefined)?.throughput?.mean;
const anchor = mean(0) ?? 0;
console.table(
  bench.tasks.map((task, i) => {
    const ops = mean(i) ?? 0;
    return {
      task: task.name,
      'ns/record': ops > 0 ? Math.round(1e9 / ops / BATCH) : 0,
      'vs anchor (time)': ops > 0 && anchor > 0 ? (anchor / ops).toFixed(2) : '',
    };
  }),
);
