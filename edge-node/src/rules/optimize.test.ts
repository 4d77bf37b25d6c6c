// optimize rules through a running edge node: negotiated brotli/gzip compression of origin answers, what is never
// compressed, dry run, cached variants per Accept-Encoding class, and a large chunked body round-trip.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { brotliDecompressSync, gunzipSync, gzipSync } from 'node:zlib';
import { validateRule } from '@platform/shared/match';
import { proxiedRecord, rule, snapshot, startStubOrigin, startTestEdge } from '../testing/harness.js';

interface Raw {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

function get(port: number, host: string, path: string, headers: Record<string, string> = {}, method = 'GET') {
  return new Promise<Raw>((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, path, method, agent: false, headers: { host, ...headers } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end();
  });
}

function decoded(r: Raw): string {
  const ce = r.headers['content-encoding'];
  if (ce === 'br') return brotliDecompressSync(r.body).toString();
  if (ce === 'gzip') return gunzipSync(r.body).toString();
  assert.equal(ce, undefined);
  return r.body.toString();
}

const PAGE = `<!doctype html><title>t</title>${'<p>Hello, compressible world.</p>\n'.repeat(200)}`;
/** A large answer of text that compresses but not trivially (a counter and a hash-like word per line). */
function bigText(lines: number): string {
  let s = '';
  for (let i = 0; i < lines; i++) s += `line ${i} ${((i * 2654435761) >>> 0).toString(36)} lorem ipsum dolor\n`;
  return s;
}
const BIG = bigText(150_000); // about 5 MiB

test('optimize: negotiated compression at the edge', { timeout: 120_000 }, async (t) => {
  let originHits = 0;
  const origin = await startStubOrigin('opt', (req, res) => {
    originHits++;
    const url = req.url ?? '/';
    if (url.startsWith('/big')) {
      res.setHeader('content-type', 'text/plain; charset=utf-8');
      // Chunked, in 64 KiB writes.
      let off = 0;
      const step = () => {
        while (off < BIG.length) {
          const part = BIG.slice(off, off + 65536);
          off += 65536;
          if (!res.write(part)) return void res.once('drain', step);
        }
        res.end();
      };
      step();
      return;
    }
    if (url.startsWith('/gz')) {
      res.setHeader('content-type', 'text/html');
      res.setHeader('content-encoding', 'gzip');
      res.end(gzipSync(PAGE));
      return;
    }
    if (url.startsWith('/small')) {
      res.setHeader('content-type', 'text/html');
      res.end('<p>tiny</p>');
      return;
    }
    if (url.startsWith('/png')) {
      res.setHeader('content-type', 'image/png');
      res.end(Buffer.alloc(4096, 7));
      return;
    }
    if (url.startsWith('/range')) {
      res.writeHead(206, { 'content-type': 'text/html', 'content-range': `bytes 0-1999/${PAGE.length}` });
      res.end(PAGE.slice(0, 2000));
      return;
    }
    if (url.startsWith('/no-transform')) {
      res.setHeader('content-type', 'text/html');
      res.setHeader('cache-control', 'no-transform');
      res.end(PAGE);
      return;
    }
    res.setHeader('content-type', 'text/html; charset=utf-8');
    res.setHeader('etag', '"v1"');
    if (url.startsWith('/cached')) res.setHeader('cache-control', 'max-age=60');
    res.end(PAGE);
  });
  t.after(() => origin.close());
  const optimize = rule('optimize', { min_size: 1024 });
  const dry = rule('optimize', { action_mode: 'dry_run', host_includes: ['dry.example.org'] });
  const gzipOnly = rule('optimize', { compression: ['gzip'], host_includes: ['gz.example.org'] });
  const cache = rule('cache', { path_includes: ['/cached/*'], edge_ttl: 60 });
  const edge = await startTestEdge(t, [
    snapshot('example.org', {
      records: [proxiedRecord('www', origin.port), proxiedRecord('dry', origin.port), proxiedRecord('gz', origin.port)],
      rules: [{ ...dry, priority: 10 }, { ...gzipOnly, priority: 20 }, { ...optimize, priority: 30 }, cache],
    }),
  ]);
  const port = edge.node.server.httpPort;
  const www = 'www.example.org';

  await t.test('br for a client that takes br and gzip; gzip for one that takes gzip only', async () => {
    const br = await get(port, www, '/page', { 'accept-encoding': 'gzip, deflate, br' });
    assert.equal(br.status, 200);
    assert.equal(br.headers['content-encoding'], 'br');
    assert.equal(br.headers['content-length'], undefined);
    assert.match(String(br.headers['vary']), /accept-encoding/i);
    assert.equal(br.headers['etag'], 'W/"v1"');
    assert.ok(br.body.length < PAGE.length / 4, `compressed to ${br.body.length}`);
    assert.equal(decoded(br), PAGE);
    const log = edge.node.logs.drain();
    assert.ok(log.some((r) => r.rules.some(([id, type, d]) => id === optimize.id && type === 'optimize' && !d)));

    const gz = await get(port, www, '/page', { 'accept-encoding': 'gzip' });
    assert.equal(gz.headers['content-encoding'], 'gzip');
    assert.equal(decoded(gz), PAGE);
  });

  await t.test('identity and q=0: sent as the origin sent it, with Vary', async () => {
    const none = await get(port, www, '/page');
    assert.equal(none.headers['content-encoding'], undefined);
    assert.equal(none.headers['etag'], '"v1"');
    assert.match(String(none.headers['vary']), /accept-encoding/i);
    assert.equal(none.body.toString(), PAGE);
    for (const ae of ['br;q=0, gzip;q=0', 'identity', '*;q=0', 'gzip;q=0.000, br']) {
      const r = await get(port, www, '/page', { 'accept-encoding': ae });
      assert.equal(r.headers['content-encoding'], undefined, ae);
      assert.equal(r.body.toString(), PAGE, ae);
    }
    const noBr = await get(port, www, '/page', { 'accept-encoding': 'gzip, br;q=0' });
    assert.equal(noBr.headers['content-encoding'], 'gzip');
    assert.equal(decoded(noBr), PAGE);
    const star = await get(port, www, '/page', { 'accept-encoding': '*' });
    assert.equal(star.headers['content-encoding'], 'br');
  });

  await t.test('never compressed: encoded, small, other types, no-transform, HEAD, ranges', async () => {
    const ae = { 'accept-encoding': 'gzip, br' };
    const gz = await get(port, www, '/gz', ae);
    assert.equal(gz.headers['content-encoding'], 'gzip', 'passed through, not compressed twice');
    assert.equal(gunzipSync(gz.body).toString(), PAGE);
    const small = await get(port, www, '/small', ae);
    assert.equal(small.headers['content-encoding'], undefined);
    assert.equal(small.body.toString(), '<p>tiny</p>');
    const png = await get(port, www, '/png', ae);
    assert.equal(png.headers['content-encoding'], undefined);
    assert.equal(png.body.length, 4096);
    const nt = await get(port, www, '/no-transform', ae);
    assert.equal(nt.headers['content-encoding'], undefined);
    assert.equal(nt.body.toString(), PAGE);
    const range = await get(port, www, '/range', { ...ae, range: 'bytes=0-1999' });
    assert.equal(range.status, 206);
    assert.equal(range.headers['content-encoding'], undefined);
    assert.equal(range.body.toString(), PAGE.slice(0, 2000));
    const head = await get(port, www, '/page', ae, 'HEAD');
    assert.equal(head.status, 200);
    assert.equal(head.headers['content-encoding'], undefined);
  });

  await t.test('a rule listing gzip only never sends br', async () => {
    const r = await get(port, 'gz.example.org', '/page', { 'accept-encoding': 'br, gzip' });
    assert.equal(r.headers['content-encoding'], 'gzip');
    assert.equal(decoded(r), PAGE);
  });

  await t.test('dry run: a dry hit, the next rule decides', async () => {
    edge.node.logs.drain();
    const r = await get(port, 'dry.example.org', '/page', { 'accept-encoding': 'br, gzip' });
    // The zone-wide enforced rule (priority 30) still applies after the dry one is recorded.
    assert.equal(r.headers['content-encoding'], 'br');
    const log = edge.node.logs.drain();
    assert.ok(log.some((l) => l.rules.some(([id, , d]) => id === dry.id && d)));
    assert.ok(log.some((l) => l.rules.some(([id, , d]) => id === optimize.id && !d)));
  });

  await t.test('cached variants: each Accept-Encoding class gets its own copy', async () => {
    const before = originHits;
    const br1 = await get(port, www, '/cached/a', { 'accept-encoding': 'gzip, deflate, br' });
    assert.equal(br1.headers['x-cache-status'], 'MISS');
    assert.equal(br1.headers['content-encoding'], 'br');
    const id1 = await get(port, www, '/cached/a');
    assert.equal(id1.headers['x-cache-status'], 'MISS', 'a client without Accept-Encoding is not served brotli');
    assert.equal(id1.headers['content-encoding'], undefined);
    const br2 = await get(port, www, '/cached/a', { 'accept-encoding': 'br, gzip' });
    assert.equal(br2.headers['x-cache-status'], 'HIT');
    assert.equal(br2.headers['content-encoding'], 'br');
    assert.equal(decoded(br2), PAGE);
    const gz1 = await get(port, www, '/cached/a', { 'accept-encoding': 'gzip' });
    assert.equal(gz1.headers['x-cache-status'], 'MISS');
    assert.equal(gz1.headers['content-encoding'], 'gzip');
    const gz2 = await get(port, www, '/cached/a', { 'accept-encoding': 'gzip;q=0.5' });
    assert.equal(gz2.headers['x-cache-status'], 'HIT');
    assert.equal(decoded(gz2), PAGE);
    const id2 = await get(port, www, '/cached/a', { 'accept-encoding': 'br;q=0, gzip;q=0' });
    assert.equal(id2.headers['x-cache-status'], 'HIT');
    assert.equal(id2.headers['content-encoding'], undefined);
    assert.equal(id2.body.toString(), PAGE);
    assert.equal(originHits - before, 3, 'one origin request per class');
  });

  await t.test('a large chunked body decompresses to the same bytes (br and gzip)', async () => {
    for (const ae of ['br, gzip', 'gzip']) {
      const r = await get(port, www, '/big', { 'accept-encoding': ae });
      assert.equal(r.status, 200);
      assert.equal(r.headers['content-encoding'], ae === 'gzip' ? 'gzip' : 'br');
      assert.ok(r.body.length < BIG.length / 2);
      assert.ok(decoded(r) === BIG, `${ae}: same bytes`);
    }
  });

  await t.test('a slow reader: the answer is complete (backpressure, not buffering)', async () => {
    const body = await new Promise<Buffer>((resolve, reject) => {
      const req = request(
        { host: '127.0.0.1', port, path: '/big/slow', agent: false, headers: { host: www, 'accept-encoding': 'gzip' } },
        (res) => {
          const chunks: Buffer[] = [];
          res.pause();
          setTimeout(() => res.resume(), 500);
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve(Buffer.concat(chunks)));
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end();
    });
    assert.ok(gunzipSync(body).toString() === BIG);
  });

  await t.test('a client gone mid-answer: the exchange ends and is logged', async () => {
    edge.node.logs.drain();
    await new Promise<void>((resolve) => {
      const req = request(
        { host: '127.0.0.1', port, path: '/big/gone', agent: false, headers: { host: www, 'accept-encoding': 'br' } },
        (res) => {
          res.once('data', () => {
            req.destroy();
            resolve();
          });
        },
      );
      req.on('error', () => resolve());
      req.end();
    });
    // The request is logged once the compressor is closed.
    for (let i = 0; i < 100; i++) {
      if (edge.node.logs.drain().some((r) => r.path === '/big/gone')) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.fail('the aborted exchange was never logged');
  });
});

test('optimize rule fields: defaults, and 400 problems for bad or oversized input', () => {
  const ok = validateRule('optimize', {});
  assert.ok(ok.ok);
  assert.deepEqual(ok.value.fields, {
    compression: ['br', 'gzip'],
    content_types: [],
    min_size: 1024,
    minify_html: false,
    minify_css: false,
    minify_js: false,
    markdown_for_agents: false,
    image_format: 'original',
  });
  const own = validateRule('optimize', { compression: [], content_types: ['Text/*', 'application/json'] });
  assert.ok(own.ok);
  assert.deepEqual(own.value.fields.compression, []);
  assert.deepEqual(own.value.fields.content_types, ['text/*', 'application/json']);
  const bad: [Record<string, unknown>, string][] = [
    [{ compression: ['deflate'] }, 'compression[0]'],
    [{ compression: ['br', 'br'] }, 'compression[1]'],
    [{ compression: ['br', 'gzip', 'zstd'] }, 'compression'],
    [{ compression: 'br' }, 'compression'],
    [{ content_types: ['html'] }, 'content_types[0]'],
    [{ content_types: ['*/*'] }, 'content_types[0]'],
    [{ content_types: [`text/${'x'.repeat(200)}`] }, 'content_types[0]'],
    [{ content_types: Array.from({ length: 33 }, () => 'text/html') }, 'content_types'],
    [{ content_types: Array.from({ length: 1_000_000 }, () => 'text/html') }, 'content_types'],
    [{ min_size: -1 }, 'min_size'],
    [{ min_size: 1e12 }, 'min_size'],
    [{ image_format: 'jpegxl' }, 'image_format'],
    [{ brotli_quality: 11 }, 'brotli_quality'],
  ];
  for (const [body, path] of bad) {
    const v = validateRule('optimize', body);
    assert.equal(v.ok, false, JSON.stringify(body).slice(0, 80));
    if (!v.ok)
      assert.ok(
        v.problems.some((p) => p.path === path),
        `${path}: ${JSON.stringify(v.problems)}`,
      );
  }
});
