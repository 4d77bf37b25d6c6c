// Differential tests of the origin client against undici (llhttp): the same request to the same scripted origin
// through both. They must agree on status, headers, body and trailers (or both fail), except where the origin client
// is stricter: an ambiguous or malformed answer (smuggling shapes CL.TE, TE.CL, TE.TE, duplicate lengths, bare LF,
// obs-fold, oversized heads, invalid chunks) is refused by it whatever undici makes of it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { Readable } from 'node:stream';
import { Client } from 'undici';
import { AddressPolicy, parseNetworks } from '@platform/shared/address-policy';
import { CLIENTS, pairs, rawOrigin, Recorder, type AnyOriginClient, type Recorded, type Script } from './testing.js';

const policy = new AddressPolicy(parseNetworks('127.0.0.0/8').ranges);

interface Case {
  name: string;
  method?: string;
  /** Request body (sent with Content-Length unless `chunkedBody`). */
  body?: string;
  chunkedBody?: boolean;
  answer: Script;
  /** `agree`: same result through both; `refuse`: the origin client refuses (undici may do anything). */
  expect: 'agree' | 'refuse';
  /**
   * The reference to agree with: undici, or Node's http (llhttp too) where undici refuses what RFC 9110 requires a
   * client to read (interim 1xx answers it did not ask for; a 304 that states the entity's length).
   */
  reference?: 'node';
  /** What the origin client must answer (when it agrees). */
  check?: (r: Recorded) => void;
}

const ok = (extra: string, body: string) => `HTTP/1.1 200 OK\r\n${extra}\r\n${body}`;
/** An answer the origin client must refuse; `close`: the origin closes after it (an answer that never ends). */
const refuse = (name: string, bytes: string, close = false): Case => ({
  name,
  answer: { bytes, close },
  expect: 'refuse',
});
const BIG = 'x'.repeat(300_000);

const CASES: Case[] = [
  // ---- every framing ----
  {
    name: 'content-length',
    answer: { bytes: ok('Content-Length: 5\r\nX-A: 1\r\nx-a: 2\r\nSet-Cookie: a=1\r\n', 'hello') },
    expect: 'agree',
    check: (r) => {
      assert.equal(r.body, 'hello');
      assert.deepEqual(
        r.headers.filter(([n]) => n === 'x-a'),
        [
          ['x-a', '1'],
          ['x-a', '2'],
        ],
      );
    },
  },
  {
    name: 'content-length, head and body in pieces',
    answer: { bytes: ok('Content-Length: 11\r\nContent-Type: text/plain\r\n', 'hello world'), pieces: 3 },
    expect: 'agree',
    check: (r) => assert.equal(r.body, 'hello world'),
  },
  {
    name: 'a large body',
    answer: { bytes: ok(`Content-Length: ${BIG.length}\r\n`, BIG) },
    expect: 'agree',
    check: (r) => assert.equal(r.body.length, BIG.length),
  },
  {
    name: 'content-length 0',
    answer: { bytes: ok('Content-Length: 0\r\n', '') },
    expect: 'agree',
    check: (r) => assert.equal(r.body, ''),
  },
  {
    name: 'chunked with extensions and trailers',
    answer: {
      bytes: ok(
        'Transfer-Encoding: chunked\r\nTrailer: X-Sum\r\n',
        '5;name=value\r\nhello\r\n6;ext="q";flag\r\n world\r\n0\r\nX-Sum: 42\r\nX-Other: b\r\n\r\n',
      ),
    },
    expect: 'agree',
    check: (r) => {
      assert.equal(r.body, 'hello world');
      assert.deepEqual(r.trailers, [
        ['x-sum', '42'],
        ['x-other', 'b'],
      ]);
    },
  },
  {
    name: 'chunked in 1-byte pieces',
    answer: { bytes: ok('Transfer-Encoding: chunked\r\n', 'A\r\n0123456789\r\n1\r\nx\r\n0\r\n\r\n'), pieces: 1 },
    expect: 'agree',
    check: (r) => assert.equal(r.body, '0123456789x'),
  },
  {
    name: 'chunked, upper-case hex and a large chunk',
    answer: {
      bytes: ok('transfer-encoding: Chunked\r\n', `${BIG.length.toString(16).toUpperCase()}\r\n${BIG}\r\n0\r\n\r\n`),
    },
    expect: 'agree',
    check: (r) => assert.equal(r.body.length, BIG.length),
  },
  {
    name: 'close-delimited (HTTP/1.1, no length)',
    answer: { bytes: ok('Content-Type: text/plain\r\n', 'until the end'), close: true },
    expect: 'agree',
    check: (r) => assert.equal(r.body, 'until the end'),
  },
  {
    name: 'HTTP/1.0, close-delimited',
    answer: { bytes: 'HTTP/1.0 200 OK\r\nServer: SimpleHTTP/0.6\r\n\r\nold school', close: true },
    expect: 'agree',
    check: (r) => assert.equal(r.body, 'old school'),
  },
  {
    name: 'HTTP/1.0 with a length',
    answer: { bytes: 'HTTP/1.0 200 OK\r\nContent-Length: 3\r\n\r\nabc', close: true },
    expect: 'agree',
    check: (r) => assert.equal(r.body, 'abc'),
  },
  {
    name: '100 Continue and 103 Early Hints before the answer',
    reference: 'node',
    answer: {
      bytes:
        'HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n' +
        ok('Content-Length: 2\r\n', 'ok'),
    },
    expect: 'agree',
    check: (r) => {
      assert.equal(r.status, 200);
      assert.equal(r.body, 'ok');
    },
  },
  {
    name: 'HEAD with the length of the GET',
    method: 'HEAD',
    answer: { bytes: ok('Content-Length: 1234\r\n', '') },
    expect: 'agree',
    check: (r) => {
      assert.equal(r.body, '');
      assert.ok(r.headers.some(([n, v]) => n === 'content-length' && v === '1234'));
    },
  },
  {
    name: 'HEAD with Transfer-Encoding: chunked',
    method: 'HEAD',
    answer: { bytes: ok('Transfer-Encoding: chunked\r\n', '') },
    expect: 'agree',
    check: (r) => assert.equal(r.body, ''),
  },
  {
    name: '204 No Content',
    answer: { bytes: 'HTTP/1.1 204 No Content\r\nX-A: 1\r\n\r\n' },
    expect: 'agree',
    check: (r) => assert.equal(r.status, 204),
  },
  {
    name: '304 Not Modified with the length of the entity',
    reference: 'node',
    answer: { bytes: 'HTTP/1.1 304 Not Modified\r\nETag: "a"\r\nContent-Length: 50\r\n\r\n' },
    expect: 'agree',
    check: (r) => {
      assert.equal(r.status, 304);
      assert.equal(r.body, '');
    },
  },
  {
    name: 'a status line without a reason',
    answer: { bytes: 'HTTP/1.1 404\r\nContent-Length: 1\r\n\r\nx' },
    expect: 'agree',
    check: (r) => assert.equal(r.status, 404),
  },
  {
    name: 'header values with HTAB and obs-text, empty values',
    answer: { bytes: ok('Content-Length: 1\r\nX-T:\tvalue\twith tab \r\nX-Latin: caf\xe9\r\nX-Empty:\r\n', 'y') },
    expect: 'agree',
    check: (r) => {
      assert.ok(r.headers.some(([n, v]) => n === 'x-t' && v === 'value\twith tab'));
      assert.ok(r.headers.some(([n, v]) => n === 'x-empty' && v === ''));
    },
  },
  {
    name: 'a POST body with Content-Length, echoed',
    method: 'POST',
    body: 'a'.repeat(70_000),
    answer: { bytes: ok('Content-Length: 2\r\n', 'ok') },
    expect: 'agree',
    check: (r) => assert.equal(r.body, 'ok'),
  },
  {
    name: 'a POST body of unknown length goes chunked',
    method: 'POST',
    body: 'streamed body',
    chunkedBody: true,
    answer: { bytes: ok('Content-Length: 2\r\n', 'ok') },
    expect: 'agree',
  },
  // ---- refused: upgrade, smuggling shapes, malformed heads and chunks ----
  refuse(
    'an unrequested 101 upgrade',
    'HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n',
  ),
  refuse(
    'CL.TE: both Content-Length and chunked',
    ok('Content-Length: 4\r\nTransfer-Encoding: chunked\r\n', '0\r\n\r\n'),
  ),
  refuse(
    'TE.CL: chunked then Content-Length',
    ok('Transfer-Encoding: chunked\r\nContent-Length: 3\r\n', '3\r\nabc\r\n0\r\n\r\n'),
  ),
  refuse(
    'TE.TE: two Transfer-Encoding headers',
    ok('Transfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n', '0\r\n\r\n'),
  ),
  refuse('TE.TE: a list of codings', ok('Transfer-Encoding: gzip, chunked\r\n', '0\r\n\r\n')),
  refuse('TE.TE: chunked twice', ok('Transfer-Encoding: chunked, chunked\r\n', '0\r\n\r\n')),
  refuse('TE.TE: an obfuscated coding', ok('Transfer-Encoding: xchunked\r\n', '0\r\n\r\n'), true),
  refuse('TE.TE: a vertical tab before the coding', ok('Transfer-Encoding:\x0bchunked\r\n', '0\r\n\r\n'), true),
  refuse('TE.TE: a space before the colon', ok('Transfer-Encoding : chunked\r\n', '0\r\n\r\n'), true),
  refuse(
    'Transfer-Encoding in an HTTP/1.0 answer',
    'HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
    true,
  ),
  refuse('conflicting Content-Length headers', ok('Content-Length: 3\r\nContent-Length: 5\r\n', 'hello')),
  refuse('duplicate equal Content-Length headers', ok('Content-Length: 5\r\nContent-Length: 5\r\n', 'hello')),
  refuse('a Content-Length list', ok('Content-Length: 5, 5\r\n', 'hello')),
  refuse('a signed Content-Length', ok('Content-Length: +5\r\n', 'hello')),
  refuse('a negative Content-Length', ok('Content-Length: -1\r\n', 'hello'), true),
  refuse('bare LF line ends', 'HTTP/1.1 200 OK\nContent-Length: 2\n\nok', true),
  refuse('a bare LF in one header line', 'HTTP/1.1 200 OK\r\nX-A: 1\nContent-Length: 2\r\n\r\nok'),
  refuse('a CR alone inside a value', ok('X-A: 1\rContent-Length: 2\r\nContent-Length: 2\r\n', 'ok')),
  refuse('obs-fold', ok('Content-Length: 2\r\nX-Folded: a\r\n b\r\n', 'ok')),
  refuse('obs-fold of Transfer-Encoding', ok('Transfer-Encoding:\r\n chunked\r\n', '0\r\n\r\n'), true),
  refuse('a NUL in a value', ok('Content-Length: 2\r\nX-A: a\x00b\r\n', 'ok')),
  refuse('an oversized head', ok(`Content-Length: 2\r\nX-Big: ${'b'.repeat(20_000)}\r\n`, 'ok')),
  {
    name: 'an oversized head arriving in pieces, never ended',
    answer: { bytes: `HTTP/1.1 200 OK\r\nX-Big: ${'b'.repeat(20_000)}`, pieces: 4096 },
    expect: 'refuse',
  },
  refuse('too many headers', ok(`Content-Length: 2\r\n${'X-H: v\r\n'.repeat(300)}`, 'ok')),
  refuse('an invalid chunk size', ok('Transfer-Encoding: chunked\r\n', 'zz\r\nhello\r\n0\r\n\r\n')),
  refuse('a negative chunk size', ok('Transfer-Encoding: chunked\r\n', '-5\r\nhello\r\n0\r\n\r\n')),
  refuse('a 0x-prefixed chunk size', ok('Transfer-Encoding: chunked\r\n', '0x5\r\nhello\r\n0\r\n\r\n')),
  refuse('an overflowing chunk size', ok('Transfer-Encoding: chunked\r\n', '10000000000000005\r\nhello\r\n0\r\n\r\n')),
  refuse('chunk data longer than its size', ok('Transfer-Encoding: chunked\r\n', '3\r\nhello\r\n0\r\n\r\n')),
  refuse('whitespace before a chunk extension', ok('Transfer-Encoding: chunked\r\n', '5 ;a=b\r\nhello\r\n0\r\n\r\n')),
  refuse('a bare LF after a chunk size', ok('Transfer-Encoding: chunked\r\n', '5\nhello\r\n0\r\n\r\n')),
  refuse('obs-fold in the trailers', ok('Transfer-Encoding: chunked\r\n', '0\r\nX-T: a\r\n b\r\n\r\n')),
  refuse('a malformed status line', 'HTTP/1.1 2000 OK\r\nContent-Length: 0\r\n\r\n'),
  refuse('another protocol', 'ICY 200 OK\r\nContent-Length: 0\r\n\r\n'),
  refuse('HTTP/2 in an HTTP/1 status line', 'HTTP/2.0 200 OK\r\nContent-Length: 0\r\n\r\n'),
  // ---- truncations: both fail ----
  {
    name: 'a body cut short of its length',
    answer: { bytes: ok('Content-Length: 10\r\n', 'short'), close: true },
    expect: 'agree',
    check: (r) => assert.ok(r.error),
  },
  {
    name: 'a chunked body cut before its last chunk',
    answer: { bytes: ok('Transfer-Encoding: chunked\r\n', '5\r\nhello\r\n'), close: true },
    expect: 'agree',
    check: (r) => assert.ok(r.error),
  },
  {
    name: 'a head cut short',
    answer: { bytes: 'HTTP/1.1 200 OK\r\nContent-Le', close: true },
    expect: 'agree',
    check: (r) => assert.ok(r.error),
  },
];

function requestBody(c: Case): Readable | null {
  if (c.body === undefined) return null;
  return Readable.from([Buffer.from(c.body.slice(0, 7)), Buffer.from(c.body.slice(7))], { objectMode: false });
}

function requestHeaders(c: Case): string[] {
  const h = ['host', 'origin.example', 'user-agent', 'differential'];
  if (c.body !== undefined && !c.chunkedBody) h.push('content-length', String(Buffer.byteLength(c.body)));
  return h;
}

async function viaUndici(port: number, c: Case): Promise<Recorded> {
  const client = new Client(`http://127.0.0.1:${port}`, { pipelining: 1 });
  const r = new Recorder();
  client.dispatch(
    {
      method: c.method ?? 'GET',
      path: '/path?q=1',
      headers: requestHeaders(c),
      body: requestBody(c),
      headersTimeout: 5000,
      bodyTimeout: 5000,
    },
    r,
  );
  const out = await r.done;
  await client.destroy();
  return out;
}

async function viaNode(port: number, c: Case): Promise<Recorded> {
  const headers: Record<string, string> = {};
  const list = requestHeaders(c);
  for (let i = 0; i < list.length; i += 2) headers[list[i]] = list[i + 1];
  return new Promise((resolve) => {
    const out: Recorded = { status: 0, headers: [], body: '', trailers: [], error: null };
    const req = request(
      { host: '127.0.0.1', port, method: c.method ?? 'GET', path: '/path?q=1', headers, agent: false },
      (res) => {
        out.status = res.statusCode ?? 0;
        out.headers = pairs(res.rawHeaders);
        const chunks: Buffer[] = [];
        res.on('data', (b: Buffer) => chunks.push(b));
        res.on('end', () => {
          out.body = Buffer.concat(chunks).toString('latin1');
          out.trailers = pairs(res.rawTrailers);
          resolve(out);
        });
        res.on('error', (err) => resolve({ ...out, error: err.message }));
      },
    );
    req.on('error', (err) => resolve({ ...out, error: err.message }));
    req.end(c.body);
  });
}

async function viaOriginClient(oc: AnyOriginClient, port: number, c: Case): Promise<Recorded> {
  const r = new Recorder();
  oc.dispatch('127.0.0.1', port, '', c.method ?? 'GET', '/path?q=1', requestHeaders(c), requestBody(c), r, 5000, 5000);
  return r.done;
}

for (const [kind, make] of CLIENTS)
  test(`the origin client agrees with undici, or refuses more safely (${kind})`, async (t) => {
    const oc = make({ policy, maxPools: 16 });
    t.after(() => oc.close());
    for (const c of CASES) {
      await t.test(c.name, async (st) => {
        const origin = await rawOrigin(st, () => c.answer);
        const ours = await viaOriginClient(oc, origin.port, c);
        const theirs = c.reference === 'node' ? await viaNode(origin.port, c) : await viaUndici(origin.port, c);
        if (c.expect === 'refuse') {
          assert.equal(ours.error, 'EDGE_ORIGIN_PROTOCOL', `origin client: ${JSON.stringify(ours).slice(0, 300)}`);
          // Nothing of a refused answer reaches the handler as a success.
          assert.equal(ours.status === 0 || ours.error !== null, true);
          return;
        }
        if (theirs.error !== null || ours.error !== null) {
          assert.ok(
            ours.error !== null && theirs.error !== null,
            `one failed: ours ${ours.error}, undici ${theirs.error}`,
          );
        } else {
          assert.equal(ours.status, theirs.status);
          // Values without their trailing whitespace: RFC 9110 §5.5 excludes it, llhttp leaves it to the caller.
          assert.deepEqual(
            ours.headers,
            theirs.headers.map(([n, v]) => [n, v.replace(/[ \t]+$/, '')]),
          );
          assert.equal(ours.body, theirs.body);
          assert.deepEqual(ours.trailers, theirs.trailers);
        }
        c.check?.(ours);
        if (c.body !== undefined) {
          assert.equal(origin.seen.length, 2);
          assert.equal(origin.seen[0].body.toString(), c.body);
          assert.equal(origin.seen[0].body.toString(), origin.seen[1].body.toString());
        }
      });
    }
  });
