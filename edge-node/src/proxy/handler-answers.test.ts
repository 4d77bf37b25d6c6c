// Answers written during uWS's request handler without res.cork (respond.ts setHandlerResponse): uWS corks the socket
// for the whole call, pipelined requests included. Several requests in one TCP write, answered in the handler (cache
// hits, a HEAD hit, one larger than uWS's cork buffer, an unknown host) and from the origin's callback (a proxied
// request): every answer complete, in order.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { proxiedRecord, rule, send, snapshot, startStubOrigin, startTestEdge } from '../testing/harness.js';

interface Answer {
  status: number;
  headers: Map<string, string>;
  body: string;
}

/**
 * Writes `requests` on one connection and reads an answer per `heads` entry (Content-Length framed; `heads[i]`: the
 * i-th has no body, a HEAD's, 204 or 304). A string is written whole (pipelined); a list, one request per answer.
 */
function pipelined(port: number, requests: string | string[], heads: boolean[]): Promise<Answer[]> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let data = Buffer.alloc(0);
    const out: Answer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`${out.length} of ${heads.length} answers within 10 s`));
    }, 10_000);
    const parse = () => {
      while (out.length < heads.length) {
        const end = data.indexOf('\r\n\r\n');
        if (end < 0) return;
        const lines = data.subarray(0, end).toString('latin1').split('\r\n');
        const headers = new Map<string, string>();
        for (const line of lines.slice(1)) {
          const colon = line.indexOf(':');
          headers.set(line.slice(0, colon).toLowerCase(), line.slice(colon + 1).trim());
        }
        const length = heads[out.length] ? 0 : Number(headers.get('content-length') ?? 0);
        const lengths = lines.filter((l) => l.toLowerCase().startsWith('content-length:')).length;
        headers.set('content-length-lines', String(lengths));
        if (data.length < end + 4 + length) return;
        out.push({
          status: Number(lines[0].split(' ')[1]),
          headers,
          body: data.subarray(end + 4, end + 4 + length).toString(),
        });
        data = data.subarray(end + 4 + length);
        if (Array.isArray(requests) && out.length < requests.length) socket.write(requests[out.length]);
      }
      clearTimeout(timer);
      socket.destroy();
      resolve(out);
    };
    socket.on('data', (chunk: Buffer) => {
      data = Buffer.concat([data, chunk]);
      parse();
    });
    socket.on('error', reject);
    socket.write(Array.isArray(requests) ? requests[0] : requests);
  });
}

test('pipelined answers written in the handler and from the origin come back whole and in order', async (t) => {
  const big = 'b'.repeat(100 * 1024);
  const origin = await startStubOrigin('h', (req, res) => {
    res.setHeader('content-type', 'text/plain');
    res.end(req.url === '/c/big' ? big : `origin ${req.url}`);
  });
  t.after(() => origin.close());
  const rules = [
    rule('cache', { path_includes: ['/p/*'], action: 'bypass' }),
    rule('cache', { path_includes: ['/c/*'], edge_ttl: 60 }),
  ];
  const edge = await startTestEdge(t, [
    snapshot('pipe.example.org', { records: [proxiedRecord('www', origin.port)], rules }),
  ]);
  const port = edge.node.server.httpPort;
  for (const path of ['/c/a', '/c/big']) {
    assert.equal((await send(port, 'www.pipe.example.org', path)).headers['x-cache-status'], 'MISS');
    assert.equal((await send(port, 'www.pipe.example.org', path)).headers['x-cache-status'], 'HIT');
  }

  const get = (path: string, method = 'GET', host = 'www.pipe.example.org') =>
    `${method} ${path} HTTP/1.1\r\nHost: ${host}\r\n\r\n`;
  // uWS closes a connection whose next request comes while an answer is still pending: the proxied request and the
  // HEAD (uWS does not count endWithoutBody as an answer) come last in each write.
  const hit = [200, 'HIT', 'origin /c/a'.length];
  for (let round = 0; round < 20; round++) {
    const a = await pipelined(
      port,
      get('/c/a') + get('/c/big') + get('/c/a') + get('/', 'GET', 'nope.test') + get('/p/x'),
      [false, false, false, false, false],
    );
    assert.deepEqual(
      a.map((x) => [x.status, x.headers.get('x-cache-status') ?? '', x.body.length]),
      [hit, [200, 'HIT', big.length], hit, [a[3].status, '', a[3].body.length], [200, 'BYPASS', 'origin /p/x'.length]],
    );
    assert.equal(a[0].body, 'origin /c/a');
    assert.equal(a[1].body, big);
    assert.ok(a[3].status >= 400 && a[3].status < 500, `unknown host: ${a[3].status}`);
    assert.equal(a[4].body, 'origin /p/x');
    const b = await pipelined(port, get('/c/big') + get('/c/a') + get('/c/a', 'HEAD'), [false, false, true]);
    assert.deepEqual(
      b.map((x) => [x.status, x.headers.get('x-cache-status') ?? '', x.body.length]),
      [[200, 'HIT', big.length], hit, [200, 'HIT', 0]],
    );
    assert.equal(b[2].headers.get('content-length'), String('origin /c/a'.length));
  }
});

test('a HEAD, a 204 and a 304 end their answer: the connection serves the next request, lengths as sent', async (t) => {
  const origin = await startStubOrigin('h', (req, res) => {
    if (req.url === '/p/204') res.statusCode = 204;
    else if (req.url === '/p/304') res.statusCode = 304;
    else if (req.url === '/p/sized') res.setHeader('content-length', '11');
    res.end(req.method === 'HEAD' || res.statusCode !== 200 ? undefined : `origin ${req.url}`);
  });
  t.after(() => origin.close());
  const rules = [
    rule('cache', { path_includes: ['/p/*'], action: 'bypass' }),
    rule('cache', { path_includes: ['/c/*'], edge_ttl: 60 }),
  ];
  const edge = await startTestEdge(t, [
    snapshot('head.example.org', { records: [proxiedRecord('www', origin.port)], rules }),
  ]);
  const port = edge.node.server.httpPort;
  await send(port, 'www.head.example.org', '/c/a');
  const req = (path: string, method = 'GET') => `${method} ${path} HTTP/1.1\r\nHost: www.head.example.org\r\n\r\n`;
  const steps: [string, boolean, number, string | undefined][] = [
    // request, no body, status, Content-Length (undefined: none)
    [req('/c/a', 'HEAD'), true, 200, '11'],
    [req('/c/a'), false, 200, '11'],
    [req('/p/sized', 'HEAD'), true, 200, '11'],
    [req('/p/x', 'HEAD'), true, 200, undefined],
    [req('/p/x'), false, 200, '11'],
    [req('/p/204'), true, 204, undefined],
    [req('/p/304'), true, 304, undefined],
    [req('/c/a'), false, 200, '11'],
  ];
  const answers = await pipelined(
    port,
    steps.map((s) => s[0]),
    steps.map((s) => s[1]),
  );
  assert.deepEqual(
    answers.map((a) => [a.status, a.headers.get('content-length')]),
    steps.map(([, , status, length]) => [status, length]),
  );
  for (const [i, a] of answers.entries())
    assert.ok(Number(a.headers.get('content-length-lines')) <= 1, `one Content-Length at most, answer ${i}`);
  assert.equal(answers[1].body, 'origin /c/a');
  assert.equal(answers[4].body, 'origin /p/x');
  assert.equal(answers[7].body, 'origin /c/a');
});
