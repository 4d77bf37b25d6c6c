// The sync client against a hub that is not there yet, then appears, then goes away: status, retries, reports.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WebSocketServer } from 'ws';
import { openNodeStore, startNodeSync } from './index.js';
import { syncReadiness } from '../ops/node-sync.js';

async function until(what: string, check: () => boolean): Promise<void> {
  const end = Date.now() + 10_000;
  while (!check()) {
    if (Date.now() > end) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

test('retries a missing hub with backoff, reports why, catches up when it appears, stays ready when it goes', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'sync-client-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const store = openNodeStore(join(dir, 'lmdb'));
  t.after(() => store.close());
  const port = await new Promise<number>((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => resolve(p));
    });
  });
  const hubUrl = `ws://127.0.0.1:${port}`;
  const sync = startNodeSync(store, { hubUrl, token: 't', nodeId: 'dns-test', minBackoffMs: 5, maxBackoffMs: 20 });
  t.after(() => sync.stop());

  await until('three failed attempts', () => sync.status.failures >= 3);
  assert.equal(sync.status.state, 'connecting');
  assert.equal(sync.connected, false);
  assert.match(sync.status.lastError ?? '', /ECONNREFUSED/);
  const notReady = syncReadiness(sync, store);
  assert.equal(notReady.ready, false);
  assert.match(notReady.detail, new RegExp(`^cannot reach ${hubUrl}: .*ECONNREFUSED`));

  // The hub appears: it announces the head; the node reports what it applied.
  const hub = new WebSocketServer({ host: '127.0.0.1', port });
  const reports: unknown[] = [];
  hub.on('connection', (ws, req) => {
    assert.equal(req.headers['x-node-id'], 'dns-test');
    ws.on('message', (data) => reports.push(JSON.parse(String(data))));
    ws.send(JSON.stringify({ type: 'caught-up', version: 0 }));
  });
  await sync.ready;
  assert.equal(sync.status.state, 'caught-up');
  assert.equal(sync.status.lastError, undefined);
  assert.equal(syncReadiness(sync, store).ready, true);
  await until('the applied report', () => reports.length > 0);
  assert.deepEqual(reports[0], { type: 'applied', version: 0 });

  // The hub goes away: still ready (serving what it holds), and saying why in the detail.
  for (const ws of hub.clients) ws.terminate();
  await new Promise((r) => hub.close(r));
  await until('the drop to be seen', () => sync.status.state !== 'caught-up' && sync.status.lastError !== undefined);
  const degraded = syncReadiness(sync, store);
  assert.equal(degraded.ready, true);
  assert.match(degraded.detail, /^serving version 0; /);
});
