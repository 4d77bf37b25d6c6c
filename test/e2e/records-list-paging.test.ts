// GET /domains/{d}/records/: every record by default (streamed page by page for a large zone, byte for byte the
// one-statement answer), one page with limit / cursor (keyset on id, X-Next-Cursor and Link headers), bad paging
// parameters 400.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Readable } from 'node:stream';
import { text } from 'node:stream/consumers';
import { listAllRecords } from '../../control-plane/src/areas/records/list.js';
import { listRecordsJson } from '../../control-plane/src/areas/records/store.js';
import { recordsFixture } from './records-helpers.js';

type Listed = { id: number; name: string; destination: string };

test('records list: all by default, streamed for a large zone, cursor pages, bad parameters', async (t) => {
  const f = await recordsFixture(t, 'paging.example');
  const { cp, key, url } = f;
  await f.setOverride('max_records', 30_000);
  // 24,000 records in three imports (a file holds at most 10,000): more than two stream pages of 10,000.
  const N = 24_000;
  for (let part = 0; part < 3; part++) {
    const zone = Array.from({ length: 8000 }, (_, j) => {
      const i = part * 8000 + j;
      return `h${i} 300 IN A 10.${i >> 16}.${(i >> 8) & 255}.${i & 255}`;
    }).join('\n');
    const res = await cp.call(key, 'POST', url('import'), { zone });
    assert.equal(res.statusCode, 200, res.body.slice(0, 300));
  }

  await t.test('without parameters: every record in id order, exactly the one-statement JSON text', async () => {
    const res = await cp.call(key, 'GET', url());
    assert.equal(res.statusCode, 200);
    assert.match(String(res.headers['content-type']), /^application\/json/);
    assert.equal(res.headers['x-next-cursor'], undefined);
    assert.equal(res.body, await listRecordsJson(cp.database.db, f.domainId));
    const all = res.json() as Listed[];
    assert.equal(all.length, N);
    for (let i = 1; i < all.length; i++) assert.ok(all[i]!.id > all[i - 1]!.id);
  });

  await t.test('cursor pages cover the list exactly, and a deletion between pages moves nothing', async () => {
    const whole = (await cp.call(key, 'GET', url())).json() as Listed[];
    const seen: Listed[] = [];
    let cursor: string | undefined;
    let pages = 0;
    let deleted: number | undefined;
    for (;;) {
      const res = await cp.call(key, 'GET', url(`?limit=5000${cursor ? `&cursor=${cursor}` : ''}`));
      assert.equal(res.statusCode, 200, res.body.slice(0, 200));
      const page = res.json() as Listed[];
      pages++;
      seen.push(...page);
      const next = res.headers['x-next-cursor'] as string | undefined;
      if (!next) {
        assert.equal(res.headers.link, undefined);
        break;
      }
      assert.equal(next, String(page[page.length - 1]!.id));
      assert.equal(res.headers.link, `</domains/paging.example/records/?cursor=${next}&limit=5000>; rel="next"`);
      cursor = next;
      if (deleted === undefined) {
        // A record of an earlier page deleted before the next page is read: the next page starts where it should.
        deleted = page[0]!.id;
        assert.equal((await cp.call(key, 'DELETE', url(String(deleted)))).statusCode, 200);
      }
    }
    assert.equal(pages, Math.ceil(N / 5000));
    assert.deepEqual(
      seen.map((r) => r.id),
      whole.map((r) => r.id),
    );
    const after = (await cp.call(key, 'GET', url())).json() as Listed[];
    assert.equal(after.length, N - 1);
    assert.ok(!after.some((r) => r.id === deleted));
  });

  await t.test('a cursor alone pages by 1000; a cursor past the end answers an empty page', async () => {
    const whole = (await cp.call(key, 'GET', url())).json() as Listed[];
    const res = await cp.call(key, 'GET', url(`?cursor=${whole[99]!.id}`));
    assert.equal(res.statusCode, 200);
    const page = res.json() as Listed[];
    assert.equal(page.length, 1000);
    assert.equal(page[0]!.id, whole[100]!.id);
    assert.equal(res.headers['x-next-cursor'], String(whole[1099]!.id));
    const last = await cp.call(key, 'GET', url(`?cursor=${whole[whole.length - 1]!.id}&limit=10`));
    assert.deepEqual([last.statusCode, last.body, last.headers['x-next-cursor']], [200, '[]', undefined]);
    const beyond = await cp.call(key, 'GET', url('?cursor=9999999999'));
    assert.deepEqual([beyond.statusCode, beyond.body], [200, '[]']);
  });

  await t.test('bad paging parameters are 400 with the error body', async () => {
    for (const q of [
      'limit=0',
      'limit=10001',
      'limit=abc',
      'limit=1.5',
      'cursor=-1',
      'cursor=abc',
      'cursor=12345678901',
      'cursor=',
    ]) {
      const res = await cp.call(key, 'GET', url(`?${q}`));
      assert.equal(res.statusCode, 400, `${q}: ${res.body}`);
      assert.equal(typeof res.json().error, 'string', q);
    }
  });
});

test('the streamed list joins its pages into the same JSON text, for every page size', async (t) => {
  const f = await recordsFixture(t, 'stream.example');
  const { cp, key, url } = f;
  const empty = await listAllRecords(cp.database.db, f.domainId, 3);
  assert.equal(empty, '[]');
  for (let i = 0; i < 10; i++)
    await cp.call(key, 'POST', url(), { name: `s${i}`, type: 'TXT', destination: `"v ${i} \\" é"` });
  const want = await listRecordsJson(cp.database.db, f.domainId);
  for (const size of [1, 3, 5, 9, 10, 11]) {
    const got = await listAllRecords(cp.database.db, f.domainId, size);
    assert.equal(typeof got === 'string' ? got : await text(got as Readable), want, `page size ${size}`);
    assert.equal(typeof got === 'string', size >= 10, `page size ${size}`);
  }
});
