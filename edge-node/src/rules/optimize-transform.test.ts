// optimize minification and Markdown for agents through a running edge node: minified HTML, CSS and JavaScript with
// what must not change kept, the Markdown answer for Accept: text/markdown and its own cache entry, dry run, answers
// over the size bound passed through, and abusive HTML (deep nesting, one huge line) answered in bounded time.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { brotliDecompressSync } from 'node:zlib';
import { validateRule } from '@platform/shared/match';
import { proxiedRecord, rule, snapshot, startStubOrigin, startTestEdge } from '../testing/harness.js';
import { htmlToMarkdown, minifyHtml } from './optimize-html.js';
import { THREAD_MIN_BYTES } from './optimize-thread-client.js';
import { TRANSFORM_MAX_BYTES, transformBody, wantsMarkdown } from './optimize-transform.js';

interface Raw {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

function get(port: number, host: string, path: string, headers: Record<string, string> = {}) {
  return new Promise<Raw>((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, agent: false, headers: { host, ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

const PAGE = `<!doctype html>
<html>
  <head>
    <title>Shop</title>
    <style>
      body   { color: red; }
    </style>
    <script>
      var  greeting = "two   spaces";
      if (greeting) { console.log( greeting ) }
    </script>
  </head>
  <body>
    <!-- build 1234 -->
    <!--[if IE]><p>old browser</p><![endif]-->
    <h1>Fresh   &amp;  tasty</h1>
    <p>Our <b>best</b>   <i>apples</i>, see <a href="/apples?x=1&amp;y=2">the list</a>.</p>
    <pre>  indented
      code  </pre>
    <textarea name="t">  keep   me  </textarea>
    <ul>
      <li>one</li>
      <li>two</li>
    </ul>
  </body>
</html>
`;
const CSS = `/* theme */\nbody {\n  color : #ff0000 ;\n  content: "  a   b  ";\n}\n\n.box  >  p { margin : 0px ; }\n`;
const JS = `// helper\nfunction shout(message) {\n  const text = "keep   these   spaces";\n  return message + text;\n}\nwindow.shout = shout;\n`;
/** HTML of about `size` bytes. */
function bigPage(size: number): string {
  let s = '<!doctype html><html><body>\n';
  for (let i = 0; s.length < size; i++) s += `  <div class="row">\n    <p>Row   ${i}   text</p>\n  </div>\n`;
  return `${s}</body></html>\n`;
}
const OVER = bigPage(TRANSFORM_MAX_BYTES + 64 * 1024);
/** Nesting that crashed esbuild's process and took csso minutes. */
const DEEP_JS = `${'('.repeat(200_000)}1${')'.repeat(200_000)}`;
const DEEP_CSS = `${'a{'.repeat(200_000)}${'}'.repeat(200_000)}`;

test('optimize: minification and Markdown for agents at the edge', { timeout: 180_000 }, async (t) => {
  let originHits = 0;
  const origin = await startStubOrigin('opt-html', (req, res) => {
    originHits++;
    const url = req.url ?? '/';
    if (url.startsWith('/style.css')) {
      res.setHeader('content-type', 'text/css');
      res.end(CSS);
    } else if (url.startsWith('/app.js')) {
      res.setHeader('content-type', 'application/javascript; charset=utf-8');
      res.setHeader('etag', '"js1"');
      res.end(JS);
    } else if (url.startsWith('/broken.js')) {
      res.setHeader('content-type', 'text/javascript');
      res.end('function ( {{ not javascript');
    } else if (url.startsWith('/deep.js')) {
      res.setHeader('content-type', 'text/javascript');
      res.end(DEEP_JS);
    } else if (url.startsWith('/deep.css')) {
      res.setHeader('content-type', 'text/css');
      res.end(DEEP_CSS);
    } else if (url.startsWith('/latin1')) {
      res.setHeader('content-type', 'text/html');
      res.end(Buffer.from('<html><head><meta charset="iso-8859-1"></head><body><p>Café crème</p>', 'latin1'));
    } else if (url.startsWith('/over-sized')) {
      res.setHeader('content-type', 'text/html');
      res.end(OVER);
    } else if (url.startsWith('/over-chunked')) {
      res.setHeader('content-type', 'text/html');
      let off = 0;
      const step = () => {
        while (off < OVER.length) {
          const part = OVER.slice(off, off + 65536);
          off += 65536;
          if (!res.write(part)) return void res.once('drain', step);
        }
        res.end();
      };
      step();
    } else if (url.startsWith('/deep')) {
      res.setHeader('content-type', 'text/html');
      const n = 50_000;
      res.end(`${'<div><b>'.repeat(n)}x${'</b></div>'.repeat(n)}`);
    } else if (url.startsWith('/line')) {
      res.setHeader('content-type', 'text/html');
      res.end(`<p>${'word   &amp; <i>x</i> '.repeat(40_000)}</p>`);
    } else if (url.startsWith('/lt')) {
      res.setHeader('content-type', 'text/html');
      res.end('<'.repeat(900_000));
    } else {
      res.setHeader('content-type', 'text/html; charset=utf-8');
      res.setHeader('etag', '"p1"');
      if (url.startsWith('/cached')) res.setHeader('cache-control', 'max-age=60');
      res.end(PAGE);
    }
  });
  t.after(() => origin.close());
  const fields = { minify_html: true, minify_css: true, minify_js: true, markdown_for_agents: true, compression: [] };
  const optimize = rule('optimize', { ...fields, host_excludes: ['plain.example.org', 'dry.example.org'] });
  const dry = rule('optimize', { ...fields, action_mode: 'dry_run', host_includes: ['dry.example.org'] });
  const br = rule('optimize', { ...fields, compression: ['br'], min_size: 0, host_includes: ['br.example.org'] });
  const cache = rule('cache', { path_includes: ['/cached/*'], edge_ttl: 60 });
  const edge = await startTestEdge(t, [
    snapshot('example.org', {
      records: [
        proxiedRecord('www', origin.port),
        proxiedRecord('dry', origin.port),
        proxiedRecord('br', origin.port),
        proxiedRecord('plain', origin.port),
      ],
      rules: [{ ...dry, priority: 10 }, { ...br, priority: 20 }, { ...optimize, priority: 30 }, cache],
    }),
  ]);
  const port = edge.node.server.httpPort;
  const www = 'www.example.org';

  await t.test('HTML minified; pre, textarea, script, style and conditional comments kept', async () => {
    const r = await get(port, www, '/page');
    assert.equal(r.status, 200);
    const html = r.body.toString();
    assert.ok(r.body.length < PAGE.length, `${r.body.length} < ${PAGE.length}`);
    assert.equal(r.headers['etag'], 'W/"p1"');
    assert.equal(r.headers['accept-ranges'], 'none');
    assert.match(String(r.headers['vary']), /accept/i);
    assert.ok(!html.includes('build 1234'), 'comment dropped');
    assert.ok(html.includes('<!--[if IE]><p>old browser</p><![endif]-->'));
    assert.ok(html.includes('<pre>  indented\n      code  </pre>'));
    assert.ok(html.includes('<textarea name="t">  keep   me  </textarea>'));
    assert.ok(html.includes('var  greeting = "two   spaces";'));
    assert.ok(html.includes('body   { color: red; }'));
    assert.ok(html.includes('<h1>Fresh &amp; tasty</h1>'));
    assert.ok(html.includes('<b>best</b> <i>apples</i>'), 'space between inline elements kept (one)');
    assert.ok(html.startsWith('<!doctype html><html><head><title>Shop</title>'));
    const log = edge.node.logs.drain();
    assert.ok(log.some((l) => l.rules.some(([id, type, d]) => id === optimize.id && type === 'optimize' && !d)));
  });

  await t.test('CSS and JavaScript minified with strings kept; unparsable script passed through', async () => {
    const css = await get(port, www, '/style.css');
    assert.equal(css.body.toString(), 'body{color :#ff0000;content:"  a   b  "}.box>p{margin :0px}');
    const js = await get(port, www, '/app.js');
    const code = js.body.toString();
    assert.ok(code.length < JS.length);
    assert.ok(code.includes('"keep   these   spaces"'));
    assert.ok(code.includes('function shout('), 'a global name is not renamed');
    assert.equal(js.headers['etag'], 'W/"js1"');
    const f = new Function('window', `${code}; return window.shout('x');`) as (w: object) => string;
    assert.equal(f({}), 'xkeep   these   spaces');
    const broken = await get(port, www, '/broken.js');
    assert.equal(broken.body.toString(), 'function ( {{ not javascript');
  });

  await t.test('Accept: text/markdown gets Markdown, with Vary: Accept', async () => {
    const r = await get(port, www, '/page', { accept: 'text/markdown, text/html;q=0.9' });
    assert.equal(r.status, 200);
    assert.equal(r.headers['content-type'], 'text/markdown; charset=utf-8');
    assert.equal(r.headers['etag'], undefined);
    assert.match(String(r.headers['vary']), /accept/i);
    const md = r.body.toString();
    assert.ok(md.startsWith('# Fresh & tasty\n\nOur **best** _apples_, see [the list](/apples?x=1&y=2).\n'), md);
    assert.ok(md.includes('```\n  indented\n      code  \n```'), md);
    assert.ok(md.includes('- one\n- two'), md);
    assert.ok(!md.includes('greeting') && !md.includes('color') && !md.includes('Shop'), md);
    const latin = await get(port, www, '/latin1', { accept: 'text/markdown' });
    assert.equal(latin.body.toString(), 'Café crème\n', 'the <meta> charset read when the header names none');
    const html = await get(port, www, '/page', { accept: 'text/html, text/markdown;q=0' });
    assert.match(String(html.headers['content-type']), /text\/html/);
  });

  await t.test('cached: the Markdown and HTML answers are separate entries', async () => {
    const before = originHits;
    const md1 = await get(port, www, '/cached/p', { accept: 'text/markdown' });
    assert.equal(md1.headers['x-cache-status'], 'MISS');
    const html1 = await get(port, www, '/cached/p', { accept: 'text/html' });
    assert.equal(html1.headers['x-cache-status'], 'MISS', 'the Markdown entry is not served as HTML');
    assert.match(String(html1.headers['content-type']), /text\/html/);
    const md2 = await get(port, www, '/cached/p', { accept: 'text/markdown;q=0.8, */*;q=0.1' });
    assert.equal(md2.headers['x-cache-status'], 'HIT');
    assert.equal(md2.headers['content-type'], 'text/markdown; charset=utf-8');
    assert.equal(md2.body.toString(), md1.body.toString());
    const html2 = await get(port, www, '/cached/p', { accept: 'text/html,application/xhtml+xml;q=0.9' });
    assert.equal(html2.headers['x-cache-status'], 'HIT', 'one HTML entry whatever the Accept value');
    assert.equal(html2.body.toString(), html1.body.toString());
    assert.equal(originHits - before, 2);
  });

  await t.test('minified and compressed: brotli of the minified body', async () => {
    const r = await get(port, 'br.example.org', '/page', { 'accept-encoding': 'br, gzip' });
    assert.equal(r.headers['content-encoding'], 'br');
    assert.equal(brotliDecompressSync(r.body).toString(), minifyHtml(PAGE));
    const md = await get(port, 'br.example.org', '/page', { 'accept-encoding': 'br, gzip', accept: 'text/markdown' });
    assert.equal(md.headers['content-encoding'], 'br');
    assert.equal(brotliDecompressSync(md.body).toString(), htmlToMarkdown(PAGE));
  });

  await t.test('dry run and no rule: the answer is unchanged', async () => {
    edge.node.logs.drain();
    for (const host of ['dry.example.org', 'plain.example.org']) {
      const r = await get(port, host, '/page', { accept: 'text/markdown' });
      assert.equal(r.body.toString(), PAGE, host);
      assert.equal(r.headers['etag'], '"p1"', host);
      assert.equal(r.headers['vary'], undefined, host);
      const css = await get(port, host, '/style.css');
      assert.equal(css.body.toString(), CSS, host);
    }
    const log = edge.node.logs.drain();
    assert.ok(log.some((l) => l.rules.some(([id, , d]) => id === dry.id && d)));
    assert.ok(!log.some((l) => l.rules.some(([id, , d]) => id === dry.id && !d)));
  });

  await t.test('over the size bound: passed through as sent (sized and chunked)', async () => {
    for (const path of ['/over-sized', '/over-chunked']) {
      const r = await get(port, www, path);
      assert.equal(r.status, 200);
      assert.ok(r.body.toString() === OVER, path);
      const md = await get(port, www, path, { accept: 'text/markdown' });
      assert.match(String(md.headers['content-type']), /text\/html/, path);
      assert.ok(md.body.toString() === OVER, path);
    }
  });

  await t.test('abusive CSS and JavaScript: deep nesting passes through, later scripts still minified', async () => {
    const js = await get(port, www, '/deep.js');
    assert.equal(js.status, 200);
    assert.ok(js.body.toString() === DEEP_JS);
    const css = await get(port, www, '/deep.css');
    assert.equal(css.status, 200);
    assert.ok(css.body.length <= DEEP_CSS.length);
    const after = await get(port, www, '/app.js');
    assert.ok(after.body.length < JS.length, 'the thread still works');
  });

  await t.test('abusive HTML: deep nesting, one huge line, a million `<`', async () => {
    for (const path of ['/deep', '/line', '/lt']) {
      for (const accept of ['text/html', 'text/markdown']) {
        const r = await get(port, www, path, { accept });
        assert.equal(r.status, 200, `${path} ${accept}`);
        assert.ok(r.body.length > 0 && r.body.length <= TRANSFORM_MAX_BYTES, `${path} ${accept}`);
      }
    }
    const md = await get(port, www, '/deep', { accept: 'text/markdown' });
    assert.ok(md.body.toString().includes('x'));
    // The node still answers.
    const after = await get(port, www, '/page');
    assert.equal(after.status, 200);
  });
});

test('Markdown and minifier units: bounded stack, Accept parsing', () => {
  assert.equal(wantsMarkdown('text/markdown'), true);
  assert.equal(wantsMarkdown('text/html, text/markdown;q=0.5'), true);
  assert.equal(wantsMarkdown('text/markdown;q=0'), false);
  assert.equal(wantsMarkdown('text/html, */*'), false);
  assert.equal(wantsMarkdown(undefined), false);
  // A million nested lists: the indentation stops growing, so each line stays short.
  const md = htmlToMarkdown(`${'<ul><li>'.repeat(100_000)}deep`);
  assert.ok(md.length < 10_000, `${md.length}`);
  assert.equal(minifyHtml('<p>a</p>   <!-- x -->   <p>b</p>'), '<p>a</p> <p>b</p>');
  assert.equal(minifyHtml('<b>a</b>\n\n<i>b</i>'), '<b>a</b>\n<i>b</i>');
  assert.equal(minifyHtml('<script>\n a  =  1\n</script>'), '<script>\n a  =  1\n</script>');
  assert.equal(minifyHtml('<SCRIPT>x  <p>  y</Script >  <p>  z'), '<SCRIPT>x  <p>  y</Script > <p> z');
  assert.equal(minifyHtml('<pre><b>  a  </b></pre>  b'), '<pre><b>  a  </b></pre> b');
  assert.equal(minifyHtml('a < b  and  c'), 'a < b and c');
  assert.equal(minifyHtml('<p title="a  >  b">x</p>'), '<p title="a  >  b">x</p>');
});

test('the HTML thread: same output as inline, and a bounded queue', { timeout: 120_000 }, async () => {
  const html = bigPage(4 * THREAD_MIN_BYTES);
  const body = Buffer.from(html);
  assert.equal((await transformBody('html', body, undefined))?.toString('latin1'), minifyHtml(html));
  assert.equal((await transformBody('markdown', body, 'utf-8'))?.toString(), htmlToMarkdown(html));
  // 40 answers of 1 MiB at once: at most 16 MiB wait for the thread, the others go out unchanged; all settle.
  const one = Buffer.from(bigPage(TRANSFORM_MAX_BYTES - 1024));
  const results = await Promise.all(Array.from({ length: 40 }, () => transformBody('markdown', one, undefined)));
  const done = results.filter((r) => r !== undefined).length;
  assert.ok(done >= 1 && done <= 16, `${done} converted`);
});

test('optimize rule fields: minify flags and markdown_for_agents are booleans', () => {
  const ok = validateRule('optimize', { minify_html: true, markdown_for_agents: true });
  assert.ok(ok.ok);
  assert.equal(ok.value.fields.markdown_for_agents, true);
  const def = validateRule('optimize', {});
  assert.ok(def.ok);
  assert.equal(def.value.fields.markdown_for_agents, false);
  for (const body of [{ markdown_for_agents: 'yes' }, { minify_html: 1 }, { markdown: true }]) {
    const v = validateRule('optimize', body);
    assert.equal(v.ok, false, JSON.stringify(body));
  }
});
