// The cache inventory at the node: exact totals whatever is listed, bounds per domain, per report and in bytes with
// what was left out counted, hits, refresh marks, and the cache listener that serves one object to the node token only.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer } from 'node:http';
import { unpack } from 'msgpackr';
import { AddressPolicy, parseNetworks } from '@platform/shared/address-policy';
import { EdgeCache, type CacheEntry } from './store.js';
import {
  INVENTORY_LIMITS,
  packReport,
  startCacheReporter,
  takeInventory,
  VISIT_SLICE,
  type InventoryDomain,
} from './inventory.js';

const entry = (body: string | Buffer, now: number, type = 'text/plain'): CacheEntry => ({
  status: 200,
  headers: [
    ['content-type', type],
    ['content-encoding', 'gzip'],
  ],
  body: Buffer.isBuffer(body) ? body : Buffer.from(body),
  storedAt: now,
  freshUntil: now + 60_000,
  expiresAt: now + 120_000,
  shared: false,
});
const CAP = 1 << 30;

test('takeInventory: exact totals, most recently used first, bounded with a count of the rest', async () => {
  const now = Date.now();
  const cache = new EdgeCache();
  for (let i = 0; i < 10; i++) cache.set('a.example', 0, `https://a.example/${i}?`, entry('x'.repeat(i), now), CAP);
  cache.setVariant(
    'a.example',
    0,
    'https://a.example/v?',
    ['accept-encoding'],
    '\naccept-encoding=br',
    entry('vv', now),
    CAP,
  );
  cache.set('b.example', 0, 'http://b.example/?', entry('b', now), CAP);
  // Two hits on /3 (it becomes the most recently used).
  cache.served(cache.get('a.example', 0, 'https://a.example/3?', now)!);
  cache.served(cache.get('a.example', 0, 'https://a.example/3?', now)!);

  const all = await takeInventory(cache, INVENTORY_LIMITS, now);
  const a = all.find((d) => d[0] === 'a.example')!;
  assert.equal(a[1], 11, 'ten objects and a variant; the vary marker is not an object');
  assert.equal(a[2], 45 + 2);
  assert.equal(a[3], 0);
  assert.equal(a[4][0][0], 'https://a.example/3?');
  assert.equal(a[4][0][7], 2);
  assert.equal(a[4][0][3], 'text/plain');
  assert.ok(a[4].some((e) => e[0] === 'https://a.example/v?\naccept-encoding=br'));

  const bounded = await takeInventory(cache, { ...INVENTORY_LIMITS, perDomain: 4 }, now);
  const ab: InventoryDomain = bounded.find((d) => d[0] === 'a.example')!;
  assert.deepEqual([ab[1], ab[2], ab[3], ab[4].length], [11, 47, 7, 4]);
  const report = await takeInventory(cache, { ...INVENTORY_LIMITS, perReport: 5 }, now);
  assert.equal(
    report.reduce((n, d) => n + d[4].length, 0),
    5,
  );
  assert.equal(
    report.reduce((n, d) => n + d[3], 0),
    12 - 5,
  );
  const bytes = await takeInventory(cache, { ...INVENTORY_LIMITS, maxBytes: 300 }, now);
  assert.ok(bytes.reduce((n, d) => n + d[4].length, 0) < 5);
  const keys = await takeInventory(cache, { ...INVENTORY_LIMITS, maxKey: 20 }, now);
  assert.equal(keys.find((d) => d[0] === 'a.example')![4].length, 10, 'the variant key is longer than 20');

  // Expired entries are neither counted nor listed.
  assert.deepEqual(await takeInventory(cache, INVENTORY_LIMITS, now + 200_000), []);
});

test('a snapshot is taken in slices: hits and stores meanwhile count an entry once; packed in slices it unpacks whole', async () => {
  const now = Date.now();
  const cache = new EdgeCache();
  const n = VISIT_SLICE * 3 + 17;
  for (let i = 0; i < n; i++) cache.set('a.example', 0, `https://a.example/${i}?`, entry('xy', now), CAP);
  let pauses = 0;
  // Between slices: entries already counted are hit (moved to the end of the order) and one is stored.
  const inventory = await takeInventory(cache, INVENTORY_LIMITS, now, async () => {
    pauses++;
    for (let i = 0; i < 50; i++) cache.get('a.example', 0, `https://a.example/${i}?`, now);
    // Stored while the domain's entries are counted (3 slices), not once they are listed (the 4th).
    if (pauses <= 3) cache.set('a.example', 0, `https://a.example/new-${pauses}?`, entry('z', now), CAP);
  });
  assert.equal(pauses, 4);
  const [d] = inventory;
  assert.equal(d[1], n + 3, 'every entry once, and the ones stored meanwhile');
  assert.equal(d[2], 2 * n + 3);
  assert.equal(d[4].length, INVENTORY_LIMITS.perDomain);
  assert.equal(new Set(d[4].map((e) => e[0])).size, d[4].length);
  assert.equal(d[4][0][0], 'https://a.example/new-3?', 'the most recently stored first');

  const head = { node: 'edge-x-1', report: '0123456789abcdef-1', at: now, address: 'http://127.0.0.1:1' };
  let packPauses = 0;
  const body = await packReport(head, inventory, async () => void packPauses++);
  assert.ok(packPauses >= 1);
  assert.deepEqual(unpack(body), { ...head, domains: inventory });
  assert.deepEqual(unpack(await packReport(head, [])), { ...head, domains: [] });
});

test('a refresh marks entries stale once (not dropped); a purge drops them', () => {
  const now = Date.now();
  const cache = new EdgeCache();
  cache.set('a.example', 0, 'https://www.a.example/r/1?', entry('1', now), CAP);
  cache.set('a.example', 0, 'https://www.a.example/s/1?', entry('2', now), CAP);
  const before = cache.version;
  assert.equal(cache.applyPurges('a.example', 0, [{ id: 1, prefixes: ['www.a.example/r/'], refresh: true }]), 1);
  assert.ok(cache.version > before);
  const e = cache.get('a.example', 0, 'https://www.a.example/r/1?', now)!;
  assert.equal(e.freshUntil, 0, 'stale: the next request revalidates it with the origin');
  assert.equal(cache.get('a.example', 0, 'https://www.a.example/s/1?', now)!.freshUntil, now + 60_000);
  assert.equal(cache.applyPurges('a.example', 0, [{ id: 2, prefixes: ['www.a.example/'] }]), 2);
  assert.equal(cache.stats('a.example').entries, 0);
});

test('the reporter sends snapshots to the control plane; the listener serves one object to the node token', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'edge-inventory-'));
  t.after(() => rmSync(dataDir, { recursive: true, force: true }));
  const received: Record<string, unknown>[] = [];
  let answer = 503;
  const cp = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.headers.authorization === 'Bearer tok') received.push(unpack(Buffer.concat(chunks)));
      res.writeHead(answer).end('{}');
    });
  });
  await new Promise<void>((r) => cp.listen(0, '127.0.0.1', r));
  t.after(() => new Promise((r) => cp.close(r)));
  const now = Date.now();
  const cache = new EdgeCache();
  const body = Buffer.from([0, 1, 2, 255, 254]);
  cache.set('a.example', 0, 'https://a.example/bin?', entry(body, now, 'application/x-bin'), CAP);
  cache.set('b.example', 0, 'https://b.example/bin?', entry('other', now), CAP);
  // Loopback allowed for origins, as an operator may: the listener is refused as an origin all the same.
  const policy = new AddressPolicy(parseNetworks('127.0.0.0/8').ranges);
  const reporter = await startCacheReporter(
    cache,
    {
      controlPlaneUrl: `http://127.0.0.1:${(cp.address() as { port: number }).port}`,
      cacheReportMs: 3_600_000,
      dataDir,
      nodeToken: 'tok',
      cacheHost: '127.0.0.1',
      cachePort: 0,
      cacheUrl: undefined,
      workers: 1,
    },
    undefined,
    policy,
  );
  t.after(() => reporter.stop());
  const listenPort = Number(new URL(reporter.address).port);
  assert.ok(policy.refusal('127.0.0.1', listenPort), 'the cache listener is never an origin');
  assert.equal(policy.refusal('127.0.0.1', listenPort + 1), undefined);

  // Refused: kept, and replaced by the next snapshot rather than queued behind it.
  await reporter.flush();
  assert.equal(received.length, 1);
  cache.set('a.example', 0, 'https://a.example/more?', entry('m', now), CAP);
  await reporter.flush();
  assert.equal(reporter.superseded, 1);
  answer = 200;
  await reporter.flush();
  assert.equal(received.length, 3);
  const last = received.at(-1)!;
  assert.equal(last.address, reporter.address);
  assert.match(String(last.node), /^edge-/);
  assert.deepEqual((last.domains as InventoryDomain[]).map((d) => [d[0], d[1]]).sort(), [
    ['a.example', 2],
    ['b.example', 1],
  ]);
  // Acknowledged and unchanged: nothing sent.
  await reporter.flush();
  assert.equal(received.length, 3);

  const fetchObject = (domain: string, key: string, token = 'tok') =>
    fetch(`${reporter.address}/cache/object?domain=${domain}&key=${encodeURIComponent(key)}`, {
      headers: { authorization: `Bearer ${token}` },
    });
  const ok = await fetchObject('a.example', 'https://a.example/bin?');
  assert.equal(ok.status, 200);
  assert.equal(ok.headers.get('content-type'), 'application/x-bin');
  assert.equal(ok.headers.get('x-cache-content-encoding'), 'gzip');
  assert.deepEqual(Buffer.from(await ok.arrayBuffer()), body);
  assert.equal((await fetchObject('a.example', 'https://a.example/bin?', 'wrong')).status, 401);
  // Another domain's key is not in this domain's cache.
  assert.equal((await fetchObject('a.example', 'https://b.example/bin?')).status, 404);
  assert.equal((await fetchObject('a.example', 'https://a.example/none?')).status, 404);
  const other = await fetch(`${reporter.address}/metrics`, { headers: { authorization: 'Bearer tok' } });
  assert.equal(other.status, 404);

  // Stopping: an empty snapshot last, so the control plane stops counting this process's cache at once.
  await reporter.stop();
  assert.equal(received.length, 4);
  assert.deepEqual(received.at(-1)!.domains, []);
  assert.equal(received.at(-1)!.node, last.node);
});
