// The origin client's connection handling: keep-alive reuse, never a request on a connection the origin closed or
// said it will close, no blind replay of a request that is not idempotent, bounded pools, backpressure, timeouts and
// the address guard.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { once } from 'node:events';
import { createServer, type AddressInfo } from 'node:net';
import { AddressPolicy, parseNetworks } from '@platform/shared/address-policy';
import { encodeLines, encodeProxied, encodeRequest } from './request.js';
import { isConnectFailure } from '../upstream.js';
import { CLIENTS, rawOrigin, Recorder, type AnyOriginClient, type Recorded } from './testing.js';

const loopback = new AddressPolicy(parseNetworks('127.0.0.0/8').ranges);

function send(
  oc: AnyOriginClient,
  port: number,
  method = 'GET',
  body?: string,
  handler = new Recorder(),
  headersTimeoutMs = 5000,
): Promise<Recorded> {
  const headers = ['host', 'o.example'];
  if (body !== undefined) headers.push('content-length', String(Buffer.byteLength(body)));
  oc.dispatch(
    '127.0.0.1',
    port,
    '',
    method,
    '/',
    headers,
    body === undefined ? null : Readable.from([Buffer.from(body)]),
    handler,
    headersTimeoutMs,
    5000,
  );
  return handler.done;
}

/** A POST of a streamed body to the origin at 127.0.0.1:port (the framing by the headers: a length, or chunked). */
function post(
  oc: AnyOriginClient,
  port: number,
  headers: string[],
  body: Readable,
  headersTimeoutMs = 5000,
  bodyTimeoutMs = 5000,
): Promise<Recorded> {
  const h = new Recorder();
  oc.dispatch('127.0.0.1', port, '', 'POST', '/', headers, body, h, headersTimeoutMs, bodyTimeoutMs);
  return h.done;
}

const answer = (text: string, extra = '') => `HTTP/1.1 200 OK\r\nContent-Length: ${text.length}\r\n${extra}\r\n${text}`;

for (const [kind, make] of CLIENTS)
  test(`origin client connections (${kind})`, async (t) => {
    const oc = make({ policy: loopback, maxPools: 16 });
    t.after(() => oc.close());

    await t.test('a keep-alive origin is reused, one request at a time', async (st) => {
      const origin = await rawOrigin(st, (_r, i) => ({ bytes: answer(`n${i}`) }));
      for (let i = 0; i < 5; i++) assert.equal((await send(oc, origin.port)).body, `n${i}`);
      assert.equal(origin.connections, 1);
    });

    await t.test(
      'Connection: close, HTTP/1.0 and close-delimited answers are never followed by a request',
      async (st) => {
        const scripts = [
          { bytes: answer('a', 'Connection: close\r\n') },
          { bytes: 'HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\nb' },
          { bytes: 'HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 1\r\n\r\nc' },
          { bytes: 'HTTP/1.1 200 OK\r\n\r\nd', close: true },
          { bytes: answer('e', 'Keep-Alive: timeout=1\r\n') },
          { bytes: answer('f') },
        ];
        // The origin does not close: only the client's reading of the answer keeps it off these connections.
        const origin = await rawOrigin(st, (_r, i) => ({ ...scripts[i], close: scripts[i].close }));
        for (const [i, want] of ['a', 'b', 'c', 'd', 'e', 'f'].entries()) {
          const r = await send(oc, origin.port, i % 2 ? 'POST' : 'GET', i % 2 ? 'body' : undefined);
          assert.equal(r.error, null, want);
          assert.equal(r.body, want);
        }
        assert.equal(origin.connections, 6);
      },
    );

    await t.test('an idle connection the origin closed is not written to', async (st) => {
      const origin = await rawOrigin(st, (_r, i) => ({ bytes: answer(`n${i}`), close: true }));
      // The origin answers with keep-alive framing, then closes its idle connection (a keep-alive timeout).
      for (let i = 0; i < 4; i++) {
        const r = await send(oc, origin.port, 'POST', 'x'.repeat(i * 100));
        assert.equal(r.error, null);
        assert.equal(r.body, `n${i}`);
        await new Promise((r) => setTimeout(r, 20)); // the FIN is read while the connection is idle
      }
      assert.equal(origin.connections, 4);
    });

    await t.test('the keep-alive race: a GET is sent once more, a POST is not replayed', async (st) => {
      // Every second request on a connection is dropped unanswered with a reset, as by an origin that closed it.
      const origin = await rawOrigin(st, (_r, i) =>
        i % 2 === 1 ? { bytes: '', close: true } : { bytes: answer(`n${i}`) },
      );
      const first = await send(oc, origin.port);
      assert.equal(first.body, 'n0');
      const get = await send(oc, origin.port); // on the reused connection: dropped, then sent on a new one
      assert.equal(get.error, null);
      assert.equal(get.body, 'n2');
      assert.equal(origin.seen.length, 3);
      const post = await send(oc, origin.port, 'POST', 'pay once'); // reused (idle < 1 s): dropped, not replayed
      assert.equal(post.error, 'EDGE_ORIGIN_CLOSED');
      assert.equal(origin.seen.length, 4);
      assert.equal(origin.seen.filter((s) => s.head.startsWith('POST')).length, 1);
    });

    await t.test('bytes after the answer never reach the next request', async (st) => {
      const smuggled = 'HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\nsmuggle';
      const origin = await rawOrigin(st, (_r, i) => ({
        bytes: i === 0 ? answer('first') + smuggled : answer('second'),
      }));
      assert.equal((await send(oc, origin.port)).body, 'first');
      assert.equal((await send(oc, origin.port)).body, 'second');
      assert.equal(origin.connections, 2);
    });

    await t.test('a 204 that announces a body closes its connection', async (st) => {
      const origin = await rawOrigin(st, (_r, i) => ({
        bytes: i === 0 ? 'HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\nhello' : answer('next'),
      }));
      assert.equal((await send(oc, origin.port)).status, 204);
      assert.equal((await send(oc, origin.port)).body, 'next');
      assert.equal(origin.connections, 2);
    });

    await t.test('an answer before the whole body was sent is delivered; the connection is not reused', async (st) => {
      const origin = await rawOrigin(st, (_r, i) => ({
        bytes: i === 0 ? 'HTTP/1.1 413 Payload Too Large\r\nContent-Length: 3\r\n\r\nbig' : answer('next'),
        early: i === 0,
      }));
      const r = await send(oc, origin.port, 'POST', 'z'.repeat(4_000_000));
      assert.equal(r.status, 413);
      assert.equal(r.body, 'big');
      assert.equal((await send(oc, origin.port)).body, 'next');
    });

    await t.test('onData returning false holds the answer until resume', async (st) => {
      const chunks = Array.from({ length: 6 }, (_, i) => `${i}`.repeat(10_000)).join('');
      const origin = await rawOrigin(st, () => ({
        bytes: `HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n${chunks.length.toString(16)}\r\n${chunks}\r\n0\r\n\r\n`,
        pieces: 10_000,
      }));
      class Slow extends Recorder {
        calls = 0;
        paused = false;
        resume: (() => void) | undefined;
        override onHeaders(status: number, raw: Buffer[], resume: () => void): boolean {
          this.resume = resume;
          return super.onHeaders(status, raw);
        }
        override onData(chunk: Buffer): boolean {
          assert.equal(this.paused, false, 'onData while paused');
          this.calls++;
          super.onData(chunk);
          this.paused = true;
          setTimeout(() => {
            this.paused = false;
            this.resume!();
          }, 5);
          return false;
        }
        override onComplete(trailers: Buffer[] | null): void {
          assert.equal(this.paused, false, 'onComplete while paused');
          super.onComplete(trailers);
        }
      }
      const h = new Slow();
      const r = await send(oc, origin.port, 'GET', undefined, h);
      assert.equal(r.error, null);
      assert.equal(r.body, chunks);
      assert.ok(h.calls >= 2);
    });

    await t.test('no head within the timeout: EDGE_ORIGIN_HEADERS_TIMEOUT', async (st) => {
      const origin = await rawOrigin(st, () => ({ bytes: 'HTTP/1.1 200 OK\r\n', pieces: 1_000_000 }));
      const r = await send(oc, origin.port, 'GET', undefined, new Recorder(), 200);
      assert.equal(r.error, 'EDGE_ORIGIN_HEADERS_TIMEOUT');
    });

    await t.test('the head timeout runs from the end of the request body; a stalled upload fails', async (st) => {
      const origin = await rawOrigin(st, (req) => ({ bytes: answer(`got ${req.body.length}`) }));
      async function* slowly(stallMs: number) {
        for (let i = 0; i < 4; i++) {
          await new Promise((r) => setTimeout(r, i === 3 ? stallMs : 100));
          yield Buffer.from('abcd');
        }
      }
      const upload = (stallMs: number, headersTimeoutMs: number, bodyTimeoutMs: number) =>
        post(
          oc,
          origin.port,
          ['content-length', '16'],
          Readable.from(slowly(stallMs)),
          headersTimeoutMs,
          bodyTimeoutMs,
        );
      // 400 ms of upload with a 250 ms head timeout: answered.
      const r = await upload(100, 250, 250);
      assert.equal(r.error, null);
      assert.equal(r.body, 'got 16');
      // The body stops moving for longer than the body timeout: failed, a 504 at the edge.
      const stalled = upload(2000, 5000, 300);
      assert.equal((await stalled).error, 'EDGE_ORIGIN_HEADERS_TIMEOUT');
    });

    await t.test(
      'a chunked upload, chunks before and after the connection: framed exactly, the connection reused',
      async (st) => {
        const origin = await rawOrigin(st, (req, i) => ({ bytes: answer(`n${i} ${req.body.toString('latin1')}`) }));
        async function* parts() {
          yield Buffer.from('one');
          yield Buffer.from('three');
          await new Promise((r) => setTimeout(r, 20));
          yield Buffer.from('sixteen-bytes...');
        }
        const r = await post(oc, origin.port, ['host', 'o.example'], Readable.from(parts()));
        assert.equal(r.error, null);
        assert.equal(r.body, 'n0 onethreesixteen-bytes...');
        assert.match(origin.seen[0].head, /\r\ntransfer-encoding: chunked/i);
        // the framing ended where it said: the next request on the same connection is read right
        assert.equal((await send(oc, origin.port)).body, 'n1 ');
        assert.equal(origin.connections, 1);
      },
    );

    await t.test('a handler that throws fails its own request only; the process and the pool live on', async (st) => {
      const origin = await rawOrigin(st, (_r, i) => ({ bytes: answer(`n${i}`) }));
      class ThrowsOnHeaders extends Recorder {
        override onHeaders(): boolean {
          throw new Error('handler bug');
        }
      }
      assert.equal((await send(oc, origin.port, 'GET', undefined, new ThrowsOnHeaders())).error, 'handler bug');
      class ThrowsOnComplete extends Recorder {
        override onComplete(trailers: Buffer[] | null): void {
          super.onComplete(trailers);
          throw new Error('late handler bug');
        }
      }
      assert.equal((await send(oc, origin.port, 'GET', undefined, new ThrowsOnComplete())).body, 'n1');
      assert.equal((await send(oc, origin.port)).body, 'n2');
    });

    await t.test('an origin named by a host name is answered, its address resolved and checked', async (st) => {
      const origin = await rawOrigin(st, (_r, i) => ({ bytes: answer(`n${i}`) }));
      for (let i = 0; i < 4; i++) {
        const h = new Recorder();
        oc.dispatch('localhost', origin.port, '', 'GET', '/', ['host', 'x'], null, h, 5000, 5000);
        assert.equal((await h.done).body, `n${i}`);
      }
      // Kept alive. The native client sends a name's first request through the TypeScript client while it looks the
      // name up, then uses its own connection.
      assert.equal(origin.connections, kind.startsWith('native') ? 2 : 1);
    });

    await t.test('a reset mid-answer is no connection failure; a refused connection is', async (st) => {
      // upstream.ts isConnectFailure decides failover and the Auto scheme's fallback from the error's code and words.
      class Keeps extends Recorder {
        err: Error | undefined;
        override onError(err: Error): void {
          this.err = err;
          super.onError(err);
        }
      }
      const origin = await rawOrigin(st, () => ({
        bytes: `HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npart`,
        reset: true,
      }));
      const mid = new Keeps();
      await send(oc, origin.port, 'GET', undefined, mid);
      assert.ok(mid.err);
      assert.equal(isConnectFailure(mid.err), false, `${(mid.err as { code?: string }).code} ${mid.err.message}`);
      const server = createServer().listen(0, '127.0.0.1');
      await once(server, 'listening');
      const port = (server.address() as AddressInfo).port;
      await new Promise((r) => server.close(r)); // nothing listens there now
      const refused = new Keeps();
      await send(oc, port, 'GET', undefined, refused);
      assert.equal((refused.err as { code?: string }).code, 'ECONNREFUSED');
      assert.equal(isConnectFailure(refused.err!), true);
    });

    await t.test('an abort from the handler fails the request once and closes its connection', async (st) => {
      const origin = await rawOrigin(st, () => ({ bytes: `HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npart` }));
      const h = new Recorder();
      const p = send(oc, origin.port, 'GET', undefined, h);
      setTimeout(() => h.abort!(new Error('client aborted')), 50);
      const r = await p;
      assert.equal(r.error, 'client aborted');
    });
  });

for (const [kind, make] of CLIENTS)
  test(`origin client pools are bounded (${kind})`, async (t) => {
    await t.test('at most maxConnections per origin; the rest wait', async (st) => {
      const oc = make({ policy: loopback, maxPools: 4, maxConnections: 2 });
      st.after(() => oc.close());
      const origin = await rawOrigin(st, (_r, i) => ({ bytes: answer(`n${i}`), pieces: 2 }));
      const all = await Promise.all(Array.from({ length: 6 }, () => send(oc, origin.port)));
      assert.deepEqual(
        all.map((r) => r.error),
        Array(6).fill(null),
      );
      assert.equal(origin.connections, 2);
    });

    await t.test('at most maxPools origins; the least recently used is closed', async (st) => {
      const oc = make({ policy: loopback, maxPools: 2 });
      st.after(() => oc.close());
      const origins = [];
      for (let i = 0; i < 3; i++) origins.push(await rawOrigin(st, () => ({ bytes: answer('x') })));
      for (const o of origins) assert.equal((await send(oc, o.port)).body, 'x');
      assert.equal(oc.size, 2);
      assert.equal(oc.evicted, 1);
      assert.equal(oc.connections('127.0.0.1', origins[0].port), 0);
    });

    await t.test('the address guard applies to every connection', async (st) => {
      const oc = make({ policy: new AddressPolicy([]), maxPools: 4 });
      st.after(() => oc.close());
      const origin = await rawOrigin(st, () => ({ bytes: answer('x') }));
      const r = await send(oc, origin.port);
      assert.equal(r.error, 'NET_ERR_ADDRESS_REFUSED');
      assert.equal(origin.connections, 0);
      const named = new Recorder();
      oc.dispatch('localhost', origin.port, '', 'GET', '/', ['host', 'x'], null, named, 1000, 1000);
      assert.equal((await named.done).error, 'NET_ERR_ADDRESS_REFUSED');
    });

    await t.test('an invalid request is refused before anything is sent', async (st) => {
      const oc = make({ policy: loopback, maxPools: 4 });
      st.after(() => oc.close());
      const origin = await rawOrigin(st, () => ({ bytes: answer('x') }));
      for (const [path, headers] of [
        ['/a b', ['host', 'x']],
        ['/a', ['host', 'x\r\nx-injected: 1']],
        ['/a', ['bad name', 'x']],
        ['/a', ['transfer-encoding', 'chunked']],
      ] as [string, string[]][]) {
        const h = new Recorder();
        oc.dispatch('127.0.0.1', origin.port, '', 'GET', path, headers, null, h, 1000, 1000);
        assert.equal((await h.done).error, 'EDGE_ORIGIN_REQUEST', `${path} ${JSON.stringify(headers)}`);
      }
      assert.equal(origin.connections, 0);
    });
  });

test('a proxied head encoded from a once-checked template equals the head encoded line by line', () => {
  const client: [string, string][] = [
    ['user-agent', 'curl/8'],
    ['connection', 'keep-alive'],
    ['accept', '*/*'],
    ['x-forwarded-for', '203.0.113.9'],
  ];
  const skip = new Set(['connection', 'x-forwarded-for']);
  const tail = 'x-forwarded-for: 192.0.2.1\r\n';
  const flat = (c: [string, string][]) => [
    'host',
    'o.example',
    ...c.filter(([k]) => !skip.has(k)).flat(),
    'x-forwarded-for',
    '192.0.2.1',
  ];
  const fixed = encodeLines([['host', 'o.example']]);
  for (const [method, path, extra, body] of [
    ['GET', '/a?b=1', [], false],
    ['POST', '/p', [], false],
    ['POST', '/p', [['content-length', '3']], true],
    ['PUT', '/u', [], true],
    ['GET', '/a b', [], false],
    ['GET', '/', [['x-bad', 'a\r\nx-injected: 1']], false],
    ['GET', '/', [['bad name', 'x']], false],
    ['GET', '/', [['transfer-encoding', 'chunked']], false],
    ['GET', '/', [['content-length', '1']], false],
    ['GET', '/', [['content-length', '1, 1']], true],
  ] as [string, string, [string, string][], boolean][]) {
    const headers = [...client, ...extra];
    const a = encodeProxied(method, path, fixed, headers, skip, tail, body);
    const b = encodeRequest(method, path, flat(headers), body);
    const what = `${method} ${path} ${JSON.stringify(extra)}`;
    assert.equal(a.invalid?.message, b.invalid?.message, what);
    if (b.invalid === null) assert.deepEqual([a.head, a.declaredLength], [b.head, b.declaredLength], what);
  }
  // A Host value that may not be sent fails every request of the template.
  const bad = encodeLines([['host', 'o.example\r\nx-injected: 1']]);
  assert.equal(encodeProxied('GET', '/', bad, [], skip, '', false).invalid?.code, 'EDGE_ORIGIN_REQUEST');
});
