// waf rules through a running edge node: enforce answers 403 before the origin is asked and logs the findings; dry
// run logs them with action `log` and passes; exclusions and the rule's own path scope; bodies are inspected and the
// origin still receives them whole (the inspected prefix and the rest of a large body).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { proxiedRecord, rule, send, snapshot, startStubOrigin, startTestEdge } from '../testing/harness.js';
import type { RequestLogRecord } from '../log/buffer.js';

async function waitFor(probe: () => RequestLogRecord | undefined): Promise<RequestLogRecord> {
  for (let i = 0; i < 100; i++) {
    const r = probe();
    if (r) return r;
    await new Promise((res) => setTimeout(res, 100));
  }
  throw new Error('no such log record within 10 s');
}

const UA = { 'user-agent': 'Mozilla/5.0 (X11; Linux x86_64) Firefox/128.0', accept: 'text/html' };

test('waf enforce and dry_run at the edge', { timeout: 120_000 }, async (t) => {
  const origin = await startStubOrigin('waf', (req, res, body) => {
    res.setHeader('content-type', 'text/plain');
    res.end(`origin ${req.method} ${req.url} ${body.length}`);
  });
  t.after(() => origin.close());
  const enforced = rule('waf', {
    paranoia_level: 1,
    path_excludes: ['/unguarded/*'],
    exclusions: [{ rule_ids: ['sqli'], paths: ['/sql-console'], args: ['statement'] }],
  });
  const dry = rule('waf', { action_mode: 'dry_run', paranoia_level: 2 });
  // A custom rule's allow exempts a partner's scanner from the WAF.
  const partner = rule('custom', { expression: 'http.user_agent eq "partner-scan/1"', action: 'allow' });
  const edge = await startTestEdge(t, [
    snapshot('guarded.example', { records: [proxiedRecord('www', origin.port)], rules: [enforced, partner] }),
    snapshot('watched.example', { records: [proxiedRecord('www', origin.port)], rules: [dry] }),
  ]);
  const port = edge.node.server.httpPort;
  const www = 'www.guarded.example';
  const attack = `/search?q=${encodeURIComponent("' union select password from users--")}`;
  edge.node.logs.drain();

  // Enforce: 403 from the edge, the origin never asked, the findings in the request log.
  const seenBefore = origin.seen.length;
  const blocked = await send(port, www, attack, { headers: UA });
  assert.equal(blocked.status, 403);
  assert.equal(blocked.headers['x-edge-error'], 'EDGE_ERR_WAF_BLOCKED');
  assert.equal(blocked.body, 'request blocked by the web application firewall\n');
  assert.equal(origin.seen.length, seenBefore, 'the origin is not asked');
  let log = edge.node.logs.drain();
  let rec = log.find((l) => l.path === '/search');
  assert.ok(rec?.waf && rec.waf.length > 0, JSON.stringify(log));
  assert.deepEqual(rec.rules, [[enforced.id, 'waf', false]]);
  const [ruleId, wafRule, phase, target, data, action] = rec.waf[0];
  assert.equal(ruleId, enforced.id);
  assert.ok(wafRule.startsWith('942'), wafRule);
  assert.equal(phase, 1);
  assert.equal(target, 'args:q');
  assert.ok(data.includes('union select') && data.length <= 64);
  assert.equal(action, 'block');

  const exempt = await send(port, www, attack, { headers: { ...UA, 'user-agent': 'partner-scan/1' } });
  assert.equal(exempt.status, 200, 'a custom allow skips the WAF');
  edge.node.logs.drain();

  // Benign look-alikes pass, and leave no WAF record.
  for (const p of [`/people?name=${encodeURIComponent("O'Brien")}`, '/search?q=select+a+plan']) {
    const r = await send(port, www, p, { headers: UA });
    assert.equal(r.status, 200, p);
  }
  log = edge.node.logs.drain();
  assert.ok(log.every((l) => l.waf === undefined));

  // Bodies: an attack in a JSON body is refused; a benign one reaches the origin whole, so does one larger than
  // the inspected prefix (128 KiB read, the rest streamed after it).
  const json = { 'content-type': 'application/json', ...UA };
  const bad = await send(port, www, '/api/items', {
    method: 'POST',
    headers: json,
    body: JSON.stringify({ name: 'lamp', note: '<img src=x onerror=alert(1)>' }),
  });
  assert.equal(bad.status, 403);
  rec = edge.node.logs.drain().find((l) => l.path === '/api/items');
  assert.ok(rec?.waf?.some(([, id, ph, tgt]) => id.startsWith('941') && ph === 2 && tgt === 'args:note'));
  const good = JSON.stringify({ name: "O'Brien's lamp", code: 'function f(a) { return a + 1; }' });
  const ok = await send(port, www, '/api/items', { method: 'POST', headers: json, body: good });
  assert.equal(ok.status, 200);
  assert.equal(ok.body, `origin POST /api/items ${good.length}`);
  const big = JSON.stringify({ blob: 'a'.repeat(300_000), note: 'plain text' });
  const large = await send(port, www, '/api/items', { method: 'POST', headers: json, body: big });
  assert.equal(large.status, 200);
  assert.equal(large.body, `origin POST /api/items ${big.length}`);
  assert.equal(origin.seen.at(-1)!.body, big, 'the origin gets the exact body');
  const form = await send(port, www, '/login', {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...UA },
    body: `user=admin&pass=${encodeURIComponent("x' or '1'='1")}`,
  });
  assert.equal(form.status, 403);

  // A client that goes away while its body is being read: the request is logged (499), nothing is left waiting.
  await new Promise<void>((resolve) => {
    const sock = connect(port, '127.0.0.1', () => {
      sock.write(
        `POST /api/items HTTP/1.1\r\nHost: ${www}\r\ncontent-type: application/json\r\n` +
          `content-length: 300000\r\n\r\n{"a":"${'x'.repeat(50_000)}`,
        () => setTimeout(() => sock.destroy(), 200),
      );
    });
    sock.on('close', () => resolve());
    sock.on('error', () => {});
  });
  const gone = await waitFor(() => edge.node.logs.drain().find((l) => l.path === '/api/items' && l.status === 499));
  assert.equal(gone.status, 499);

  // Exclusions and scope: sqli off for `statement` on /sql-console only; the rule does not cover /unguarded/*.
  const stmt = `statement=${encodeURIComponent('1 union select name from users')}`;
  assert.equal((await send(port, www, `/sql-console?${stmt}`, { headers: UA })).status, 200);
  assert.equal((await send(port, www, `/elsewhere?${stmt}`, { headers: UA })).status, 403);
  assert.equal((await send(port, www, `/sql-console?other=${stmt.slice(10)}`, { headers: UA })).status, 403);
  assert.equal((await send(port, www, `/unguarded/x${attack.slice(7)}`, { headers: UA })).status, 200);
  // Encoded traversal in the path: normalisation keeps `%2F` escaped (not a separator), the WAF decodes it.
  assert.equal((await send(port, www, '/static/..%2f..%2f..%2fetc/passwd', { headers: UA })).status, 403);
  edge.node.logs.drain();

  // Dry run: the same attack passes to the origin; the findings are logged with action `log`, the hit as dry.
  const watched = 'www.watched.example';
  const passed = await send(port, watched, attack, { headers: UA });
  assert.equal(passed.status, 200);
  assert.ok(passed.body.startsWith('origin GET /search'));
  rec = edge.node.logs.drain().find((l) => l.host === watched);
  assert.ok(rec?.waf && rec.waf.length > 0);
  assert.ok(rec.waf.every(([id, , , , , act]) => id === dry.id && act === 'log'));
  assert.deepEqual(rec.rules, [[dry.id, 'waf', true]]);
  const dryBody = await send(port, watched, '/api/items', {
    method: 'POST',
    headers: json,
    body: JSON.stringify({ q: "1' or '1'='1" }),
  });
  assert.equal(dryBody.status, 200);
  assert.ok(edge.node.logs.drain().some((l) => l.waf?.some(([, , ph]) => ph === 2)));
});
