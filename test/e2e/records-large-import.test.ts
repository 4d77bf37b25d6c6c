// A zone import larger than the defaults: the file may hold as many records as the domain's plan allows (above
// 10,000), the import routes take bodies up to API_IMPORT_BODY_LIMIT_BYTES (other routes keep API_BODY_LIMIT_BYTES),
// and an import of more than 10,000 records answers their number without listing them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { recordsFixture } from './records-helpers.js';

test('large zone import: file cap follows the plan, its own body limit, the created records not listed', async (t) => {
  const f = await recordsFixture(t, 'large-import.example', {
    API_BODY_LIMIT_BYTES: String(64 * 1024),
    API_IMPORT_BODY_LIMIT_BYTES: String(1024 * 1024),
  });
  const { cp, key, url } = f;
  const zoneOf = (n: number, prefix = 'h') =>
    Array.from({ length: n }, (_, i) => `${prefix}${i} 300 IN A 10.${i >> 16}.${(i >> 8) & 255}.${i & 255}`).join('\n');
  const big = zoneOf(12_000); // about 350 KB: above the general body limit, below the import one

  await t.test('above the plan: the file cap is 10,000 records, nothing imported', async () => {
    await f.setOverride('max_records', 5000);
    const res = await cp.call(key, 'POST', url('import'), big, { 'content-type': 'text/plain' });
    assert.equal(res.statusCode, 400, res.body.slice(0, 300));
    assert.equal(res.json().error, 'a zone file may hold at most 10000 records; nothing was imported');
  });

  await t.test('a plan allowing 20,000 records: a 12,000-record file imports in one request', async () => {
    await f.setOverride('max_records', 20_000);
    const res = await cp.call(key, 'POST', url('import'), big, { 'content-type': 'text/plain' });
    assert.equal(res.statusCode, 200, res.body.slice(0, 300));
    assert.deepEqual(res.json(), { created: 12_000, records: [], records_omitted: true, skipped: [] });
    const list = (await cp.call(key, 'GET', url())).json() as Array<{ name: string; destination: string }>;
    assert.equal(list.length, 12_000);
    assert.deepEqual(list[11_999], { ...list[11_999], name: 'h11999', destination: '10.0.46.223' });
    // A file larger than the plan's limit is refused whole, naming the plan's number.
    const tooMany = await cp.call(key, 'POST', url('import'), zoneOf(25_000, 'x'), { 'content-type': 'text/plain' });
    assert.equal(tooMany.statusCode, 400, tooMany.body.slice(0, 300));
    assert.equal(tooMany.json().error, 'a zone file may hold at most 20000 records; nothing was imported');
    // A small import still lists what it created.
    const small = await cp.call(key, 'POST', url('import'), 'small 300 IN A 192.0.2.1', {
      'content-type': 'text/plain',
    });
    assert.equal(small.statusCode, 200);
    assert.equal(small.json().records[0].name, 'small');
    assert.equal(small.json().records_omitted, undefined);
  });

  await t.test(
    'body limits: other routes keep the general one, the import has its own, both named in the 413',
    async () => {
      const other = await cp.call(key, 'POST', url(), { name: 'x', type: 'TXT', destination: 'y'.repeat(100_000) });
      assert.equal(other.statusCode, 413);
      assert.equal(other.json().error, `request body too large (limit ${64 * 1024} bytes)`);
      const huge = 'z 300 IN TXT "v"\n'.repeat(70_000); // about 1.2 MB
      for (const [body, type] of [
        [huge, 'text/plain'],
        [JSON.stringify({ zone: huge }), 'application/json'],
      ] as const) {
        const res = await cp.call(key, 'POST', url('import'), body, { 'content-type': type });
        assert.equal(res.statusCode, 413, type);
        assert.equal(res.json().error, `request body too large (limit ${1024 * 1024} bytes)`, type);
      }
    },
  );
});
