// The edge on the native front (EDGE_FRONT=native, edge-node/native/http-front): the behaviour suites that apply run
// again here against edges started with it (this process's EDGE_FRONT, read by testing/harness.ts), so the two fronts
// are shown to agree: proxying (records, forwarding headers, scheme, 504 timeout), aborts and their log records, rule
// changes, SSRF refusals (502 x-edge-error), the cache through the edge (hits answered from JavaScript), cache
// poisoning, pipelined and bodiless answers, origin_protocol, malformed and smuggling origin answers (502 x-edge-error),
// rule filters, rule types, origin pools, optimize transforms, HTTPS (which stays on uWS). What they do with request
// bodies is skipped on this front (refused 413 / 501 by the module). Then the native path's own: a natively relayed
// request's log record and counters equal the uWS path's, and its failures answer with the same x-edge-error codes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, createServer, type Socket } from 'node:net';
import { nativeFrontAvailable } from './front/native.js';
import {
  proxiedRecord,
  rule,
  send,
  snapshot,
  startStubOrigin,
  startTestEdge,
  type TestEdge,
} from './testing/harness.js';
import type { RequestLogRecord } from './log/buffer.js';

process.env.EDGE_FRONT = 'native';
const built = nativeFrontAvailable();

if (built) {
  await import('./proxy.test.js');
  await import('./abort.test.js');
  await import('./rule-changes.test.js');
  await import('./ssrf.test.js');
  await import('./tls.test.js');
  await import('./cache/cache.test.js');
  await import('./cache/poisoning.test.js');
  await import('./proxy/handler-answers.test.js');
  await import('./proxy/origin-protocol.test.js');
  await import('./proxy/origin-smuggling.test.js');
  await import('./rules/filters.test.js');
  await import('./rules/types.test.js');
  await import('./rules/origin-pool.test.js');
  await import('./rules/optimize-transform.test.js');
}

/** The records of `edge`'s log once `count` are in, without the fields that differ by time and by process. */
async function records(edge: TestEdge, count: number): Promise<Partial<RequestLogRecord>[]> {
  for (let i = 0; i < 1200 && edge.node.logs.size < count; i++) await new Promise((r) => setTimeout(r, 50));
  return edge.node.logs.drain().map((r) => {
    const { t: _t, ms: _ms, upstreamMs, peer: _peer, ...rest } = r;
    // -1 when no origin was asked; a time otherwise
    return { ...rest, upstreamMs: upstreamMs < 0 ? -1 : 0 };
  });
}

test(
  'natively relayed requests are logged and counted as the uWS path logs them; failures answer the same codes',
  { skip: built ? false : 'the http-front module is not built (npm run setup)' },
  async (t) => {
    const origin = await startStubOrigin('o', (req, res) => {
      if (req.url === '/missing') {
        res.writeHead(404, { 'content-type': 'text/plain' });
        res.end('nope');
      } else if (req.url === '/edited/a') {
        res.setHeader('content-type', 'text/plain');
        res.setHeader('x-drop', 'gone');
        res.setHeader('x-keep', 'kept');
        res.end('edited');
      } else if (req.url === '/slow') {
        setTimeout(() => res.end('late'), 3000);
      } else {
        res.setHeader('content-type', 'text/plain');
        res.end(`origin ${req.url}`);
      }
    });
    t.after(() => origin.close());
    const dead = await startStubOrigin('dead');
    await dead.close();
    const snapshots = [
      snapshot('example.org', {
        records: [proxiedRecord('www', origin.port), proxiedRecord('down', dead.port)],
        rules: [
          rule('header', { response_headers: [{ op: 'add', name: 'x-added', value: 'yes' }] }),
          rule('cache', { path_includes: ['/cached/*'], edge_ttl: 60, respect_origin: false }),
          rule('header', {
            path_includes: ['/edited/*'],
            response_headers: [
              { op: 'set', name: 'content-type', value: 'text/x-set' },
              { op: 'remove', name: 'x-drop' },
              { op: 'remove', name: 'x-added' },
            ],
          }),
        ],
      }),
      snapshot('slow.example.org', { records: [proxiedRecord('@', origin.port, { timeout: 1 })] }),
    ];
    const uws = await startTestEdge(t, snapshots, { EDGE_FRONT: 'uws' });
    const native = await startTestEdge(t, snapshots, { EDGE_FRONT: 'native' });
    const asked: [string, string][] = [
      ['www.example.org', '/plain'],
      ['www.example.org', '/missing'],
      ['www.example.org', '/edited/a'], // set and remove rules: the origin's fields dropped in C
      ['www.example.org', '/cached/a'], // MISS (the uWS path stores it)
      ['www.example.org', '/cached/a'], // HIT, from JavaScript
      ['down.example.org', '/x'], // 502 EDGE_ERR_UPSTREAM_UNREACHABLE
      ['slow.example.org', '/slow'], // 504 EDGE_ERR_UPSTREAM_TIMEOUT
      ['nowhere.example.net', '/'], // 421
    ];
    const answers: Record<string, unknown>[][] = [];
    for (const edge of [uws, native]) {
      const port = edge.node.server.httpPort;
      const got: Record<string, unknown>[] = [];
      for (const [host, path] of asked) {
        const r = await send(port, host, path);
        got.push({
          status: r.status,
          body: r.body,
          edgeError: r.headers['x-edge-error'],
          cache: r.headers['x-cache-status'],
          added: r.headers['x-added'],
          type: r.headers['content-type'],
          dropped: r.headers['x-drop'],
          kept: r.headers['x-keep'],
        });
      }
      answers.push(got);
    }
    assert.deepEqual(answers[1], answers[0]);
    assert.deepEqual(
      [answers[0][2].type, answers[0][2].dropped, answers[0][2].kept, answers[0][2].added],
      ['text/x-set', undefined, 'kept', undefined],
    );
    // The second header rule's `remove x-added` applied to /edited/a only: the first rule's own list is never added to
    // (the phases use it as it is while it is the only one with ops). The hit carries x-added once: the stored copy
    // keeps the origin's headers and the rule applies to it once; slow.example.org and the 421 have no rules.
    assert.deepEqual(
      answers.map((got) => got.map((a) => a.added)),
      [0, 1].map(() => ['yes', 'yes', undefined, 'yes', 'yes', 'yes', undefined, undefined]),
    );
    assert.deepEqual(
      answers[0].map((a) => [a.status, a.cache ?? '', a.edgeError ?? '']),
      [
        [200, 'DYNAMIC', ''],
        [404, 'DYNAMIC', ''],
        [200, 'DYNAMIC', ''],
        [200, 'MISS', ''],
        [200, 'HIT', ''],
        [502, 'DYNAMIC', 'EDGE_ERR_UPSTREAM_UNREACHABLE'],
        [504, 'DYNAMIC', 'EDGE_ERR_UPSTREAM_TIMEOUT'],
        [421, '', 'EDGE_ERR_HOST_NOT_SERVED'],
      ],
    );
    assert.deepEqual(await records(native, asked.length), await records(uws, asked.length));
    assert.deepEqual(native.node.requests.nonZero(), uws.node.requests.nonZero());
    // /plain, /missing and /edited/a went through the module; the rest through the existing path or from JavaScript
    assert.equal(native.node.server.nativeRelayed, 3);
    assert.equal(uws.node.server.nativeRelayed, 0);
  },
);

/** One request written as raw bytes to 127.0.0.1:port (Connection: close); resolves with the raw answer. */
function rawRequest(port: number, request: string): Promise<string> {
  return new Promise((resolve, reject) => {
    // Written, not ended: uWS drops a half-closed connection before answering.
    const socket = connect(port, '127.0.0.1', () => socket.write(request, 'latin1'));
    const chunks: Buffer[] = [];
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('end', () => resolve(Buffer.concat(chunks).toString('latin1')));
    socket.on('error', reject);
  });
}

test(
  'request header values reach the origin without the spaces and tabs around them (RFC 9110 OWS), inner ones kept',
  { skip: built ? false : 'the http-front module is not built (npm run setup)' },
  async (t) => {
    // A raw origin: the request head exactly as the edge wrote it (an HTTP server would trim the values itself).
    const heads: string[] = [];
    const sockets = new Set<Socket>();
    const origin = createServer((socket) => {
      sockets.add(socket);
      let pending = '';
      socket.on('data', (c: Buffer) => {
        pending += c.toString('latin1');
        for (let end = pending.indexOf('\r\n\r\n'); end >= 0; end = pending.indexOf('\r\n\r\n')) {
          heads.push(pending.slice(0, end + 2));
          pending = pending.slice(end + 4);
          socket.write('HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 2\r\n\r\nok');
        }
      });
      socket.on('close', () => sockets.delete(socket));
    });
    await new Promise<void>((r) => origin.listen(0, '127.0.0.1', r));
    t.after(() => {
      for (const s of sockets) s.destroy();
      origin.close();
    });
    const port = (origin.address() as { port: number }).port;
    const snapshots = [snapshot('example.org', { records: [proxiedRecord('www', port)] })];
    for (const front of ['native', 'uws']) {
      const edge = await startTestEdge(t, snapshots, { EDGE_FRONT: front });
      heads.length = 0;
      const answer = await rawRequest(
        edge.node.server.httpPort,
        'GET /padded HTTP/1.1\r\nHost: www.example.org\r\nX-Pad: \t padded  inner\tvalue \t\r\n' +
          'X-Tight:tight\r\nX-Blank: \t \r\nConnection: close\r\n\r\n',
      );
      assert.match(answer, /^HTTP\/1\.1 200 /, front);
      assert.equal(heads.length, 1, front);
      const lines = heads[0]
        .split('\r\n')
        .filter((l) => l.startsWith('x-pad:') || l.startsWith('x-tight:') || l.startsWith('x-blank:'));
      assert.deepEqual(lines, ['x-pad: padded  inner\tvalue', 'x-tight: tight', 'x-blank: '], front);
    }
    // Names in any case (the common ones are looked up by their bytes, the others lowered) and names one letter off a
    // common one: the origin gets the same lines from both fronts; with a value of UTF-8 bytes, the same and that one.
    const sent: Record<string, string[]> = {};
    for (const front of ['native', 'uws']) {
      const edge = await startTestEdge(t, snapshots, { EDGE_FRONT: front });
      for (const utf8 of [false, true]) {
        heads.length = 0;
        const head = Buffer.concat([
          Buffer.from(
            'GET /names HTTP/1.1\r\nHOST: www.example.org\r\nUser-Agent: UA/1\r\nACCEPT-encoding: gzip\r\n' +
              'Accepts: a\r\nX-Accept: b\r\nAccept-Languagf: c\r\nCoOkIe: k=v\r\nX-Custom-Name: d\r\n' +
              'Sec-Fetch-Site: none\r\nTE: trailers\r\nDNT: 1\r\n',
            'latin1',
          ),
          utf8 ? Buffer.from('X-Utf8: caf\u00e9 \r\n', 'utf8') : Buffer.alloc(0),
          Buffer.from('Connection: close\r\n\r\n', 'latin1'),
        ]);
        const answer = await rawRequest(edge.node.server.httpPort, head.toString('latin1'));
        assert.match(answer, /^HTTP\/1\.1 200 /, front);
        assert.equal(heads.length, 1, front);
        (sent[`${front} ${utf8}`] = heads[0].split('\r\n').slice(1)).sort();
      }
    }
    assert.deepEqual(sent['native false'], sent['uws false']);
    // The UTF-8 value as the native front always sent it (decoded as UTF-8, written latin1); uWS's path sends `caf`.
    assert.deepEqual(
      sent['native true'].filter((l) => !l.startsWith('x-utf8')),
      sent['native false'],
    );
    for (const line of [
      'user-agent: UA/1',
      'accept-encoding: gzip',
      'accepts: a',
      'x-accept: b',
      'accept-languagf: c',
      'cookie: k=v',
      'x-custom-name: d',
      'sec-fetch-site: none',
      'dnt: 1',
      'host: www.example.org',
      'x-forwarded-host: www.example.org',
    ])
      assert.ok(sent['native false'].includes(line), `${line} in ${JSON.stringify(sent['native false'])}`);
    assert.ok(sent['native true'].includes('x-utf8: caf\u00e9'), JSON.stringify(sent['native true']));
  },
);
