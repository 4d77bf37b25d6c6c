// Issue 10 items 7 and 2 through a running edge node: header rules cannot touch message framing (rules stored before
// the API refused them included), basic_auth guessing is throttled per client address and rule and its scrypt runs
// off the thread pool DNS lookups share, a wildcard pattern with many stars costs no backtracking, a Host of
// thousands of labels costs no quadratic lookup, and a client dripping its request head keeps no connection for long.
// Another tenant is served throughout.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { connect } from 'node:net';
import { decodeRuleBody, encodeRuleBody, hashPassword } from '@platform/shared/match';
import { proxiedRecord, rule, send, snapshot, startStubOrigin, startTestEdge } from './testing/harness.js';
import { AUTH_MAX_FAILURES } from './rules/basic-auth.js';

/** A header rule as an older API stored it, before edge-owned headers were refused. */
function legacyHeaderRule(ops: { request_headers: unknown[]; response_headers: unknown[] }) {
  const r = rule('header', { response_headers: [{ op: 'set', name: 'x-placeholder', value: '1' }] });
  return { ...r, body: encodeRuleBody({ ...decodeRuleBody(r.body), ...ops }) };
}

test('header rules cannot set framing or hop-by-hop headers, nor the Host sent to the origin', async (t) => {
  const origin = await startStubOrigin('o', (req, res) => res.end(`host=${req.headers.host} body=${'x'.repeat(64)}`));
  t.after(() => origin.close());
  const edge = await startTestEdge(t, [
    snapshot('framing.example', {
      records: [proxiedRecord('www', origin.port)],
      rules: [
        legacyHeaderRule({
          request_headers: [
            { op: 'set', name: 'host', value: 'www.victim.example' },
            { op: 'set', name: 'content-length', value: '5' },
          ],
          response_headers: [
            { op: 'set', name: 'content-length', value: '1' },
            { op: 'set', name: 'transfer-encoding', value: 'chunked' },
            { op: 'set', name: 'connection', value: 'close' },
            { op: 'set', name: 'x-kept', value: 'yes' },
          ],
        }),
      ],
    }),
    snapshot('victim.example', { records: [proxiedRecord('www', origin.port)] }),
  ]);
  const port = edge.node.server.httpPort;
  // Two requests on one kept-alive connection: the framing the client sees is the edge's, whole and reusable.
  const agentRes = await twoOnOneConnection(port, 'www.framing.example');
  for (const r of agentRes) {
    assert.equal(r.status, 200);
    assert.equal(r.body, `host=www.framing.example body=${'x'.repeat(64)}`);
    assert.equal(r.headers['x-kept'], 'yes');
    assert.equal(r.headers['content-length'], String(r.body.length));
    assert.equal(r.headers['transfer-encoding'], undefined);
  }
  const other = await send(port, 'www.victim.example', '/');
  assert.equal(other.status, 200);
  assert.match(other.body, /^host=www\.victim\.example /);
});

test('basic_auth: failures are throttled per client address and rule; others keep signing in', async (t) => {
  const origin = await startStubOrigin('o');
  t.after(() => origin.close());
  const users = [{ username: 'alice', password_hash: await hashPassword('wonderland') }];
  const edge = await startTestEdge(t, [
    snapshot('auth.example', {
      records: [proxiedRecord('www', origin.port)],
      rules: [rule('basic_auth', { realm: 'Staff', users })],
    }),
    snapshot('other.example', {
      records: [proxiedRecord('www', origin.port)],
      rules: [rule('basic_auth', { realm: 'Other', users })],
    }),
  ]);
  const port = edge.node.server.httpPort;
  const basic = (pw: string) => ({ authorization: `Basic ${Buffer.from(`alice:${pw}`).toString('base64')}` });
  const from = (localAddress: string, host: string, pw: string) =>
    send(port, host, '/', { headers: basic(pw), localAddress });

  for (let i = 0; i < AUTH_MAX_FAILURES; i++)
    assert.equal((await from('127.0.0.1', 'www.auth.example', `guess${i}`)).status, 401);
  const blocked = await from('127.0.0.1', 'www.auth.example', 'guess-more');
  assert.equal(blocked.status, 429);
  assert.ok(Number(blocked.headers['retry-after']) >= 1);
  // Even the right password waits: no scrypt runs for this address and rule until the window ends.
  assert.equal((await from('127.0.0.1', 'www.auth.example', 'wonderland')).status, 429);
  // Another client address, and the same address on another tenant's rule, are not affected.
  assert.equal((await from('127.0.0.5', 'www.auth.example', 'wonderland')).status, 200);
  assert.equal((await from('127.0.0.1', 'www.other.example', 'wonderland')).status, 200);
  // A credential verified before keeps working without a new check.
  assert.equal((await from('127.0.0.1', 'www.auth.example', 'wonderland')).status, 200);
});

test('basic_auth: a flood of wrong passwords keeps scrypt off the shared thread pool; a neighbour whose origin needs a DNS lookup is answered first', async (t) => {
  const origin = await startStubOrigin('o', (req, res) => res.end(`origin ${req.headers.host}`));
  t.after(() => origin.close());
  const users = [{ username: 'alice', password_hash: await hashPassword('wonderland') }];
  const edge = await startTestEdge(t, [
    snapshot('guarded.example', {
      records: [proxiedRecord('www', origin.port)],
      rules: [rule('basic_auth', { realm: 'Staff', users })],
    }),
    // The neighbour's origin is a name: every new connection to it resolves it with dns.lookup, which runs on libuv's
    // 4-thread pool, where scrypt ran before it got a thread of its own.
    snapshot('neighbour.example', {
      records: [proxiedRecord('*', origin.port, { type: 'CNAME', destination: 'localhost.' })],
    }),
  ]);
  const port = edge.node.server.httpPort;
  const wrong = { authorization: `Basic ${Buffer.from('alice:guess').toString('base64')}` };
  // 20 client addresses, 10 guesses each, all at once: about 200 scrypt checks (50 ms or so each) wait their turn.
  let attackerAnswers = 0;
  const flood = Array.from({ length: 200 }, (_, i) =>
    send(port, 'www.guarded.example', '/', { headers: wrong, localAddress: `127.0.1.${1 + (i % 20)}` }).then((r) => {
      attackerAnswers++;
      return r.status;
    }),
  );
  await new Promise((r) => setTimeout(r, 200));
  const other = await send(port, 'fresh-name.neighbour.example', '/n');
  const answeredBefore = attackerAnswers;
  assert.equal(other.status, 200);
  assert.equal(other.body, 'origin fresh-name.neighbour.example');
  const statuses = await Promise.all(flood);
  assert.ok(
    answeredBefore < statuses.length / 2,
    `the neighbour was answered after ${answeredBefore} of ${statuses.length} guesses, not behind them`,
  );
  assert.ok(
    statuses.every((s) => s === 401 || s === 429),
    `guesses answered 401 or 429: ${[...new Set(statuses)].join(', ')}`,
  );
});

test('a Host longer than a DNS name is not served (421), even under a `*` record; the neighbour is answered', async (t) => {
  const origin = await startStubOrigin('o', (req, res) => res.end(`origin ${req.headers.host}`));
  t.after(() => origin.close());
  const edge = await startTestEdge(t, [
    snapshot('wild.example', { records: [proxiedRecord('*', origin.port)] }),
    snapshot('neighbour.example', { records: [proxiedRecord('www', origin.port)] }),
  ]);
  const port = edge.node.server.httpPort;
  // 7000 labels in a 14 KB header: looking up every suffix of it took about a second of the worker's time per request.
  const long = `${'a.'.repeat(7000)}wild.example`;
  const [attack, other] = await Promise.all([
    send(port, long, '/', { timeoutMs: 5_000 }),
    send(port, 'www.neighbour.example', '/home', { timeoutMs: 5_000 }),
  ]);
  assert.equal(attack.status, 421);
  assert.equal(attack.headers['x-edge-error'], 'EDGE_ERR_HOST_NOT_SERVED');
  assert.equal(other.status, 200);
  assert.equal(other.body, 'origin www.neighbour.example');
  // The longest DNS name (253 characters) under the `*` record is still served.
  const longest = `${'a'.repeat(63)}.${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(48)}.wild.example`;
  assert.equal(longest.length, 253);
  const served = await send(port, longest, '/');
  assert.equal(served.status, 200);
  assert.equal(served.body, `origin ${longest}`);
  assert.equal(origin.seen.filter((s) => s.headers.host === long).length, 0, 'nothing reached the origin');
});

test('wildcards: a path pattern of many stars against a long path answers at once, another tenant in flight too', async (t) => {
  const origin = await startStubOrigin('o');
  t.after(() => origin.close());
  // Compiled to a backtracking regex this is `^/(.*)a(.*)a…b$` with 30 groups: a path of a's without the final b
  // makes it try every way to split the a's among the groups, for far longer than any test waits.
  const stars = `/${'*a'.repeat(30)}*b`;
  const edge = await startTestEdge(t, [
    snapshot('stars.example', {
      records: [proxiedRecord('www', origin.port)],
      rules: [rule('drop', { path_includes: [stars] })],
    }),
    snapshot('neighbour.example', { records: [proxiedRecord('www', origin.port)] }),
  ]);
  const port = edge.node.server.httpPort;
  const within = { timeoutMs: 5_000 };
  const [attack, other] = await Promise.all([
    send(port, 'www.stars.example', `/${'a'.repeat(3000)}`, within),
    send(port, 'www.neighbour.example', '/home', within),
  ]);
  assert.equal(attack.status, 200, 'no b at the end: not dropped, proxied');
  assert.equal(other.status, 200);
  assert.equal(other.body, 'origin o /home');
  assert.equal((await send(port, 'www.stars.example', `/${'a'.repeat(3000)}b`, within)).status, 403);
});

test('slow request heads: a connection that drips a byte a second is closed, another tenant is answered meanwhile', async (t) => {
  const origin = await startStubOrigin('o');
  t.after(() => origin.close());
  const edge = await startTestEdge(t, [
    snapshot('neighbour.example', { records: [proxiedRecord('www', origin.port)] }),
  ]);
  const port = edge.node.server.httpPort;
  const head = 'GET / HTTP/1.1\r\nHost: www.neighbour.example\r\nX-Slow: ' + 'a'.repeat(200) + '\r\n\r\n';
  // uWS's idle timeout (about 10 s) is not pushed back by each byte of an unfinished head, unlike a per-read timer.
  const drip = () =>
    new Promise<{ closed: boolean; answered: string }>((resolve) => {
      const s = connect(port, '127.0.0.1');
      let answered = '';
      let i = 0;
      const tick = setInterval(() => {
        if (i < head.length) s.write(head[i++]!);
      }, 1000);
      const giveUp = setTimeout(() => {
        clearInterval(tick);
        s.destroy();
        resolve({ closed: false, answered });
      }, 60_000);
      s.on('data', (d) => (answered += d));
      s.on('error', () => undefined);
      s.on('close', () => {
        clearInterval(tick);
        clearTimeout(giveUp);
        resolve({ closed: true, answered });
      });
    });
  const slow = Array.from({ length: 20 }, drip);
  await new Promise((r) => setTimeout(r, 2000));
  const other = await send(port, 'www.neighbour.example', '/home', { timeoutMs: 5_000 });
  assert.equal(other.status, 200);
  assert.equal(other.body, 'origin o /home');
  for (const r of await Promise.all(slow)) {
    assert.ok(r.closed, 'the edge closed the dripping connection before its head was complete');
    assert.equal(r.answered, '', 'nothing was answered to an unfinished head');
  }
  assert.equal((await send(port, 'www.neighbour.example', '/after')).status, 200);
});

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** Two GETs in sequence over one keep-alive socket. */
async function twoOnOneConnection(port: number, host: string): Promise<Answer[]> {
  const { Agent } = await import('node:http');
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const one = () =>
    new Promise<Answer>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port, path: '/', agent, headers: { host } }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString() }),
        );
      });
      req.on('error', reject);
      req.end();
    });
  try {
    return [await one(), await one()];
  } finally {
    agent.destroy();
  }
}
