// Cost of the optimize rule's on-the-fly compression (issue 13 item 6): one answer pushed through the edge's streaming
// compressor (createCompressor, as forward.ts uses it: 16 KiB chunks in), against the anchor of the same chunks
// through a PassThrough stream (what an uncompressed answer costs at least). Brotli's default quality 11 is shown for
// why the edge uses 4. Run: node --import tsx bench/edge-node/optimize.bench.ts
import { cpus } from 'node:os';
import { PassThrough, type Transform } from 'node:stream';
import { constants, createBrotliCompress } from 'node:zlib';
import { Bench } from 'tinybench';
import { createCompressor } from '../../edge-node/src/rules/optimize.js';

function page(bytes: number): Buffer {
  let s = '<!doctype html><html><head><title>Catalogue</title></head><body>\n';
  for (let i = 0; s.length < bytes; i++)
    s += `<div class="item" id="p${i}"><a href="/product/${(i * 2654435761) >>> 0}">Product ${i}</a> <span>${(i % 97) + 0.99} EUR</span></div>\n`;
  return Buffer.from(s.slice(0, bytes));
}
const SIZES = [['20 KiB HTML', page(20 * 1024)] as const, ['1 MiB HTML', page(1024 * 1024)] as const];

let outBytes = 0;
function pump(t: Transform, body: Buffer): Promise<number> {
  return new Promise((resolve, reject) => {
    let n = 0;
    t.on('data', (c: Buffer) => (n += c.length));
    t.on('end', () => resolve(n));
    t.on('error', reject);
    for (let off = 0; off < body.length; off += 16384) t.write(body.subarray(off, off + 16384));
    t.end();
  });
}

const ratios: Record<string, number> = {};
const bench = new Bench({ time: 1000, warmupTime: 200 });
for (const [name, body] of SIZES) {
  bench.add(`${name}: anchor, PassThrough`, async () => {
    outBytes += await pump(new PassThrough(), body);
  });
  bench.add(`${name}: gzip level 6`, async () => {
    const n = await pump(createCompressor('gzip', body.length), body);
    ratios[`${name}: gzip level 6`] = n / body.length;
    outBytes += n;
  });
  bench.add(`${name}: brotli quality 4`, async () => {
    const n = await pump(createCompressor('br', body.length), body);
    ratios[`${name}: brotli quality 4`] = n / body.length;
    outBytes += n;
  });
  if (body.length <= 20 * 1024)
    bench.add(`${name}: brotli quality 11 (not used)`, async () => {
      const z = createBrotliCompress({ params: { [constants.BROTLI_PARAM_SIZE_HINT]: body.length } });
      const n = await pump(z, body);
      ratios[`${name}: brotli quality 11 (not used)`] = n / body.length;
      outBytes += n;
    });
}
await bench.run();
console.log(`Node ${process.version}, ${cpus()[0]?.model ?? 'cpu'} x${cpus().length} (out ${outBytes > 0})`);
const anchor: Record<string, number> = {};
console.table(
  bench.tasks.map((task) => {
    const ops = (task.result as { throughput?: { mean: number } } | undefined)?.throughput?.mean ?? 0;
    const us = ops > 0 ? 1e6 / ops : 0;
    const size = task.name.split(':')[0];
    if (task.name.includes('anchor')) anchor[size] = us;
    const bytes = SIZES.find(([n]) => n === size)![1].length;
    return {
      task: task.name,
      'µs/answer': Math.round(us),
      'MB/s in': us > 0 ? Math.round(bytes / us) : 0,
      'x anchor': anchor[size] ? +(us / anchor[size]).toFixed(1) : 0,
      'size out': ratios[task.name] ? `${(ratios[task.name] * 100).toFixed(1)} %` : '100 %',
    };
  }),
);
