// Micro-benchmark of the edge's path normalisation (issue 10 item 3): the common case, a path already in normal form
// (one scan, nothing allocated), against paths that are rebuilt, and the cost of reading the path at all.
// Run: node --import tsx bench/edge-node/normalise-path.bench.ts
import { cpus } from 'node:os';
import { Bench } from 'tinybench';
import { normalisePath } from '@platform/shared/match';

const NORMAL = ['/', '/index.html', '/assets/site.css', '/api/v1/users/12345/orders', '/caf%C3%A9/menu', '/r42/x/y'];
const REBUILT = ['/%6Fpenapi.json', '//api//v1/users', '/a/./b/../c', '/caf%c3%a9/menu', '/x/%2E%2E/openapi.json'];

let k = 0;
let sink = 0;
const bench = new Bench({ time: 800, warmupTime: 200 });
bench.add('floor: read the path (length)', () => {
  sink += NORMAL[k++ % NORMAL.length].length;
});
bench.add('normalisePath, already normal', () => {
  sink += normalisePath(NORMAL[k++ % NORMAL.length]).length;
});
bench.add('normalisePath, rebuilt', () => {
  sink += normalisePath(REBUILT[k++ % REBUILT.length]).length;
});
await bench.run();
console.log(`Node ${process.version}, ${cpus()[0]?.model ?? 'cpu'} x${cpus().length} (sink ${sink > 0})`);
console.table(
  bench.tasks.map((task) => {
    const ops = (task.result as { throughput?: { mean: number } } | undefined)?.throughput?.mean ?? 0;
    return { task: task.name, 'ops/s': Math.round(ops), 'ns/op': ops > 0 ? Math.round(1e9 / ops) : 0 };
  }),
);
