// Issue 16 item 5 through the API: the last result of each manual check, the analytics tag and custom pages, with
// the permission cases and an abuse case for every input; custom pages then go through the config log (the entries
// the control plane appended, applied to an edge node's store as the sync client would) and the edge serves them for
// its own answers: origin failure, security block, rate limit and the challenge (whose box still works).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decodeDomainSnapshot } from '@platform/shared/config';
import { startTestControlPlane, type TestControlPlane } from '../helpers/control-plane.js';
import { send, startStubOrigin, startTestEdge, type TestEdge } from '../../edge-node/src/testing/harness.js';
import { CHALLENGE_DIFFICULTY, CHALLENGE_PATH, workDone } from '../../edge-node/src/rules/challenge.js';
import { admin, closedPort, team } from './domain-ops-helpers.js';
import { addProxiedRecord } from './edge-harness.js';

/** Applies every config-log entry after `from` to the edge's node store, as the sync client does; returns the last. */
async function syncEdge(cp: TestControlPlane, edge: TestEdge, from: number): Promise<number> {
  const entries = await cp.app.configLog.readAfter(cp.app.db, from, 100_000);
  for (const e of entries) {
    edge.node.store.apply({
      version: e.version,
      domain: e.domainName,
      deleted: e.deleted,
      ...(e.deleted ? {} : { snapshot: decodeDomainSnapshot(e.payload) }),
      ...(e.delta ? { delta: true, removedRecordIds: e.removedRecordIds, removedRuleIds: e.removedRuleIds } : {}),
    });
  }
  return entries.at(-1)?.version ?? from;
}

function solve(nonce: string): string {
  for (let i = 0; ; i++) if (workDone(nonce, String(i), CHALLENGE_DIFFICULTY)) return String(i);
}

test('domain operations: checks, analytics tag, custom pages', { timeout: 240_000 }, async (t) => {
  const cp = await startTestControlPlane(t, { ALLOWED_PRIVATE_NETWORKS: '127.0.0.0/8' });
  const { owner, viewer, editor, admin1, stranger, domain, refused } = await team(cp, 'ops.example');
  const base = `/domains/${domain}`;

  await t.test('GET checks: every manual check, empty until one runs; a stored result is shown', async () => {
    const empty = await cp.call(viewer.key, 'GET', `${base}/checks`);
    assert.equal(empty.statusCode, 200, empty.body);
    const slot = { last_run_at: null, next_allowed_at: null, result: null };
    assert.deepEqual(empty.json(), { check_ns: slot, delegation: slot, acme_dns_test: slot });
    // What check-ns stores (transitions.ts claimCheckSlot, then the workflow's result): read back as it was.
    const id = (await cp.call(owner.key, 'GET', base)).json<{ id: number }>().id;
    const result = { ok: false, state: 'pending', nameservers: ['a.example'], checked_at: '2026-11-26T01:00:00.000Z' };
    await cp.app.db.execute(
      (await import('drizzle-orm')).sql`INSERT INTO domain_checks (domain_id, kind, last_at, result)
        VALUES (${id}, 'check-ns', now(), ${JSON.stringify(result)}::jsonb)`,
    );
    const after = (await cp.call(owner.key, 'GET', `${base}/checks`)).json<Record<string, typeof slot>>();
    assert.deepEqual(after.check_ns.result, result);
    assert.ok(after.check_ns.last_run_at, 'ran by hand');
    assert.ok(after.check_ns.next_allowed_at, 'once an hour: the next run is later');
    assert.deepEqual(after.delegation, slot);
    assert.equal((await cp.call(stranger.key, 'GET', `${base}/checks`)).statusCode, 404);
    assert.equal((await cp.call(null, 'GET', `${base}/checks`)).statusCode, 401);
  });

  await t.test('analytics tag: GET, PUT creates and keeps, regenerate, DELETE; roles and abuse', async () => {
    const none = { enabled: false, tag: null, created_at: null, updated_at: null };
    assert.deepEqual((await cp.call(viewer.key, 'GET', `${base}/analytics-tag`)).json(), none);
    await refused((key) => cp.call(key, 'PUT', `${base}/analytics-tag`, {}));
    const made = await cp.call(admin1.key, 'PUT', `${base}/analytics-tag`, {});
    assert.equal(made.statusCode, 200, made.body);
    const tag = made.json<{ tag: string; enabled: boolean }>();
    assert.equal(tag.enabled, true);
    assert.match(tag.tag, /^[0-9a-f]{32}$/);
    assert.equal((await cp.call(owner.key, 'PUT', `${base}/analytics-tag`, {})).json<{ tag: string }>().tag, tag.tag);
    const fresh = (await cp.call(owner.key, 'PUT', `${base}/analytics-tag`, { regenerate: true })).json<{
      tag: string;
    }>();
    assert.notEqual(fresh.tag, tag.tag);
    assert.equal((await cp.call(viewer.key, 'GET', `${base}/analytics-tag`)).json<{ tag: string }>().tag, fresh.tag);
    for (const body of [{ regenerate: 'yes' }, { tag: 'x' }, [], 'null']) {
      const r = await cp.call(owner.key, 'PUT', `${base}/analytics-tag`, body);
      assert.equal(r.statusCode, 400, `${JSON.stringify(body)}: ${r.body}`);
      assert.ok(r.json<{ error: string }>().error);
    }
    assert.equal((await cp.call(editor.key, 'DELETE', `${base}/analytics-tag`)).statusCode, 403);
    assert.deepEqual((await cp.call(owner.key, 'DELETE', `${base}/analytics-tag`)).json(), none);
    assert.deepEqual((await cp.call(owner.key, 'GET', `${base}/analytics-tag`)).json(), none);
    assert.deepEqual((await cp.call(owner.key, 'DELETE', `${base}/analytics-tag`)).json(), none, 'idempotent');
  });

  await t.test('custom pages: validation and roles; nothing stored on a refusal', async () => {
    const read = async () =>
      (await cp.call(viewer.key, 'GET', `${base}/custom-pages`)).json<{
        pages: Array<{ kind: string; html: string | null; placeholder_required: boolean }>;
        max_bytes: number;
      }>();
    const first = await read();
    assert.deepEqual(
      first.pages.map((p) => [p.kind, p.html, p.placeholder_required]),
      [
        ['500_errors', null, false],
        ['waf_block', null, false],
        ['ratelimit_block', null, false],
        ['managed_challenge', null, true],
      ],
    );
    const put = (key: string, body: unknown) => cp.call(key, 'PUT', `${base}/custom-pages`, body);
    await refused((key) => put(key, { '500_errors': '<p>x</p>' }));
    const big = 'x'.repeat(first.max_bytes + 1);
    const multibyte = 'é'.repeat(first.max_bytes / 2 + 1); // under max_bytes characters, over max_bytes bytes
    const abuse: Array<[unknown, RegExp]> = [
      [{}, /fewer than 1 properties/],
      [{ '404_errors': '<p>x</p>' }, /unknown field|additional/i],
      [{ '500_errors': 42 }, /500_errors/],
      [{ '500_errors': big }, /500_errors/],
      [{ '500_errors': multibyte }, /500_errors must be at most 32768 bytes/],
      [{ '500_errors': '' }, /500_errors must not be empty/],
      [{ '500_errors': 'a\u0000b' }, /NUL character/],
      [{ '500_errors': '<p>\u001b[31m</p>' }, /control characters/],
      [{ '500_errors': '::ERROR_BOX:: ::ERROR_BOX::' }, /at most once/],
      [{ '500_errors': '::CHALLENGE_BOX::' }, /must not hold ::CHALLENGE_BOX::/],
      [{ managed_challenge: '<h1>wait</h1>' }, /must hold ::CHALLENGE_BOX::/],
      [{ managed_challenge: '::CHALLENGE_BOX::::ERROR_BOX::' }, /must not hold ::ERROR_BOX::/],
      // One bad page refuses the whole write.
      [{ waf_block: '<p>ok</p>', managed_challenge: 'no box' }, /managed_challenge/],
    ];
    for (const [body, error] of abuse) {
      const r = await put(owner.key, body);
      assert.equal(r.statusCode, 400, `${JSON.stringify(body).slice(0, 80)}: ${r.body}`);
      assert.match(r.json<{ error: string }>().error, error);
    }
    assert.deepEqual(await read(), first, 'nothing stored');
    assert.equal((await cp.call(owner.key, 'PUT', `${base}/custom-pages`, 'not json', {})).statusCode, 400);
  });

  await t.test('custom pages reach the edge through the config log and the edge serves them', async () => {
    const origin = await startStubOrigin('ops-origin');
    t.after(() => origin.close());
    const deadPort = await closedPort();
    await admin(cp, 'plan', 'set', domain, 'pro');
    const asOwner = {
      api: async (method: string, path: string, body?: unknown) => {
        const r = await cp.call(owner.key, method as 'POST', path, body);
        assert.equal(r.statusCode, 200, r.body);
        return r.json();
      },
    };
    await addProxiedRecord(asOwner, domain, 'www', origin.port);
    await addProxiedRecord(asOwner, domain, 'down', deadPort);
    const custom = await cp.call(owner.key, 'POST', `${base}/custom-rules/`, {
      expression: 'http.request.uri.path eq "/blocked"',
      action: 'block',
    });
    assert.equal(custom.statusCode, 200, custom.body);
    const limit = await cp.call(owner.key, 'POST', `${base}/rules/rate_limit/`, {
      requests: 1,
      period_s: 60,
      block_s: 30,
      path_includes: ['/limited'],
    });
    assert.equal(limit.statusCode, 200, limit.body);
    const captcha = await cp.call(owner.key, 'POST', `${base}/rules/captcha/`, { path_includes: ['/guarded'] });
    assert.equal(captcha.statusCode, 200, captcha.body);

    const edge = await startTestEdge(t);
    const port = edge.node.server.httpPort;
    let version = await syncEdge(cp, edge, 0);
    const www = `www.${domain}`;
    // Defaults first: plain-text answers of the edge.
    const down = await send(port, `down.${domain}`, '/');
    assert.equal(down.status, 502);
    assert.match(String(down.headers['content-type']), /text\/plain/);
    assert.equal((await send(port, www, '/')).status, 200);

    const pages = {
      '500_errors': '<!doctype html><title>Sorry</title><h1>Ops is down</h1>::ERROR_BOX::<footer>ops</footer>',
      waf_block: '<h1>Not allowed on ops</h1>::ERROR_BOX::',
      ratelimit_block: '<h1>Slow down, ops</h1>',
      managed_challenge: '<html><body><h1>Ops checks you</h1>::CHALLENGE_BOX::<p>thanks</p></body></html>',
    };
    const set = await cp.call(admin1.key, 'PUT', `${base}/custom-pages`, pages);
    assert.equal(set.statusCode, 200, set.body);
    const before = version;
    version = await syncEdge(cp, edge, version);
    assert.equal(version, before + 1, 'one config-log entry');
    // The same pages again change nothing: no entry.
    assert.equal((await cp.call(owner.key, 'PUT', `${base}/custom-pages`, pages)).statusCode, 200);
    assert.equal(await syncEdge(cp, edge, version), version, 'an unchanged write appends nothing');

    const failed = await send(port, `down.${domain}`, '/');
    assert.equal(failed.status, 502);
    assert.equal(failed.headers['x-edge-error'], 'EDGE_ERR_UPSTREAM_UNREACHABLE');
    assert.equal(failed.headers['content-type'], 'text/html; charset=utf-8');
    assert.equal(failed.headers['cache-control'], 'no-store');
    assert.equal(
      failed.body,
      '<!doctype html><title>Sorry</title><h1>Ops is down</h1><p class="edge-error"><strong>Error 502</strong>: ' +
        'the origin is unreachable</p><footer>ops</footer>',
    );

    const blocked = await send(port, www, '/blocked');
    assert.equal(blocked.status, 403);
    assert.equal(
      blocked.body,
      '<h1>Not allowed on ops</h1><p class="edge-error"><strong>Error 403</strong>: blocked by a custom rule</p>',
    );

    assert.equal((await send(port, www, '/limited')).status, 200);
    const limited = await send(port, www, '/limited');
    assert.equal(limited.status, 429);
    assert.ok(Number(limited.headers['retry-after']) >= 1);
    assert.equal(limited.body, '<h1>Slow down, ops</h1>', 'a page without the placeholder is served as it is');

    const challenge = await send(port, www, '/guarded?a=<b>');
    assert.equal(challenge.status, 403);
    assert.equal(challenge.headers['x-edge-challenge'], 'pow');
    assert.ok(challenge.body.startsWith('<html><body><h1>Ops checks you</h1><p id="status"'), challenge.body);
    assert.ok(challenge.body.endsWith('</script><p>thanks</p></body></html>'));
    assert.ok(!challenge.body.includes('<b>'), 'the return path is escaped');
    const nonce = /name="nonce" value="([^"]+)"/.exec(challenge.body)![1];
    const answer = await send(port, www, CHALLENGE_PATH, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ nonce, solution: solve(nonce), return: '/guarded' }).toString(),
    });
    assert.equal(answer.status, 303, 'the custom page still carries a working challenge');
    const cookie = String(answer.headers['set-cookie']).split(';')[0];
    assert.equal((await send(port, www, '/guarded', { headers: { cookie } })).status, 200);

    // An error_page rule covering the status wins over the 500_errors page.
    const ep = await cp.call(owner.key, 'POST', `${base}/rules/error_page/`, {
      statuses: ['502'],
      body: 'rule page',
      content_type: 'text/plain',
    });
    assert.equal(ep.statusCode, 200, ep.body);
    version = await syncEdge(cp, edge, version);
    assert.equal((await send(port, `down.${domain}`, '/')).body, 'rule page');

    // null restores the default; the edge follows.
    const reset = await cp.call(owner.key, 'PUT', `${base}/custom-pages`, { waf_block: null });
    assert.equal(reset.statusCode, 200);
    assert.equal(reset.json<{ pages: Array<{ kind: string; html: string | null }> }>().pages[1].html, null);
    version = await syncEdge(cp, edge, version);
    const plain = await send(port, www, '/blocked');
    assert.equal(plain.status, 403);
    assert.equal(plain.body, 'blocked by a custom rule\n');

    // Deleting the domain takes its pages and tag with it (ON DELETE CASCADE).
    assert.equal((await cp.call(owner.key, 'DELETE', base)).statusCode, 200);
    const left = await cp.app.db.execute(
      (await import('drizzle-orm')).sql`SELECT count(*)::int AS n FROM domain_custom_pages`,
    );
    assert.equal((left as unknown as { rows: Array<{ n: number }> }).rows[0].n, 0);
  });
});
