// batch-update and delete-many: best effort per item, the bulk result shape, one config-log entry per call,
// 1 to 1000 items (empty and 1001 are 400).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { recordsFixture } from './records-helpers.js';

test('records bulk operations', async (t) => {
  const f = await recordsFixture(t);
  const { cp, key, url } = f;
  await f.setOverride('max_records', 5000);
  const zone = Array.from({ length: 1000 }, (_, i) => `h${i} 300 IN A 198.51.100.${i % 250}`).join('\n');
  const imported = await cp.call(key, 'POST', url('import'), { zone });
  assert.equal(imported.statusCode, 200, imported.body.slice(0, 300));
  assert.equal(imported.json().created, 1000);
  const records = (await cp.call(key, 'GET', url())).json() as { id: number; name: string; ttl: number }[];
  assert.equal(records.length, 1000);
  const ids = records.map((r) => r.id);

  await t.test('mixed success: each item independent, one config-log entry', async () => {
    const before = await f.logCount();
    const res = await cp.call(key, 'POST', url('batch-update'), {
      updates: [
        { id: ids[0], ttl: 600, comment: 'first' },
        { id: ids[1], ttl: 0 },
        { id: 999999, ttl: 60 },
        { id: ids[2], proxied: true, scheme: 'Http' },
        { id: ids[3], name: 'h0', destination: '198.51.100.0' },
        { id: ids[4], destination: 'not-an-ip' },
      ],
    });
    assert.equal(res.statusCode, 200);
    assert.deepEqual(res.json(), {
      succeeded: 2,
      failed: 4,
      results: [
        { id: ids[0], ok: true },
        { id: ids[1], ok: false, error: 'ttl must be between 1 and 604800' },
        { id: 999999, ok: false, error: 'record not found' },
        { id: ids[2], ok: true },
        { id: ids[3], ok: false, error: 'an identical record already exists' },
        { id: ids[4], ok: false, error: 'A destination must be an IPv4 address' },
      ],
    });
    assert.equal(await f.logCount(), before + 1);
    const after = new Map(((await cp.call(key, 'GET', url())).json() as { id: number }[]).map((r) => [r.id, r]));
    assert.deepEqual(after.get(ids[0]), { ...after.get(ids[0]), ttl: 600, comment: 'first' });
    assert.deepEqual(after.get(ids[2]), { ...after.get(ids[2]), proxied: true, ttl: 120, scheme: 'Http', port: 80 });
    assert.deepEqual(after.get(ids[1]), { ...after.get(ids[1]), ttl: 300 }, 'a failed item changes nothing');
  });

  await t.test('items are checked against records outside the batch at the names they move to', async () => {
    // The batch reads only the records it names and those at their old and new owner names (service.ts indexAround):
    // the checks must decide as on the whole zone, including against records that earlier items moved.
    const cname = await cp.call(key, 'POST', url(), {
      name: 'alias',
      type: 'CNAME',
      destination: 'target.example.net',
    });
    assert.equal(cname.statusCode, 200, cname.body);
    const res = await cp.call(key, 'POST', url('batch-update'), {
      updates: [
        { id: ids[10], name: 'alias' },
        { id: ids[262], name: 'h12.example.org.' },
        { id: ids[20], name: 'moved' },
        { id: ids[21], name: 'MOVED' },
        { id: ids[20], destination: '198.51.100.21' },
        { id: ids[22], name: 'bad..name' },
      ],
    });
    assert.deepEqual(res.json(), {
      succeeded: 2,
      failed: 4,
      results: [
        {
          id: ids[10],
          ok: false,
          error: '"alias" already has a CNAME record, and a CNAME cannot share its name with other records',
        },
        { id: ids[262], ok: false, error: 'an identical record already exists' },
        { id: ids[20], ok: true },
        { id: ids[21], ok: true },
        { id: ids[20], ok: false, error: 'an identical record already exists' },
        { id: ids[22], ok: false, error: 'name "bad..name" is not valid: empty label' },
      ],
    });
    await cp.call(key, 'DELETE', url(String(cname.json().id)));
  });

  await t.test('all failed or nothing changed: still 200, no config-log entry', async () => {
    const before = await f.logCount();
    const res = await cp.call(key, 'POST', url('batch-update'), { updates: [{ id: ids[5], timeout: 5000 }] });
    assert.deepEqual(
      [res.statusCode, res.json()],
      [
        200,
        { succeeded: 0, failed: 1, results: [{ id: ids[5], ok: false, error: 'timeout must be between 1 and 1800' }] },
      ],
    );
    assert.equal(await f.logCount(), before);
    const noop = await cp.call(key, 'POST', url('batch-update'), {
      updates: [{ id: ids[5] }, { id: ids[6], ttl: 300 }],
    });
    assert.deepEqual(noop.json(), {
      succeeded: 2,
      failed: 0,
      results: [
        { id: ids[5], ok: true },
        { id: ids[6], ok: true },
      ],
    });
    assert.equal(await f.logCount(), before, 'items that change nothing append nothing');
  });

  await t.test('1000 items succeed in one entry; 1001 and empty are 400', async () => {
    const before = await f.logCount();
    const res = await cp.call(key, 'POST', url('batch-update'), { updates: ids.map((id) => ({ id, ttl: 900 })) });
    assert.equal(res.statusCode, 200);
    assert.deepEqual([res.json().succeeded, res.json().failed], [1000, 0]);
    assert.equal(await f.logCount(), before + 1);
    const over = await cp.call(key, 'POST', url('batch-update'), {
      updates: [...ids, ids[0]].map((id) => ({ id, ttl: 60 })),
    });
    assert.deepEqual([over.statusCode, over.json()], [400, { error: 'updates must have at most 1000 entries' }]);
    const empty = await cp.call(key, 'POST', url('batch-update'), { updates: [] });
    assert.deepEqual([empty.statusCode, empty.json()], [400, { error: 'updates must have at least 1 entry' }]);
    const missing = await cp.call(key, 'POST', url('batch-update'), {});
    assert.deepEqual([missing.statusCode, missing.json()], [400, { error: 'updates is required' }]);
    const malformed = await cp.call(key, 'POST', url('batch-update'), '{"updates": [');
    assert.equal(malformed.statusCode, 400);
    assert.equal(await f.logCount(), before + 1);
  });

  await t.test('batch-update: 403 read-only, 404 domain, 409 disabled', async () => {
    const ro = await cp.key(f.userId, { readOnly: true });
    assert.equal(
      (await cp.call(ro.key, 'POST', url('batch-update'), { updates: [{ id: ids[0], ttl: 60 }] })).statusCode,
      403,
    );
    assert.equal(
      (await cp.call(key, 'POST', '/domains/nothing.example/records/batch-update', { updates: [{ id: 1, ttl: 60 }] }))
        .statusCode,
      404,
    );
    await f.setState('disabled');
    const res = await cp.call(key, 'POST', url('batch-update'), { updates: [{ id: ids[0], ttl: 60 }] });
    assert.deepEqual([res.statusCode, res.json()], [409, { error: 'domain is disabled' }]);
    await f.setState('pending');
  });

  await t.test('a proxied record keeps ttl 120 after a batch ttl change (forced, not an error)', async () => {
    const r = ((await cp.call(key, 'GET', url())).json() as { id: number; ttl: number }[]).find((x) => x.id === ids[2]);
    assert.equal(r?.ttl, 120);
  });

  await t.test('delete-many: best effort, one entry', async () => {
    const before = await f.logCount();
    const res = await cp.call(key, 'POST', url('delete-many'), { ids: [ids[0], ids[1], 424242] });
    assert.deepEqual(res.json(), {
      succeeded: 2,
      failed: 1,
      results: [
        { id: ids[0], ok: true },
        { id: ids[1], ok: true },
        { id: 424242, ok: false, error: 'record not found' },
      ],
    });
    assert.equal(await f.logCount(), before + 1);
    assert.equal((await cp.call(key, 'GET', url())).json().length, 998);
    assert.equal((await cp.call(key, 'POST', url('delete-many'), { ids: [] })).statusCode, 400);
  });
});
