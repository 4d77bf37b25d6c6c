// Where the optimize rule's HTML work runs (issue 13 item 6): in the edge process (our one-pass minifier and Markdown
// converter, edge-node/src/rules/optimize-html.ts, called inline and on the edge's HTML thread, which the edge uses
// for bodies of 64 KiB and more) or in workerd, the `workerd` package's binary started here on
// 127.0.0.1 with a worker, each answer a round trip over HTTP as the edge would make it. Over workerd: an echo (the
// round trip alone, the floor of any workerd path), HTMLRewriter dropping comments and collapsing text white space
// (the same minification done by workerd's own streaming rewriter; also with comments only, its cheapest use), and our minifier and converter bundled into the
// worker (the same JavaScript in workerd's V8). Generated HTML of 20 KiB and 1 MiB.
// Run: node --import tsx bench/edge-node/optimize-html.bench.ts
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { connect, createServer, type AddressInfo } from 'node:net';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from 'esbuild';
import { Bench } from 'tinybench';
import { htmlToMarkdown, minifyHtml } from '../../edge-node/src/rules/optimize-html.js';
import { onThread } from '../../edge-node/src/rules/optimize-thread-client.js';

/** The binary's path from the package (its platform package's file: no install script needed). */
const workerdBin = (createRequire(import.meta.url)('workerd') as { default: string }).default;

function page(bytes: number): string {
  let s = '<!doctype html>\n<html>\n  <head>\n    <title>Catalogue</title>\n  </head>\n  <body>\n    <!-- list -->\n';
  for (let i = 0; s.length < bytes; i++)
    s +=
      `    <div class="item" id="p${i}">\n      <h2>Product   ${i}</h2>\n      <p>A <b>fine</b> thing, ` +
      `<a href="/product/${(i * 2654435761) >>> 0}">see   more</a>.</p>\n      <ul>\n        <li>${(i % 97) + 0.99} EUR` +
      `</li>\n        <li>in stock</li>\n      </ul>\n    </div>\n`;
  return `${s}  </body>\n</html>\n`;
}
const SIZES = [['20 KiB', page(20 * 1024)] as const, ['1 MiB', page(1024 * 1024)] as const];

const WORKER = `
import { htmlToMarkdown, minifyHtml } from './optimize-html.js';
export default {
  async fetch(req) {
    const path = new URL(req.url).pathname;
    if (path === '/echo') return new Response(req.body, { headers: { 'content-type': 'text/html' } });
    if (path === '/ours-minify') return new Response(minifyHtml(await req.text()));
    if (path === '/ours-markdown') return new Response(htmlToMarkdown(await req.text()));
    if (path === '/rewriter-comments')
      return new HTMLRewriter()
        .onDocument({ comments(c) { if (!c.text.startsWith('[if')) c.remove(); } })
        .transform(new Response(req.body, { headers: { 'content-type': 'text/html' } }));
    let keep = 0;
    return new HTMLRewriter()
      .on('pre, textarea, script, style', { element(e) { keep++; e.onEndTag(() => { keep--; }); } })
      .onDocument({
        comments(c) { if (!c.text.startsWith('[if')) c.remove(); },
        text(t) { if (keep === 0 && t.text !== '') t.replace(t.text.replace(/[\\t\\n\\f\\r ]+/g, ' '), { html: true }); },
      })
      .transform(new Response(req.body, { headers: { 'content-type': 'text/html' } }));
  },
};
`;

async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as AddressInfo).port;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

async function waitForPort(port: number, ms: number): Promise<void> {
  const until = Date.now() + ms;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = connect(port, '127.0.0.1');
      s.once('connect', () => {
        s.destroy();
        resolve(true);
      });
      s.once('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > until) throw new Error(`workerd did not listen on ${port}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

// The worker: our module bundled (with the entities decoder) beside the entry, served by workerd on a free port.
const dir = mkdtempSync(join(tmpdir(), 'workerd-bench-'));
const bundled = await build({
  entryPoints: [new URL('../../edge-node/src/rules/optimize-html.ts', import.meta.url).pathname],
  bundle: true,
  format: 'esm',
  write: false,
  platform: 'neutral',
});
writeFileSync(join(dir, 'optimize-html.js'), bundled.outputFiles[0].text);
writeFileSync(join(dir, 'worker.js'), WORKER);
const port = await freePort();
writeFileSync(
  join(dir, 'config.capnp'),
  `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [ (name = "main", worker = .w) ],
  sockets = [ (name = "http", address = "127.0.0.1:${port}", http = (), service = "main") ],
);
const w :Workerd.Worker = (
  modules = [ (name = "worker.js", esModule = embed "worker.js"), (name = "optimize-html.js", esModule = embed "optimize-html.js") ],
  compatibilityDate = "2025-01-01",
);
`,
);
const child = spawn(workerdBin, ['serve', join(dir, 'config.capnp')], { stdio: ['ignore', 'inherit', 'inherit'] });
const stop = () => {
  if (child.exitCode === null) child.kill('SIGTERM');
  rmSync(dir, { recursive: true, force: true });
};
process.on('exit', stop);

const agent = new Agent({ keepAlive: true, maxSockets: 1 });
function roundTrip(path: string, body: Buffer): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path,
        method: 'POST',
        agent,
        headers: { 'content-type': 'text/html', 'content-length': body.length },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve(Buffer.concat(chunks)));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

try {
  await waitForPort(port, 20_000);
  const version = await new Promise<string>((resolve) => {
    const v = spawn(workerdBin, ['--version']);
    let out = '';
    v.stdout.on('data', (c: Buffer) => (out += c.toString()));
    v.on('close', () => resolve(out.trim()));
  });
  // The workerd paths give the same answers as the library (checked once, outside the timing).
  for (const [, html] of SIZES) {
    const b = Buffer.from(html);
    if (!(await roundTrip('/echo', b)).equals(b)) throw new Error('echo differs');
    if ((await roundTrip('/ours-minify', b)).toString('latin1') !== minifyHtml(b.toString('latin1')))
      throw new Error('minify in workerd differs');
    if ((await roundTrip('/ours-markdown', b)).toString() !== htmlToMarkdown(html))
      throw new Error('markdown in workerd differs');
  }

  const outSize: Record<string, number> = {};
  // HTMLRewriter with a text handler takes seconds on 1 MiB: a few iterations suffice (tinybench's default is 64).
  const bench = new Bench({ time: 1000, warmupTime: 100, iterations: 4, warmupIterations: 1 });
  /** A task whose output length is recorded for the table. */
  const add = (task: string, run: () => number | Promise<number>) =>
    bench.add(task, async () => {
      outSize[task] = await run();
    });
  for (const [name, html] of SIZES) {
    const body = Buffer.from(html);
    add(`${name}: library, minify (anchor)`, () => Buffer.from(minifyHtml(body.toString('latin1')), 'latin1').length);
    add(`${name}: library, Markdown`, () => Buffer.from(htmlToMarkdown(body.toString('utf8'))).length);
    add(
      `${name}: library on the edge's HTML thread, minify`,
      async () => (await onThread('html', body, undefined))!.length,
    );
    add(
      `${name}: library on the edge's HTML thread, Markdown`,
      async () => (await onThread('markdown', body, undefined))!.length,
    );
    add(`${name}: workerd, echo (round trip only)`, async () => (await roundTrip('/echo', body)).length);
    add(`${name}: workerd, HTMLRewriter minify`, async () => (await roundTrip('/rewriter', body)).length);
    add(
      `${name}: workerd, HTMLRewriter comments only`,
      async () => (await roundTrip('/rewriter-comments', body)).length,
    );
    add(`${name}: workerd, our minify`, async () => (await roundTrip('/ours-minify', body)).length);
    add(`${name}: workerd, our Markdown`, async () => (await roundTrip('/ours-markdown', body)).length);
  }
  await bench.run();
  console.log(`Node ${process.version}, ${version}, ${cpus()[0]?.model ?? 'cpu'} x${cpus().length}`);
  const anchor: Record<string, number> = {};
  console.table(
    bench.tasks.map((task) => {
      const r = task.result as { throughput?: { mean: number }; latency?: { p99?: number } } | undefined;
      const ops = r?.throughput?.mean ?? 0;
      const us = ops > 0 ? 1e6 / ops : 0;
      const size = task.name.split(':')[0];
      if (task.name.includes('anchor')) anchor[size] = us;
      const bytes = Buffer.byteLength(SIZES.find(([n]) => n === size)![1]);
      return {
        task: task.name,
        'µs/answer': Math.round(us),
        'p99 µs': Math.round((r?.latency?.p99 ?? 0) * 1000),
        'x anchor': anchor[size] ? +(us / anchor[size]).toFixed(2) : 0,
        'size out': `${((outSize[task.name] / bytes) * 100).toFixed(1)} %`,
      };
    }),
  );
} finally {
  agent.destroy();
  stop();
}
