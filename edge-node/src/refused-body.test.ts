// Requests the edge answers without reading their body (an unknown host, drop, a custom, fingerprint or bot block,
// rate_limit's 429, the challenge page, basic_auth's 401, a redirect, an oversized challenge answer): uWS goes on
// delivering the body after the answer, which the edge drops. Before, the body stream paused uWS once its buffer was
// full, and uWS throws when an answered response is touched: a 2 MB POST to a blocked path took the process down.
// The connection stays usable for the next request: uWS reads the rest, or, when it is paused on a body partly read
// (an oversized challenge answer; a body the WAF read the first 128 KiB of, then it or a later phase refused), the
// answer closes the connection and the client opens another. Another tenant is answered throughout.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Agent, request } from 'node:http';
import { proxiedRecord, rule, send, snapshot, startStubOrigin, startTestEdge } from './testing/harness.js';
import { CHALLENGE_PATH } from './rules/challenge.js';
import { hashPassword } from '@platform/shared/match';

interface Answer {
  status: number;
  body: string;
  socket: unknown;
}

/** One request on `agent` (kept-alive connections); the body, if any, sent as one piece or in chunks. */
function exchange(
  agent: Agent,
  port: number,
  host: string,
  path: string,
  opts: { method?: string; body?: Buffer; chunked?: boolean; headers?: Record<string, string> } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { host, ...opts.headers };
    if (opts.body && !opts.chunked) headers['content-length'] = String(opts.body.length);
    if (opts.body) headers['content-type'] ??= 'application/octet-stream';
    const req = request({ host: '127.0.0.1', port, path, method: opts.method ?? 'GET', agent, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString(), socket: res.socket }),
      );
      res.on('error', reject);
    });
    req.on('error', reject);
    if (opts.body && opts.chunked)
      for (let i = 0; i < opts.body.length; i += 65_536) req.write(opts.body.subarray(i, i + 65_536));
    else if (opts.body) req.write(opts.body);
    req.end();
  });
}

test('a body the edge answers without reading is dropped; the process and the connection live on', async (t) => {
  const origin = await startStubOrigin('main');
  t.after(() => origin.close());
  const scripted = { 'user-agent': 'curl/8.5.0' };
  const edge = await startTestEdge(t, [
    snapshot('refusing.example.org', {
      records: [proxiedRecord('www', origin.port)],
      rules: [
        rule('drop', { path_includes: ['/dropped'] }),
        rule('custom', { expression: 'http.request.uri.path eq "/blocked"', action: 'block' }),
        rule('bot_route', { classes: ['automation'], path_includes: ['/bots/*'] }),
        rule('rate_limit', { path_includes: ['/limited'], requests: 1, period_s: 600, block_s: 600 }),
        rule('captcha', { path_includes: ['/login'] }),
        rule('basic_auth', {
          path_includes: ['/staff/*'],
          users: [{ username: 'alice', password_hash: await hashPassword('wonderland') }],
        }),
        rule('redirect', { path_includes: ['/old/*'], target: '/new/$1' }),
      ],
    }),
    snapshot('neighbour.example.org', { records: [proxiedRecord('www', origin.port)] }),
  ]);
  const port = edge.node.server.httpPort;
  const host = 'www.refusing.example.org';
  const big = Buffer.alloc(2 * 1024 * 1024, 97);
  assert.equal((await send(port, host, '/limited')).status, 200, 'the one request the limit allows');

  const cases: [string, string, number, Record<string, string>?][] = [
    ['unknown host', '/x', 421],
    ['drop', '/dropped', 403],
    ['custom block', '/blocked', 403],
    ['bot block', '/bots/x', 403, scripted],
    ['rate_limit', '/limited', 429],
    ['challenge page', '/login', 403],
    ['basic_auth', '/staff/x', 401],
    ['redirect', '/old/x', 302],
    ['oversized challenge answer', CHALLENGE_PATH, 413],
  ];
  for (const chunked of [false, true]) {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    t.after(() => agent.destroy());
    for (const [what, path, status, headers] of cases) {
      const to = what === 'unknown host' ? 'www.unknown.example' : host;
      const refused = await exchange(agent, port, to, path, { method: 'POST', body: big, chunked, headers });
      assert.equal(refused.status, status, `${what}${chunked ? ', chunked' : ''}`);
      const next = await exchange(agent, port, host, '/after');
      assert.equal(next.status, 200, `after ${what}`);
      assert.equal(next.body, 'origin main /after');
      assert.equal((await send(port, 'www.neighbour.example.org', '/n')).status, 200, 'the neighbour');
    }
  }
  // The WAF reads the first 128 KiB of a larger body (uWS paused on the rest): it refuses an attack there, or passes
  // the body to a later phase that refuses the request (basic_auth, redirect).
  edge.apply(
    snapshot('waf.example.org', {
      records: [proxiedRecord('www', origin.port)],
      rules: [
        rule('waf', {}),
        rule('basic_auth', {
          path_includes: ['/staff/*'],
          users: [{ username: 'alice', password_hash: await hashPassword('wonderland') }],
        }),
        rule('redirect', { path_includes: ['/old/*'], target: '/new/$1' }),
      ],
    }),
  );
  const pad = 'a'.repeat(2 << 20);
  const attack = Buffer.from(JSON.stringify({ q: "1' union select password from users--", pad }));
  const benign = Buffer.from(JSON.stringify({ note: 'hello', pad }));
  const afterWaf: [string, string, Buffer, number][] = [
    ['waf', '/api', attack, 403],
    ['basic_auth after the waf', '/staff/x', benign, 401],
    ['redirect after the waf', '/old/x', benign, 302],
  ];
  for (const chunked of [false, true])
    for (const [what, path, body, status] of afterWaf) {
      const agent = new Agent({ keepAlive: true, maxSockets: 1 });
      t.after(() => agent.destroy());
      const json = { 'content-type': 'application/json' };
      const refused = await exchange(agent, port, 'www.waf.example.org', path, {
        method: 'POST',
        body,
        chunked,
        headers: json,
      });
      assert.equal(refused.status, status, `${what}${chunked ? ', chunked' : ''}`);
      const next = await exchange(agent, port, host, '/after');
      assert.equal(next.status, 200, `after ${what}`);
    }
  // A body the edge does forward still reaches the origin whole.
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  t.after(() => agent.destroy());
  const passed = await exchange(agent, port, host, '/upload', { method: 'POST', body: big });
  assert.equal(passed.status, 200);
  assert.equal(origin.seen.at(-1)!.body.length, big.length);
});
