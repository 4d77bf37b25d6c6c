// Cache inventories at the control plane: snapshots replace a node's rows (never going back in time), every bound
// holds whatever a node sends, and the reads answer only the caller's own domains with clear 400s for bad input.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { eq } from 'drizzle-orm';
import { pack } from 'msgpackr';
import { ensureNodeToken } from '@platform/shared/node-token';
import { startTestControlPlane } from '../../../../test/helpers/control-plane.js';
import { cacheInventoryEntries, cacheInventoryNodes, cacheInventoryTotals } from '../../db/schema.js';
import { MAX_ENTRIES, MAX_ENTRIES_PER_DOMAIN } from './inventory.js';

type Entry = [string, number, number, string, number, number, number, number];

function entry(key: string, size = 10, type = 'text/plain'): Entry {
  const now = Date.now();
  return [key, 200, size, type, now - 1000, now + 60_000, now + 86_400_000, 3];
}

let seq = 0;
function snapshot(node: string, domains: unknown[], at = Date.now(), address = 'http://127.0.0.1:9') {
  return pack({ node, report: `0123456789abcdef-${++seq}`, at, address, domains });
}

interface Page {
  entries: { id: string; path: string; node: string; host: string; size: number; hits: number; url: string }[];
  next_cursor: string | null;
}

test('cache inventories: ingest, bounds, reads and their refusals', async (t) => {
  const cp = await startTestControlPlane(t);
  const token = ensureNodeToken(cp.config.dataDir, (cp.config as { nodeToken?: string }).nodeToken);
  const alice = await cp.user();
  const bob = await cp.user();
  const a = await cp.domain(alice.key, 'inv-alice.example.org');
  const b = await cp.domain(bob.key, 'inv-bob.example.org');
  const report = (body: Buffer, auth = `Bearer ${token}`) =>
    cp.app.inject({
      method: 'POST',
      url: '/internal/cache-inventory',
      payload: body,
      headers: { 'content-type': 'application/x-msgpack', authorization: auth },
    });
  const get = async <T>(key: string, url: string, status = 200): Promise<T> => {
    const res = await cp.call(key, 'GET', url);
    assert.equal(res.statusCode, status, `${url}: ${res.body}`);
    return res.json() as T;
  };

  await t.test(
    'a snapshot is stored per node and domain; a newer one replaces it, an older one is ignored',
    async () => {
      const at = Date.now();
      const r1 = await report(
        snapshot(
          'edge-one-1',
          [
            [a, 3, 60, 0, [entry(`https://www.${a}/x?`, 10), entry(`https://www.${a}/img/y.png?`, 20, 'image/png')]],
            [b, 1, 5, 0, [entry(`http://${b}/secret?`, 5)]],
            ['unknown.example.net', 1, 1, 0, [entry('http://unknown.example.net/?', 1)]],
          ],
          at,
        ),
      );
      assert.equal(r1.statusCode, 200, r1.body);
      assert.deepEqual(r1.json(), { applied: true, domains: 2, entries: 3 });
      await report(snapshot('edge-two-2', [[a, 1, 30, 0, [entry(`https://www.${a}/x?`, 30)]]], at));
      const stats = await get<{ entries: number; bytes: number; nodes: number; unlisted: number }>(
        alice.key,
        `/domains/${a}/cache/stats`,
      );
      assert.deepEqual(
        { ...stats, reported_at: undefined },
        {
          entries: 4,
          bytes: 90,
          nodes: 2,
          unlisted: 0,
          reported_at: undefined,
        },
      );
      const nodes = await get<{ node: string; entries: number }[]>(alice.key, `/domains/${a}/cache/nodes`);
      assert.deepEqual(
        nodes.map((n) => [n.node, n.entries]),
        [
          ['edge-one-1', 3],
          ['edge-two-2', 1],
        ],
      );
      // Older than the stored one: acknowledged, not applied.
      const old = await report(snapshot('edge-one-1', [], at - 1000));
      assert.equal(old.statusCode, 200);
      assert.equal(old.json().applied, false);
      assert.equal((await get<Page>(alice.key, `/domains/${a}/cache/entries`)).entries.length, 3);
      // Newer: replaces everything of that node.
      await report(snapshot('edge-one-1', [[a, 1, 7, 0, [entry(`https://www.${a}/z?`, 7)]]], at + 1000));
      const page = await get<Page>(alice.key, `/domains/${a}/cache/entries`);
      assert.deepEqual(page.entries.map((e) => `${e.node} ${e.path} ${e.size}`).sort(), [
        'edge-one-1 /z 7',
        'edge-two-2 /x 30',
      ]);
      assert.equal((await get<Page>(bob.key, `/domains/${b}/cache/entries`)).entries.length, 0);
    },
  );

  await t.test("another account's domain is 404 on every read and write; read-only keys and viewers read", async () => {
    for (const path of ['stats', 'nodes', 'entries', 'entries/content?entry=eA']) {
      const res = await cp.call(bob.key, 'GET', `/domains/${a}/cache/${path}`);
      assert.equal(res.statusCode, 404, path);
    }
    assert.equal((await cp.call(bob.key, 'POST', `/domains/${a}/cache/refresh`, { urls: [a] })).statusCode, 404);
    // An entry id of Alice's domain used on Bob's: not found there.
    const [first] = (await get<Page>(alice.key, `/domains/${a}/cache/entries`)).entries;
    const cross = await cp.call(bob.key, 'GET', `/domains/${b}/cache/entries/content?entry=${first.id}`);
    assert.equal(cross.statusCode, 404);
    const readOnly = await cp.key(alice.id, { readOnly: true });
    await get(readOnly.key, `/domains/${a}/cache/stats`);
    await get(readOnly.key, `/domains/${a}/cache/entries`);
    const refused = await cp.call(readOnly.key, 'POST', `/domains/${a}/cache/refresh`, { urls: [a] });
    assert.equal(refused.statusCode, 403);
    const viewer = await cp.user();
    await cp.addMember(a, viewer.id, 'viewer');
    await get(viewer.key, `/domains/${a}/cache/nodes`);
    assert.equal((await cp.call(viewer.key, 'POST', `/domains/${a}/cache/refresh`, { urls: [a] })).statusCode, 403);
  });

  await t.test('bad cursors, filters and entry ids are 400', async () => {
    for (const q of [
      'cursor=nope!',
      'cursor=AAAA',
      `cursor=${Buffer.from('edge-1\nnot-a-key').toString('base64url')}`,
      'limit=0',
      'limit=1001',
      'path_prefix=nope',
      'host=a%20b',
      'node=a%2Fb',
      'colour=red',
      `content_type=${'x'.repeat(129)}`,
    ]) {
      const res = await cp.call(alice.key, 'GET', `/domains/${a}/cache/entries?${q}`);
      assert.equal(res.statusCode, 400, `${q}: ${res.body}`);
      assert.equal(typeof res.json().error, 'string');
    }
    for (const id of ['', '!!', 'AAAA', Buffer.from('edge-1\nftp://x/').toString('base64url')]) {
      const res = await cp.call(alice.key, 'GET', `/domains/${a}/cache/entries/content?entry=${id}`);
      assert.equal(res.statusCode, 400, id);
    }
    // A well-formed id of an entry no node lists: 404.
    const unknown = Buffer.from(`edge-one-1\nhttps://www.${a}/none?`).toString('base64url');
    assert.equal(
      (await cp.call(alice.key, 'GET', `/domains/${a}/cache/entries/content?entry=${unknown}`)).statusCode,
      404,
    );
  });

  await t.test('paging by cursor lists every entry once', async () => {
    const keys = Array.from({ length: 25 }, (_, i) => entry(`https://www.${a}/p/${String(i).padStart(2, '0')}?`));
    await report(snapshot('edge-one-1', [[a, 25, 250, 0, keys]], Date.now() + 5000));
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const q: string = cursor ? `&cursor=${cursor}` : '';
      const page: Page = await get<Page>(alice.key, `/domains/${a}/cache/entries?limit=7&path_prefix=/p/${q}`);
      seen.push(...page.entries.map((e) => e.path));
      cursor = page.next_cursor;
    } while (cursor);
    assert.equal(seen.length, 25);
    assert.deepEqual(seen, [...seen].sort());
    assert.equal(new Set(seen).size, 25);
  });

  await t.test('oversize and malformed snapshots are bounded, not refused whole', async () => {
    const many = Array.from({ length: MAX_ENTRIES_PER_DOMAIN + 100 }, (_, i) => entry(`https://www.${a}/m/${i}?`, 1));
    const junk = [
      ['x'.repeat(5000), 200, 1, '', 0, 0, 0, 0],
      [`https://www.${b}/other-domain?`, 200, 1, '', 0, 0, 0, 0],
      [`https://www.${a}/bad-time?`, 200, 1, '', 'soon', 0, 0, 0],
      'not an entry',
      [`https://www.${a}/${'long'.repeat(2000)}?`, 200, 1, 'x'.repeat(10_000), 0, 0, 0, -5],
    ];
    const res = await report(
      snapshot('edge-big-3', [[a, MAX_ENTRIES_PER_DOMAIN + 105, 99, 7, [...junk, ...many]]], Date.now() + 6000),
    );
    assert.equal(res.statusCode, 200, res.body);
    const [totals] = await cp.database.db
      .select()
      .from(cacheInventoryTotals)
      .where(eq(cacheInventoryTotals.node, 'edge-big-3'));
    assert.equal(totals.entries, MAX_ENTRIES_PER_DOMAIN + 105);
    const rows = await cp.database.db
      .select({ key: cacheInventoryEntries.key, type: cacheInventoryEntries.contentType })
      .from(cacheInventoryEntries)
      .where(eq(cacheInventoryEntries.node, 'edge-big-3'));
    // The other domain's key took a place of the bound before it was left out.
    assert.equal(rows.length, MAX_ENTRIES_PER_DOMAIN - 1);
    assert.ok(rows.every((r) => r.key.includes(a) && r.type.length <= 256));
    // Listed + dropped account for every entry the node named (7 it left out itself).
    assert.equal(totals.dropped, 7 + junk.length + 101);
    // A snapshot above the per-report bound keeps MAX_ENTRIES.
    const domains = [a, b].map((d) => [
      d,
      MAX_ENTRIES,
      0,
      0,
      Array.from({ length: MAX_ENTRIES_PER_DOMAIN * 6 }, (_, i) => entry(`http://${d}/${i}?`, 1)),
    ]);
    await report(snapshot('edge-huge-4', domains, Date.now() + 7000));
    const huge = await cp.database.db
      .select({ key: cacheInventoryEntries.key })
      .from(cacheInventoryEntries)
      .where(eq(cacheInventoryEntries.node, 'edge-huge-4'));
    assert.equal(huge.length, 2 * MAX_ENTRIES_PER_DOMAIN);
  });

  await t.test('the internal endpoint wants the node token and a snapshot', async () => {
    assert.equal((await report(snapshot('edge-x-1', []), 'Bearer wrong')).statusCode, 401);
    for (const body of [
      pack([1, 2]),
      pack({ node: 'bad node', report: '0123456789abcdef-1', at: 1, domains: [] }),
      pack({ node: 'edge-1', report: 'x', at: 1, domains: [] }),
      pack({ node: 'edge-1', report: '0123456789abcdef-1', at: 'now', domains: [] }),
      pack({ node: 'edge-1', report: '0123456789abcdef-1', at: 1, address: 'file:///etc', domains: [] }),
      pack({ node: 'edge-1', report: '0123456789abcdef-1', at: 1 }),
      Buffer.from([0xc1]),
    ]) {
      const res = await report(body);
      assert.equal(res.statusCode, 400, res.body);
    }
  });

  await t.test('a deleted domain takes its inventory rows with it; a silent node is not counted', async () => {
    const gone = await cp.domain(alice.key, 'inv-gone.example.org');
    await report(snapshot('edge-gone-5', [[gone, 1, 1, 0, [entry(`http://${gone}/?`, 1)]]]));
    assert.equal((await get<{ entries: number }>(alice.key, `/domains/${gone}/cache/stats`)).entries, 1);
    assert.equal((await cp.call(alice.key, 'DELETE', `/domains/${gone}`)).statusCode, 200);
    const rows = await cp.database.db
      .select()
      .from(cacheInventoryTotals)
      .where(eq(cacheInventoryTotals.node, 'edge-gone-5'));
    assert.equal(rows.length, 0);
    await cp.database.db
      .update(cacheInventoryNodes)
      .set({ reportedAt: new Date(Date.now() - 3600_000) })
      .where(eq(cacheInventoryNodes.node, 'edge-two-2'));
    const nodes = await get<{ node: string }[]>(alice.key, `/domains/${a}/cache/nodes`);
    assert.ok(!nodes.some((n) => n.node === 'edge-two-2'));
  });
});
