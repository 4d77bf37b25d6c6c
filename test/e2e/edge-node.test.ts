// The edge node as users run it: rules and records changed through the API take effect without a restart, the cache
// purge reaches the node, request logs are shipped, and a restarted node serves from LMDB before it reconnects.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { send, startStubOrigin } from '../../edge-node/src/testing/harness.js';
import { startControlPlane } from './sync-harness.js';
import { startEdgeNodeProcess, waitUntil } from './edge-harness.js';

test(
  'edge node with a control plane: API changes take effect live, restart serves from LMDB',
  { timeout: 240_000 },
  async (t) => {
    const origin = await startStubOrigin('e2e', (req, res) => {
      if (req.url?.startsWith('/cached')) res.setHeader('cache-control', 'max-age=300');
      res.end(`origin ${req.url} ${Date.now()}-${Math.random()}`);
    });
    t.after(() => origin.close());
    const cp = await startControlPlane('edge-e2e');
    t.after(() => cp.stop());
    const domain = 'edge-e2e.example.org';
    await cp.api('POST', '/domains/', { name: domain });
    await cp.api('POST', `/domains/${domain}/records/`, {
      name: 'www',
      type: 'A',
      destination: '127.0.0.1',
      proxied: true,
      scheme: 'Http',
      port: origin.port,
    });
    const edge = await startEdgeNodeProcess(cp);
    t.after(() => edge.stop());
    const host = `www.${domain}`;
    const get = (path: string) => send(edge.httpPort, host, path);

    await t.test('a proxied record created through the API is served', async () => {
      const r = await waitUntil('the record at the edge', async () => {
        const x = await get('/hello');
        return x.status === 200 ? x : undefined;
      });
      assert.match(r.body, /^origin \/hello /);
    });

    let ruleId = 0;
    await t.test('a rule created through the API takes effect without a restart', async () => {
      const created = await cp.api<{ id: number }>('POST', `/domains/${domain}/rules/redirect/`, {
        path_includes: ['/go/*'],
        target: '/landed/$1',
        status_code: 307,
      });
      ruleId = created.id;
      const r = await waitUntil('the redirect at the edge', async () => {
        const x = await get('/go/here');
        return x.status === 307 ? x : undefined;
      });
      assert.equal(r.headers.location, '/landed/here');
    });

    await t.test('an update and a disable through the API take effect', async () => {
      await cp.api('PUT', `/domains/${domain}/rules/redirect/${ruleId}`, { target: '/moved/$1' });
      await waitUntil('the new target', async () =>
        (await get('/go/x')).headers.location === '/moved/x' ? true : undefined,
      );
      await cp.api('PATCH', `/domains/${domain}/rules/redirect/${ruleId}/enabled`, { enabled: false });
      await waitUntil('the disabled rule to pass', async () =>
        (await get('/go/x')).status === 200 ? true : undefined,
      );
    });

    await t.test('the cache purge reaches the node', async () => {
      await cp.api('POST', `/domains/${domain}/rules/cache/`, { path_includes: ['/cached/*'] });
      const first = await waitUntil('a cache MISS', async () => {
        const x = await get('/cached/a');
        return x.headers['x-cache-status'] === 'MISS' ? x : undefined;
      });
      const hit = await get('/cached/a');
      assert.equal(hit.headers['x-cache-status'], 'HIT');
      assert.equal(hit.body, first.body);
      await cp.api('DELETE', `/domains/${domain}/cache/`);
      const after = await waitUntil('the purge', async () => {
        const x = await get('/cached/a');
        return x.headers['x-cache-status'] === 'MISS' ? x : undefined;
      });
      assert.notEqual(after.body, first.body);
      await get('/cached/b');
      assert.equal((await get('/cached/b')).headers['x-cache-status'], 'HIT');
      await cp.api('POST', `/domains/${domain}/cache/purge`, { urls: [`https://${host}/cached/a`] });
      await waitUntil('the selective purge', async () =>
        (await get('/cached/a')).headers['x-cache-status'] === 'MISS' ? true : undefined,
      );
      assert.equal((await get('/cached/b')).headers['x-cache-status'], 'HIT', 'entries outside the purged prefix stay');
    });

    await t.test('a restarted edge node serves from LMDB before it reconnects', async () => {
      await edge.kill('SIGTERM');
      // Point it at a hub that does not answer: everything it serves comes from its store.
      await edge.restart({ SYNC_URL: 'ws://127.0.0.1:9/', CONTROL_PLANE_URL: 'off' });
      const r = await get('/hello2');
      assert.equal(r.status, 200);
      assert.match(r.body, /^origin \/hello2 /);
      assert.equal((await get('/go/x')).status, 200, 'the disabled rule stays disabled');
      await edge.kill('SIGTERM');
      await edge.restart();
    });
  },
);
