// How long a cache inventory snapshot (edge-node/src/cache/inventory.ts) holds the serving process: 1,000,000 cached
// entries over 100 domains, the snapshot taken and packed in slices (VISIT_SLICE entries, then a turn of the event
// loop) beside the anchor, the same work done at once. Reported: the longest time the event loop was held, and the
// total, median of 7 rounds after 3 warm-up rounds. `npm run bench cache-inventory`.
import { pack } from 'msgpackr';
import { EdgeCache } from '../../edge-node/src/cache/store.js';
import { INVENTORY_LIMITS, packReport, takeInventory } from '../../edge-node/src/cache/inventory.js';

const now = Date.now();
const cache = new EdgeCache();
const body = Buffer.alloc(100);
for (let d = 0; d < 100; d++)
  for (let i = 0; i < 10_000; i++)
    cache.set(
      `d${d}.example`,
      0,
      `https://www.d${d}.example/some/path/${i}.css?`,
      {
        status: 200,
        headers: [['content-type', 'text/css']],
        body,
        storedAt: now,
        freshUntil: now + 1e6,
        expiresAt: now + 1e7,
        shared: false,
      },
      1 << 30,
    );
const head = { node: 'edge-bench-1', report: '0123456789abcdef-1', at: now, address: '' };
const immediate = () => new Promise<void>((r) => setImmediate(r));

async function sliced(): Promise<{ longest: number; total: number }> {
  let longest = 0;
  let last = performance.now();
  const pause = async () => {
    longest = Math.max(longest, performance.now() - last);
    await immediate();
    last = performance.now();
  };
  const t0 = performance.now();
  await packReport(head, await takeInventory(cache, INVENTORY_LIMITS, now, pause), pause);
  longest = Math.max(longest, performance.now() - last);
  return { longest, total: performance.now() - t0 };
}

async function atOnce(): Promise<{ longest: number; total: number }> {
  const none = async () => undefined;
  const t0 = performance.now();
  const domains = await takeInventory(cache, INVENTORY_LIMITS, now, none);
  pack({ ...head, domains });
  const total = performance.now() - t0;
  return { longest: total, total };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const rows: Record<string, string>[] = [];
for (const [name, fn] of [
  ['at once (anchor)', atOnce],
  ['in slices', sliced],
] as const) {
  for (let i = 0; i < 3; i++) await fn();
  const runs = [];
  for (let i = 0; i < 7; i++) runs.push(await fn());
  rows.push({
    snapshot: name,
    'longest hold (ms)': median(runs.map((r) => r.longest)).toFixed(1),
    'total (ms)': median(runs.map((r) => r.total)).toFixed(1),
  });
}
console.table(rows);
console.log(
  `longest hold, in slices / at once: ${(Number(rows[1]['longest hold (ms)']) / Number(rows[0]['longest hold (ms)'])).toFixed(3)}`,
);
