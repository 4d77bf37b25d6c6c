// The challenge through a running edge: captcha rules (enforce, dry run), the record `captcha` flag and Under Attack
// Mode; the proof of work solved here with Node's crypto; forged, expired, other-host, other-address cookies and
// replayed or wrong answers refused; the page's own JavaScript solves it too.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { runInNewContext } from 'node:vm';
import { proxiedRecord, rule, send, snapshot, startStubOrigin, startTestEdge, type Reply } from '../testing/harness.js';
import {
  CHALLENGE_DIFFICULTY,
  CHALLENGE_PATH,
  CLEARANCE_COOKIE,
  MAX_ANSWER_BYTES,
  challengePage,
  clearance,
  workDone,
} from './challenge.js';

function solve(nonce: string): string {
  for (let i = 0; ; i++) if (workDone(nonce, String(i), CHALLENGE_DIFFICULTY)) return String(i);
}

const nonceOf = (page: Reply) => /name="nonce" value="([^"]+)"/.exec(page.body)![1];
const form = (o: Record<string, string>) => new URLSearchParams(o).toString();
const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

test('challenge through the edge', async (t) => {
  const origin = await startStubOrigin('main');
  t.after(() => origin.close());
  const records = [proxiedRecord('www', origin.port), proxiedRecord('api', origin.port)];
  const guarded = snapshot('guarded.example.org', {
    records,
    rules: [
      rule('captcha', { path_includes: ['/login'], pass_ttl_s: 600 }),
      rule('captcha', { path_includes: ['/dry'], action_mode: 'dry_run' }),
    ],
  });
  const flagged = snapshot('flagged.example.org', {
    records: [proxiedRecord('www', origin.port, { captcha: true }), proxiedRecord('open', origin.port)],
  });
  const other = snapshot('other.example.net', { records: [proxiedRecord('www', origin.port)] });
  const edge = await startTestEdge(t, [guarded, flagged, other]);
  const port = edge.node.server.httpPort;
  const host = 'www.guarded.example.org';
  const [loginRule, dryRule] = guarded.ruleSet.rules.map((r) => r.id);

  /** Gets the page for `path`, solves it, posts the answer; returns the cookie pair and the answer's reply. */
  async function pass(h: string, path: string, localAddress?: string) {
    const page = await send(port, h, path, { localAddress });
    assert.equal(page.status, 403);
    assert.equal(page.headers['x-edge-challenge'], 'pow');
    assert.equal(page.headers['cache-control'], 'no-store');
    const nonce = nonceOf(page);
    const answer = await send(port, h, CHALLENGE_PATH, {
      method: 'POST',
      headers: FORM,
      body: form({ nonce, solution: solve(nonce), return: path }),
      localAddress,
    });
    assert.equal(answer.status, 303, answer.body);
    assert.equal(answer.headers.location, path);
    const set = String(answer.headers['set-cookie']);
    assert.match(set, /HttpOnly/);
    assert.match(set, /Path=\//);
    return { cookie: set.split(';')[0], nonce, answer };
  }

  await t.test(
    'captcha rule: page, solved, cookie lets the client through; other paths and tenants untouched',
    async () => {
      assert.equal((await send(port, host, '/')).status, 200);
      assert.equal((await send(port, 'www.other.example.net', '/login')).status, 200);
      const { cookie, answer } = await pass(host, '/login');
      assert.match(String(answer.headers['set-cookie']), /Max-Age=600/);
      const through = await send(port, host, '/login', { headers: { cookie: `a=b; ${cookie}` } });
      assert.equal(through.status, 200);
      assert.equal(through.body, 'origin main /login');
      const log = edge.node.logs.drain();
      assert.ok(log.some((r) => r.status === 403 && r.rules.some(([id, , dry]) => id === loginRule && !dry)));
    },
  );

  await t.test('dry run: the request passes and is logged as would-have-challenged', async () => {
    const r = await send(port, host, '/dry');
    assert.equal(r.status, 200);
    assert.ok(edge.node.logs.drain().some((l) => l.rules.some(([id, , dry]) => id === dryRule && dry)));
  });

  await t.test('record captcha flag: every request of that record, not the others', async () => {
    assert.equal((await send(port, 'open.flagged.example.org', '/')).status, 200);
    assert.equal((await send(port, 'www.flagged.example.org', '/x?y=1')).status, 403);
    assert.ok(
      edge.node.logs
        .drain()
        .some((l) => l.status === 403 && l.rules.some(([id, type]) => id === 0 && type === 'captcha')),
    );
    const { cookie } = await pass('www.flagged.example.org', '/x?y=1');
    assert.equal((await send(port, 'www.flagged.example.org', '/x', { headers: { cookie } })).status, 200);
  });

  await t.test('Under Attack Mode: every request of the domain until it is turned off', async () => {
    edge.apply(
      snapshot('guarded.example.org', { records, rules: guarded.ruleSet.rules, settings: { underAttack: true } }),
    );
    assert.equal((await send(port, host, '/')).status, 403);
    assert.equal((await send(port, 'api.guarded.example.org', '/v1', { method: 'POST', body: '{}' })).status, 403);
    // An origin's own ACME HTTP-01 validation still reaches it.
    assert.equal((await send(port, host, '/.well-known/acme-challenge/token-1')).status, 200);
    assert.equal((await send(port, 'www.other.example.net', '/')).status, 200, 'the other tenant');
    assert.ok(
      edge.node.logs
        .drain()
        .some((l) => l.status === 403 && l.rules.some(([id, type]) => id === 0 && type === 'under_attack')),
    );
    const { cookie } = await pass('api.guarded.example.org', '/v1');
    assert.equal((await send(port, 'api.guarded.example.org', '/v1', { headers: { cookie } })).status, 200);
    edge.apply(snapshot('guarded.example.org', { records, rules: guarded.ruleSet.rules }));
    assert.equal((await send(port, host, '/')).status, 200);
  });

  await t.test('abuse: cookies forged, expired, for another host or another address are refused', async () => {
    const { cookie } = await pass(host, '/login');
    const value = cookie.slice(CLEARANCE_COOKIE.length + 1);
    const [exp, sig] = value.split('.');
    const tries = [
      `${CLEARANCE_COOKIE}=${Number(exp) + 100000}.${sig}`, // expiry moved
      `${CLEARANCE_COOKIE}=${exp}.${'A'.repeat(sig.length)}`, // forged mac
      `${CLEARANCE_COOKIE}=${clearance('127.0.0.1', host, 600, Date.now() - 700_000)}`, // this process's key, expired
      `${CLEARANCE_COOKIE}=${'9'.repeat(5000)}`, // huge
      `x${CLEARANCE_COOKIE}=${value}`, // another cookie's name
    ];
    for (const c of tries) assert.equal((await send(port, host, '/login', { headers: { cookie: c } })).status, 403, c);
    // Solved on www, sent to api (the same domain) and from another address: refused.
    edge.apply(
      snapshot('guarded.example.org', { records, rules: guarded.ruleSet.rules, settings: { underAttack: true } }),
    );
    assert.equal((await send(port, 'api.guarded.example.org', '/', { headers: { cookie } })).status, 403);
    assert.equal((await send(port, host, '/', { headers: { cookie }, localAddress: '127.0.0.2' })).status, 403);
    assert.equal((await send(port, host, '/', { headers: { cookie } })).status, 200);
    // Once verified (and remembered), the same value is still refused from another address or on another host.
    assert.equal((await send(port, host, '/', { headers: { cookie }, localAddress: '127.0.0.2' })).status, 403);
    assert.equal((await send(port, 'api.guarded.example.org', '/', { headers: { cookie } })).status, 403);
    edge.apply(snapshot('guarded.example.org', { records, rules: guarded.ruleSet.rules }));
  });

  await t.test('abuse: replayed, wrong, other-host, other-address, malformed and oversized answers', async () => {
    const { nonce } = await pass(host, '/login');
    const post = (h: string, body: string, localAddress?: string) =>
      send(port, h, CHALLENGE_PATH, { method: 'POST', headers: FORM, body, localAddress });
    assert.equal((await post(host, form({ nonce, solution: solve(nonce) }))).status, 403, 'replayed');
    const fresh = nonceOf(await send(port, host, '/login'));
    let wrong = 0;
    while (workDone(fresh, String(wrong), CHALLENGE_DIFFICULTY)) wrong++;
    assert.equal((await post(host, form({ nonce: fresh, solution: String(wrong) }))).status, 403, 'wrong');
    const good = solve(fresh);
    assert.equal((await post('api.guarded.example.org', form({ nonce: fresh, solution: good }))).status, 403);
    assert.equal((await post(host, form({ nonce: fresh, solution: good }), '127.0.0.2')).status, 403);
    for (const bad of ['', 'nonce=a.b', form({ nonce: fresh, solution: '1e5' }), form({ nonce: 'x'.repeat(3000) })])
      assert.equal((await post(host, bad)).status, 400, bad.slice(0, 40));
    assert.equal((await post(host, 'x'.repeat(MAX_ANSWER_BYTES + 1))).status, 413);
    assert.equal((await send(port, host, CHALLENGE_PATH)).status, 405);
    // An open redirect is not offered: the return must be a local path.
    const r = await post(host, form({ nonce: fresh, solution: good, return: '//evil.example/' }));
    assert.equal(r.status, 303);
    assert.equal(r.headers.location, '/');
    // The first answer was good: a second one with the same nonce is a replay.
    assert.equal((await post(host, form({ nonce: fresh, solution: good }))).status, 403);
  });
});

test("the page's own JavaScript finds an accepted answer", () => {
  const nonce = '1700000000.1800.abcdefghijklmnop.sig';
  const html = challengePage(nonce, '/a?b=<c>');
  assert.ok(!html.includes('<c>'), 'the return path is escaped');
  const script = /<script>([\s\S]*)<\/script>/.exec(html)![1];
  const fields: Record<string, { value?: string; textContent?: string; submit?: () => void }> = {};
  let submitted = false;
  const document = {
    getElementById: (id: string) => (fields[id] ??= { submit: () => (submitted = true) }),
  };
  runInNewContext(script, { document, DataView, Uint8Array, Int32Array, Math, String });
  assert.ok(submitted);
  const solution = fields.solution.value!;
  assert.equal(solution, solve(nonce), 'the smallest answer, as Node finds it');
  // The written-out SHA-256 agrees with Node's on the first word for the answer.
  const d = createHash('sha256').update(`${nonce}:${solution}`).digest();
  assert.equal(d.readUInt32BE(0) >>> (32 - CHALLENGE_DIFFICULTY), 0);
});
