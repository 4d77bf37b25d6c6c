import { test } from 'node:test';
import assert from 'node:assert/strict';
import { desc, eq } from 'drizzle-orm';
import { pack } from 'msgpackr';
import { decodeDomainSnapshot } from '@platform/shared/config';
import { ensureNodeToken } from '@platform/shared/node-token';
import { startTestControlPlane } from '../../../../test/helpers/control-plane.js';
import { configLog, domains, requestLogs } from '../../db/schema.js';

test('cache purge and request logs', async (t) => {
  const cp = await startTestControlPlane(t);
  const owner = await cp.user();
  const name = await cp.domain(owner.key, 'purge.example.org');
  const [dom] = await cp.database.db.select().from(domains).where(eq(domains.name, name));
  const lastSnapshot = async () => {
    const [row] = await cp.database.db
      .select()
      .from(configLog)
      .where(eq(configLog.domainId, dom.id))
      .orderBy(desc(configLog.version))
      .limit(1);
    return decodeDomainSnapshot(row.payload);
  };

  await t.test('DELETE /domains/{domain}/cache/ bumps the purge generation in a new snapshot', async () => {
    const before = (await lastSnapshot()).settings.cachePurgeGeneration ?? 0;
    const res = await cp.call(owner.key, 'DELETE', `/domains/${name}/cache/`);
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().message, 'cache purged');
    assert.equal((await lastSnapshot()).settings.cachePurgeGeneration, before + 1);
    await cp.call(owner.key, 'DELETE', `/domains/${name}/cache/`);
    assert.equal((await lastSnapshot()).settings.cachePurgeGeneration, before + 2);
  });

  await t.test('POST /domains/{domain}/cache/purge sends host/path prefixes to the nodes', async () => {
    const res = await cp.call(owner.key, 'POST', `/domains/${name}/cache/purge`, {
      urls: ['https://www.purge.example.org/static/*', 'purge.example.org/a.css', 'WWW.purge.example.org'],
    });
    assert.equal(res.statusCode, 200, res.body);
    const want = ['www.purge.example.org/static/', 'purge.example.org/a.css', 'www.purge.example.org/'];
    assert.deepEqual(res.json().prefixes, want);
    const purges = (await lastSnapshot()).settings.cachePurges ?? [];
    assert.deepEqual(purges.at(-1)!.prefixes, want);
    const bad = await cp.call(owner.key, 'POST', `/domains/${name}/cache/purge`, {
      urls: ['https://example.net/x', 'www.purge.example.org/ok'],
    });
    assert.equal(bad.statusCode, 400);
    assert.match(bad.json().error, /urls\[0\]/);
    assert.equal((await cp.call(owner.key, 'POST', `/domains/${name}/cache/purge`, { urls: [] })).statusCode, 400);
  });

  await t.test('a viewer cannot purge; another user sees 404', async () => {
    const viewer = await cp.user();
    await cp.addMember(name, viewer.id, 'viewer');
    assert.equal((await cp.call(viewer.key, 'DELETE', `/domains/${name}/cache/`)).statusCode, 403);
    const stranger = await cp.user();
    assert.equal((await cp.call(stranger.key, 'DELETE', `/domains/${name}/cache/`)).statusCode, 404);
  });

  await t.test('edge nodes ship request logs with the node token', async () => {
    const token = ensureNodeToken(cp.config.dataDir, (cp.config as { nodeToken?: string }).nodeToken);
    const records = [
      {
        t: Date.now(),
        host: 'www.purge.example.org',
        path: '/a',
        method: 'GET',
        status: 200,
        bytes: 12,
        cache: 'HIT',
        rules: [[1, 'cache', false]],
        ms: 1.5,
        upstreamMs: -1,
        peer: '192.0.2.1',
      },
      {
        t: Date.now(),
        host: 'www.waf.example.org',
        path: '/search',
        method: 'GET',
        status: 403,
        bytes: 49,
        cache: '',
        rules: [[7, 'waf', false]],
        ms: 0.4,
        upstreamMs: -1,
        peer: '192.0.2.2',
        // WAF events: kept typed and bounded (16 events, 256 characters a part) whatever a node sends
        waf: [
          [7, '942100', 1, 'args:q', "' union select password", 'block'],
          ...Array.from({ length: 30 }, () => [7, 'x'.repeat(1000), '2', null, {}, 'log']),
        ],
      },
    ];
    const inject = (headers: Record<string, string>) =>
      cp.app.inject({
        method: 'POST',
        url: '/internal/request-logs',
        payload: pack({ node: 'edge-1', records }),
        headers: { 'content-type': 'application/x-msgpack', ...headers },
      });
    assert.equal((await inject({})).statusCode, 401);
    assert.equal((await inject({ authorization: 'Bearer wrong' })).statusCode, 401);
    const ok = await inject({ authorization: `Bearer ${token}` });
    assert.equal(ok.statusCode, 200, ok.body);
    assert.equal(ok.json().stored, 2);
    const rows = await cp.database.db.select().from(requestLogs).where(eq(requestLogs.host, 'www.purge.example.org'));
    assert.equal(rows.length, 1);
    assert.equal(rows[0].cacheStatus, 'HIT');
    assert.deepEqual(rows[0].ruleHits, [[1, 'cache', false]]);
    assert.deepEqual(rows[0].wafEvents, []);
    const [waf] = await cp.database.db.select().from(requestLogs).where(eq(requestLogs.host, 'www.waf.example.org'));
    assert.equal(waf.wafEvents.length, 16);
    assert.deepEqual(waf.wafEvents[0], [7, '942100', 1, 'args:q', "' union select password", 'block']);
    assert.deepEqual(waf.wafEvents[1], [7, 'x'.repeat(256), 2, '', '', 'log']);
  });
});
