// An import session larger than LIMITS.importListedRecords: its commit writes with one COPY, as POST records/import
// does (records/service.ts createPlanned). Every record is stored as written, the per-record result names each
// created record's id, ONE config-log entry holds exactly the zone read back, and a commit failing half-way stores
// nothing and leaves the session open.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'drizzle-orm';
import { rowsOf } from '../../control-plane/src/db/migrate.js';
import { configBytes, oneDeltaAndZone, recordsFixture } from './records-helpers.js';

interface ResultItem {
  line: number;
  name: string;
  type: string;
  destination: string;
  status: string;
  id?: number;
  reason?: string;
}

test('a large import session: the commit stores every record, one config entry equal to the zone, a per-record result', async (t) => {
  const f = await recordsFixture(t, 'large-session.example', {
    API_IMPORT_BODY_LIMIT_BYTES: String(4 * 1024 * 1024),
  });
  const { cp, key, url } = f;
  await f.setOverride('max_records', 20_000);
  await f.setOverride('host_header_edit_enabled', true);
  // A record already in the zone, identical to a line of the file: skipped by the commit.
  const kept = await cp.call(key, 'POST', url(), { name: 'kept', type: 'A', destination: '192.0.2.1', ttl: 300 });
  assert.equal(kept.statusCode, 200, kept.body);
  // The characters COPY's text format escapes, NULL and set fields of each kind, then plain A records.
  const special = [
    'txt1 300 IN TXT "back\\\\slash" "tab\\009and" "nl\\010cr\\013end"',
    'txt2 IN TXT "\\\\N"',
    'mail 600 IN MX 5 mx1.example.net.',
    'srv 300 IN SRV 1 2 443 target.example.net.',
    'web 300 IN A 93.184.215.14 ; platform: {"proxied": true, "scheme": "https", "port": 8443, "comment": "a\\tb\\\\c\\nd", "host_header": "origin.large-session.example"}',
    'kept 300 IN A 192.0.2.1',
    'alias 300 IN CNAME web.large-session.example.',
  ];
  const n = 10_050;
  const zone = [
    ...special,
    ...Array.from({ length: n }, (_, i) => `h${i} 300 IN A 10.1.${(i >> 8) & 255}.${i & 255}`),
  ].join('\n');
  const start = await cp.call(key, 'POST', url('import-sessions/'), zone, { 'content-type': 'text/plain' });
  assert.equal(start.statusCode, 200, start.body.slice(0, 300));
  const id = start.json().id as number;

  const from = (await cp.app.configLog.readAfter(cp.app.db, 0, 100_000)).at(-1)?.version ?? 0;
  const res = await cp.call(key, 'POST', url(`import-sessions/${id}/commit`));
  assert.equal(res.statusCode, 200, res.body.slice(0, 300));
  const done = res.json() as {
    status: string;
    records: unknown[];
    records_omitted?: boolean;
    result: { created: number; skipped: number; results: ResultItem[] };
  };
  assert.equal(done.status, 'committed');
  assert.equal(done.result.created, n + special.length - 1);
  assert.equal(done.result.skipped, 1);
  // The commit of more than 10,000 records does not list the planned records (as POST records/import); GET answers
  // the session as the commit did, with them.
  assert.deepEqual([done.records, done.records_omitted], [[], true]);
  const again = (await cp.call(key, 'GET', url(`import-sessions/${id}`))).json();
  assert.equal(again.records.length, n + special.length - 1);
  assert.deepEqual(again.records, start.json().records);
  assert.deepEqual({ ...again, records: [], records_omitted: true }, done);

  // Every record stored as written; the result names each one's id, in the file's order.
  const list = (await cp.call(key, 'GET', url())).json() as Array<Record<string, unknown>>;
  assert.equal(list.length, n + special.length);
  const byId = new Map(list.map((r) => [r.id as number, r]));
  const results = done.result.results;
  assert.equal(results.length, n + special.length);
  assert.ok(results.every((r, k) => r.line === k + 1));
  const skipped = results.filter((r) => r.status === 'skipped');
  assert.deepEqual(
    skipped.map((r) => [r.line, r.name, r.reason]),
    [[6, 'kept', 'an identical record already exists']],
  );
  for (const r of results.filter((x) => x.status === 'created')) {
    const row = byId.get(r.id!);
    assert.ok(row, `record ${r.id} of line ${r.line} is stored`);
    assert.deepEqual([row.name, row.type, row.destination], [r.name, r.type, r.destination], `line ${r.line}`);
  }
  const byName = new Map(list.map((r) => [r.name, r]));
  assert.equal(byName.get('txt1')!.destination, 'back\\slashtab\tandnl\ncr\rend');
  assert.equal(byName.get('txt2')!.destination, '\\N');
  assert.equal(byName.get('mail')!.mx_priority, 5);
  assert.equal(byName.get('srv')!.destination, '2 443 target.example.net');
  const web = byName.get('web')!;
  assert.deepEqual(
    [web.proxied, web.scheme, web.port, web.comment, web.host_header],
    [true, 'Https', 8443, 'a\tb\\c\nd', 'origin.large-session.example'],
  );
  assert.equal(byName.get('h0')!.comment, undefined);
  assert.equal(byName.get(`h${n - 1}`)!.destination, `10.1.${((n - 1) >> 8) & 255}.${(n - 1) & 255}`);

  // ONE entry, a delta holding exactly the zone as it is read back from the database.
  const { sent, stored } = await oneDeltaAndZone(f, from);
  const created = new Set(results.filter((r) => r.status === 'created').map((r) => r.id));
  assert.deepEqual(
    sent.zone.records,
    stored.zone.records.filter((r) => created.has(r.id)),
  );
  assert.equal(sent.zone.serial, stored.zone.serial);
  // The statement trigger keeping the domain's compiled size ran for the COPY as for an INSERT.
  const { bytes, counted } = await configBytes(f);
  assert.equal(bytes, counted);
});

test('a large import session: a commit failing half-way stores nothing, appends nothing, the session stays open', async (t) => {
  const f = await recordsFixture(t, 'large-session-fail.example', {
    API_IMPORT_BODY_LIMIT_BYTES: String(4 * 1024 * 1024),
  });
  const { cp, key, url } = f;
  await f.setOverride('max_records', 20_000);
  const db = cp.database.db;
  const state = async () =>
    rowsOf<{ n: string; serial: string; bytes: string; status: string }>(
      await db.execute(sql`SELECT (SELECT count(*) FROM dns_records WHERE domain_id = ${f.domainId})::text AS n,
        zone_serial::text AS serial, config_bytes::text AS bytes,
        (SELECT status FROM import_sessions WHERE domain_id = ${f.domainId}) AS status
        FROM domains WHERE id = ${f.domainId}`),
    )[0]!;
  const seed = await cp.call(key, 'POST', url(), { name: 'kept', type: 'A', destination: '192.0.2.1' });
  assert.equal(seed.statusCode, 200, seed.body);
  const zone = Array.from({ length: 12_000 }, (_, i) => `h${i} 300 IN A 10.2.${(i >> 8) & 255}.${i & 255}`).join('\n');
  const start = await cp.call(key, 'POST', url('import-sessions/'), zone, { 'content-type': 'text/plain' });
  assert.equal(start.statusCode, 200, start.body.slice(0, 300));
  const id = start.json().id as number;
  const before = await state();
  assert.equal(before.status, 'open');
  const logBefore = await f.logCount();
  // The database refuses one row in the middle of the session (a constraint of the test's own): the COPY has
  // written the rows before it when it fails.
  await db.execute(sql.raw(`ALTER TABLE dns_records ADD CONSTRAINT test_refuse_session_row CHECK (name <> 'h6000')`));
  try {
    const res = await cp.call(key, 'POST', url(`import-sessions/${id}/commit`));
    assert.equal(res.statusCode, 500, res.body.slice(0, 300));
    assert.deepEqual(await state(), before, 'no record, serial or size change; the session still open');
    assert.equal(await f.logCount(), logBefore, 'no config-log entry');
  } finally {
    await db.execute(sql.raw('ALTER TABLE dns_records DROP CONSTRAINT test_refuse_session_row'));
  }

  // Without the constraint the same session commits whole.
  const ok = await cp.call(key, 'POST', url(`import-sessions/${id}/commit`));
  assert.equal(ok.statusCode, 200, ok.body.slice(0, 300));
  assert.equal(ok.json().result.created, 12_000);
  const after = await state();
  assert.equal(Number(after.n), 12_001);
  assert.equal(after.status, 'committed');
  assert.equal(await f.logCount(), logBefore + 1);
});
