// Import sessions from a zone file, through the API: start (JSON, text/plain), the domain's open session, one
// session, commit (all records or none, one config-log entry, a per-record result), discard, one live session per
// domain, and the bounds (an oversized body, a file with too many records). Scans: import-sessions-scan.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { recordsFixture } from './records-helpers.js';

const ZONE = `$ORIGIN example.org.
$TTL 3600
@ IN SOA ns1.example.net. hostmaster.example.org. 1 7200 900 1209600 300
@ IN NS ns1.example.net.
www IN CNAME web.example.net.
a IN A 192.0.2.1
b 600 IN A 192.0.2.2
@ IN MX 10 mail.example.org.
mail IN A 192.0.2.25
@ IN TXT "v=spf1 mx -all"
bad IN A 999.1.1.1
`;

test('import sessions from a zone file: start, open, get, commit (atomic, one config entry), discard', async (t) => {
  const f = await recordsFixture(t);
  const { cp, key, url } = f;
  const sessions = url('import-sessions/');

  await t.test('a start without a zone file or a scan is a 400', async () => {
    const res = await cp.call(key, 'POST', sessions, {});
    assert.equal(res.statusCode, 400);
    assert.match(res.json().error, /zone file in `zone`, or `"source": "scan"`/);
    const both = await cp.call(key, 'POST', sessions, { source: 'scan', zone: ZONE });
    assert.equal(both.statusCode, 400);
  });

  const start = await cp.call(key, 'POST', sessions, { zone: ZONE });
  assert.equal(start.statusCode, 200, start.body);
  const s = start.json();
  assert.equal(s.status, 'open');
  assert.equal(s.source, 'zone');
  assert.deepEqual(
    s.records.map((r: { name: string; type: string }) => `${r.name} ${r.type}`),
    ['www CNAME', 'a A', 'b A', '@ MX', 'mail A', '@ TXT'],
  );
  assert.equal(s.records.find((r: { name: string }) => r.name === 'b').ttl, 600);
  assert.deepEqual(
    s.skipped.map((k: { line: number }) => k.line),
    [3, 4],
    'SOA and apex NS',
  );
  assert.equal(s.errors.length, 1);
  assert.equal(s.errors[0].line, 11);
  assert.equal((await cp.call(key, 'GET', url())).json().length, 0, 'nothing is written before the commit');

  await t.test('the domain has one open session: GET open and GET one answer it; a second start is 409', async () => {
    const open = await cp.call(key, 'GET', url('import-sessions/open'));
    assert.equal(open.statusCode, 200);
    assert.equal(open.json().id, s.id);
    const one = await cp.call(key, 'GET', url(`import-sessions/${s.id}`));
    assert.equal(one.statusCode, 200);
    assert.deepEqual(one.json().records, s.records);
    const again = await cp.call(key, 'POST', sessions, 'a 300 IN A 192.0.2.9\n', { 'content-type': 'text/plain' });
    assert.equal(again.statusCode, 409);
    assert.match(again.json().error, new RegExp(`import session ${s.id} of this domain is still open`));
    assert.equal((await cp.call(key, 'GET', url('import-sessions/999999'))).statusCode, 404);
  });

  await t.test('a commit that a record cannot pass writes nothing and says which record failed', async () => {
    const conflicting = await cp.call(key, 'POST', url(), { name: 'www', type: 'A', destination: '192.0.2.80' });
    assert.equal(conflicting.statusCode, 200);
    const before = await f.logCount();
    const res = await cp.call(key, 'POST', url(`import-sessions/${s.id}/commit`));
    assert.equal(res.statusCode, 400, res.body);
    const body = res.json();
    assert.match(
      body.error,
      /1 record of import session \d+ cannot be created in the zone as it is now; nothing was imported/,
    );
    const www = body.results.find((r: { name: string }) => r.name === 'www');
    assert.equal(www.status, 'failed');
    assert.match(www.error, /CNAME/);
    assert.ok(body.results.filter((r: { status: string }) => r.status === 'not_imported').length === 5);
    const records = (await cp.call(key, 'GET', url())).json();
    assert.deepEqual(
      records.map((r: { name: string }) => r.name),
      ['www'],
      'only the record made through the API',
    );
    assert.equal(await f.logCount(), before, 'no config-log entry');
    assert.equal((await cp.call(key, 'GET', url('import-sessions/open'))).json().status, 'open', 'still open');
    assert.equal((await cp.call(key, 'DELETE', url(String(conflicting.json().id)))).statusCode, 200);
  });

  await t.test('the commit creates every record in one config-log entry, with a per-record result', async () => {
    await cp.call(key, 'POST', url(), { name: 'a', type: 'A', destination: '192.0.2.1', ttl: 3600 }); // identical: skipped
    const before = await f.logCount();
    const res = await cp.call(key, 'POST', url(`import-sessions/${s.id}/commit`));
    assert.equal(res.statusCode, 200, res.body);
    const done = res.json();
    assert.equal(done.status, 'committed');
    assert.ok(done.closed_at);
    assert.equal(done.result.created, 5);
    assert.equal(done.result.skipped, 1);
    // A session of up to 10,000 records is answered with its planned records, as GET answers it.
    assert.deepEqual([done.records, done.records_omitted], [s.records, undefined]);
    assert.deepEqual((await cp.call(key, 'GET', url(`import-sessions/${s.id}`))).json(), done);
    const a = done.result.results.find((r: { name: string }) => r.name === 'a');
    assert.equal(a.status, 'skipped');
    const mail = done.result.results.find((r: { name: string; type: string }) => r.name === 'mail');
    assert.equal(mail.status, 'created');
    assert.equal(typeof mail.id, 'number');
    assert.equal(await f.logCount(), before + 1, 'ONE config-log entry');
    const names = (await cp.call(key, 'GET', url()))
      .json()
      .map((r: { name: string; type: string }) => `${r.name} ${r.type}`);
    assert.deepEqual(names.sort(), ['@ MX', '@ TXT', 'a A', 'b A', 'mail A', 'www CNAME']);
    assert.equal((await cp.call(key, 'GET', url('import-sessions/open'))).statusCode, 404);
    const twice = await cp.call(key, 'POST', url(`import-sessions/${s.id}/commit`));
    assert.equal(twice.statusCode, 409);
    assert.match(twice.json().error, /is committed: only an open session can be committed/);
  });

  await t.test('discard: nothing is written and the domain may start another session', async () => {
    const other = (
      await cp.call(key, 'POST', sessions, 'fresh 300 IN A 192.0.2.77\n', { 'content-type': 'text/plain' })
    ).json();
    assert.equal(other.status, 'open');
    const discarded = await cp.call(key, 'DELETE', url(`import-sessions/${other.id}`));
    assert.equal(discarded.statusCode, 200);
    assert.equal(discarded.json().status, 'discarded');
    assert.equal((await cp.call(key, 'GET', url(`import-sessions/${other.id}`))).statusCode, 404, 'gone');
    assert.equal((await cp.call(key, 'POST', url(`import-sessions/${other.id}/commit`))).statusCode, 404);
    assert.equal((await cp.call(key, 'DELETE', url(`import-sessions/${other.id}`))).statusCode, 404);
    assert.equal((await cp.call(key, 'DELETE', url(`import-sessions/${s.id}`))).statusCode, 409, 'committed');
    const names = (await cp.call(key, 'GET', url())).json().map((r: { name: string }) => r.name);
    assert.ok(!names.includes('fresh'));
  });

  await t.test('a read-only key may read sessions but not start one', async () => {
    const ro = await cp.key(f.userId, { readOnly: true });
    assert.equal((await cp.call(ro.key, 'POST', sessions, { zone: ZONE })).statusCode, 403);
  });
});

test('import session bounds: an oversized body is 413, a file with too many records 400, nothing stored', async (t) => {
  const f = await recordsFixture(t, 'bounds.example', { API_IMPORT_BODY_LIMIT_BYTES: String(2 * 1024 * 1024) });
  const { cp, key, url } = f;
  const sessions = url('import-sessions/');
  const oversized = `; ${'x'.repeat(2 * 1024 * 1024 + 10)}\na 300 IN A 192.0.2.1\n`;
  const big = await cp.call(key, 'POST', sessions, oversized, { 'content-type': 'text/plain' });
  assert.equal(big.statusCode, 413);
  const many = Array.from({ length: 10_001 }, (_, i) => `h${i} 300 IN A 192.0.2.1`).join('\n');
  const res = await cp.call(key, 'POST', sessions, { zone: many });
  assert.equal(res.statusCode, 400);
  assert.equal(res.json().error, 'a zone file may hold at most 10000 records; no session was started');
  assert.equal((await cp.call(key, 'GET', url('import-sessions/open'))).statusCode, 404);
});

test('a scan needs the workflow service: 503 without TEMPORAL_ADDRESS, nothing stored', async (t) => {
  const f = await recordsFixture(t, 'noscan.example');
  const { cp, key, url } = f;
  const res = await cp.call(key, 'POST', url('import-sessions/'), { source: 'scan' });
  assert.equal(res.statusCode, 503);
  assert.equal((await cp.call(key, 'POST', url('scan'))).statusCode, 503);
  assert.equal((await cp.call(key, 'GET', url('scan'))).statusCode, 404);
  assert.equal((await cp.call(key, 'GET', url('import-sessions/open'))).statusCode, 404);
});
