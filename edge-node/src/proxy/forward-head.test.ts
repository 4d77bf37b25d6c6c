// The head the edge sends its client, made two ways: from the native origin client's forwardable lines (the native
// client, forward.ts forwardsAsIs) and from the raw header list (the TypeScript client, and the native one whenever a
// rule reads the headers). The same origin answers are sent through an edge on each client, and the heads the client
// gets must be the same bytes (uWS's own Date line aside), with and without response header rules.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { proxiedRecord, rule, snapshot, startTestEdge } from '../testing/harness.js';
import { rawOrigin } from './origin-client/testing.js';

/** Origin answers by path: names in any case, hop-by-hop and framing lines, repeats, empty and padded values, obs-text. */
const ANSWERS: Record<string, string> = {
  '/mixed':
    'HTTP/1.1 200 OK\r\nServer: Origin/1.0\r\nDATE: Thu, 26 Nov 2026 10:00:00 GMT\r\nContent-Type: text/plain\r\n' +
    'Connection: keep-alive\r\nKeep-Alive: timeout=30\r\nSet-Cookie: a=1\r\nset-cookie: b=2\r\nX-Empty: \r\n' +
    'X-Padded:   padded value   \r\nX-Latin: caf\xe9\r\nProxy-Connection: x\r\nTE: trailers\r\nTrailer: x-t\r\n' +
    'Upgrade: h2c\r\nX-Cache-Status: ORIGIN\r\nContent-Length: 5\r\n\r\nhello',
  '/chunked':
    'HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\nX-A: 1\r\nETag: "e1"\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n',
  '/none': 'HTTP/1.1 204 No Content\r\nX-B: 2\r\n\r\n',
  '/notmodified': 'HTTP/1.1 304 Not Modified\r\nETag: "e1"\r\nCache-Control: max-age=60\r\n\r\n',
  '/empty': 'HTTP/1.1 200 OK\r\nContent-Length: 0\r\nX-C: 3\r\n\r\n',
  '/status': 'HTTP/1.1 299 Whatever\r\nContent-Length: 2\r\n\r\nok',
};

/** The head of one answer from the edge, as raw bytes (latin1), without uWS's Date line. */
function headOf(port: number, host: string, path: string, method = 'GET'): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = connect(port, '127.0.0.1');
    let got = Buffer.alloc(0);
    s.on('connect', () => s.write(`${method} ${path} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`));
    s.on('data', (c: Buffer) => {
      got = Buffer.concat([got, c]);
      const end = got.indexOf('\r\n\r\n');
      if (end < 0) return;
      s.destroy();
      const head = got.subarray(0, end).toString('latin1');
      resolve(
        head
          .split('\r\n')
          .filter((l) => !/^date:/i.test(l))
          .join('\r\n'),
      );
    });
    s.on('error', reject);
    setTimeout(() => {
      s.destroy();
      reject(new Error(`no head for ${host}${path}`));
    }, 10_000).unref();
  });
}

test('the head from the native client lines is the head from the header list', async (t) => {
  const origin = await rawOrigin(t, (req) => {
    const path = /^[A-Z]+ (\S+)/.exec(req.head)![1];
    return { bytes: ANSWERS[path] ?? 'HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n' };
  });
  const domains = [
    snapshot('plain.example.org', { records: [proxiedRecord('@', origin.port)] }),
    snapshot('rules.example.org', {
      records: [proxiedRecord('@', origin.port)],
      rules: [
        rule('header', {
          response_headers: [
            { op: 'set', name: 'X-A', value: 'set' },
            { op: 'add', name: 'x-added', value: 'v' },
            { op: 'remove', name: 'set-cookie' },
            { op: 'set', name: 'x-padded', value: '' },
          ],
        }),
      ],
    }),
    // Lines only added (the block of bytes on the native client when the origin's lines are ASCII), one not ASCII.
    snapshot('adds.example.org', {
      records: [proxiedRecord('@', origin.port)],
      rules: [
        rule('header', {
          response_headers: [
            { op: 'add', name: 'x-added', value: 'v' },
            { op: 'add', name: 'X-Second', value: 'caf\u00e9 \u2713' },
          ],
        }),
      ],
    }),
    // A cache rule reads the headers: the list path on both clients (and a MISS status line).
    snapshot('cache.example.org', {
      records: [proxiedRecord('@', origin.port)],
      rules: [rule('cache', { edge_ttl: 60 })],
    }),
  ];
  const native = await startTestEdge(t, domains, { EDGE_ORIGIN_CLIENT: 'native' });
  const js = await startTestEdge(t, domains, { EDGE_ORIGIN_CLIENT: 'js' });
  for (const host of ['plain.example.org', 'rules.example.org', 'adds.example.org', 'cache.example.org'])
    for (const path of Object.keys(ANSWERS))
      for (const method of ['GET', 'HEAD']) {
        // A fresh path for the cache domain each time: never a hit.
        const p = host.startsWith('cache') ? `${path}?${method}` : path;
        const viaJs = await headOf(js.node.server.httpPort, host, p, method);
        const viaNative = await headOf(native.node.server.httpPort, host, p, method);
        assert.equal(viaNative, viaJs, `${method} ${host}${p}`);
        assert.match(viaNative, /^HTTP\/1\.1 \d{3} /, `${method} ${host}${p}`);
      }
  // The cases said what they were meant to: hop-by-hop gone, repeats and edits as the rules say.
  const plain = await headOf(native.node.server.httpPort, 'plain.example.org', '/mixed');
  assert.doesNotMatch(plain, /keep-alive|proxy-connection|\r\nte:|trailer|upgrade|transfer-encoding/i);
  assert.match(plain, /set-cookie: a=1\r\nset-cookie: b=2/);
  assert.match(plain, /x-latin: caf\xe9|x-latin: caf\xc3\xa9/);
  const added = await headOf(native.node.server.httpPort, 'adds.example.org', '/chunked');
  assert.match(
    added,
    /\r\nx-a: 1\r\netag: "e1"\r\nx-cache-status: DYNAMIC\r\nx-added: v\r\nx-second: caf\xc3\xa9 \xe2\x9c\x93/,
  );
  const edited = await headOf(native.node.server.httpPort, 'rules.example.org', '/chunked');
  assert.match(edited, /\r\nx-a: set/);
  assert.doesNotMatch(edited, /\r\nx-a: 1/);
  assert.match(edited, /\r\nx-added: v/);
});
