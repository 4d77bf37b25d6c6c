// DNS records API through app.inject with real keys: every rule of the record table with its exact status and
// error body, CNAME exclusivity, proxied rules, scheme/port, permissions, plan limit, state, config-log entries.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { desc, eq } from 'drizzle-orm';
import { decodeDomainSnapshot } from '@platform/shared/config';
import { configLog, domains } from '../../control-plane/src/db/schema.js';
import { setOverride } from '../../control-plane/src/plans/subscriptions.js';
import { recordsFixture } from './records-helpers.js';

test('records API: validation, zone rules, permissions, limits', async (t) => {
  const f = await recordsFixture(t);
  const { cp, key, url } = f;
  const post = (body: unknown, k = key) => cp.call(k, 'POST', url(), body);
  const A = { name: 'www', type: 'A', destination: '192.0.2.1' };

  await t.test('create answers the stored record; defaults and normalisation', async () => {
    const before = await f.logCount();
    const res = await post({ name: 'WWW.Example.org.', type: 'a', destination: '192.0.2.1' });
    assert.equal(res.statusCode, 200, res.body);
    const r = res.json();
    assert.deepEqual(
      { ...r, id: 0, created_at: '', updated_at: '' },
      {
        id: 0,
        name: 'www',
        type: 'A',
        destination: '192.0.2.1',
        ttl: 120,
        proxied: false,
        captcha: false,
        scheme: 'Auto',
        port: 443,
        host_header_mode: 'own',
        monitor: false,
        timeout: 60,
        created_at: '',
        updated_at: '',
      },
    );
    assert.equal(await f.logCount(), before + 1, 'one config-log entry per write');
    const list = (await cp.call(key, 'GET', url())).json();
    assert.deepEqual(list, [r]);
  });

  const rules: { name: string; body: Record<string, unknown>; status: number; error: string }[] = [
    { name: 'ttl 0', body: { ...A, name: 'a1', ttl: 0 }, status: 400, error: 'ttl must be between 1 and 604800' },
    {
      name: 'ttl 604801',
      body: { ...A, name: 'a1', ttl: 604801 },
      status: 400,
      error: 'ttl must be between 1 and 604800',
    },
    { name: 'ttl not an integer', body: { ...A, name: 'a1', ttl: 'soon' }, status: 400, error: 'ttl must be integer' },
    {
      name: 'mx_priority 65536',
      body: { name: '@', type: 'MX', destination: 'mail.example.org', mx_priority: 65536 },
      status: 400,
      error: 'mx_priority must be between 0 and 65535',
    },
    {
      name: 'timeout 0',
      body: { ...A, name: 'a1', timeout: 0 },
      status: 400,
      error: 'timeout must be between 1 and 1800',
    },
    {
      name: 'timeout 1801',
      body: { ...A, name: 'a1', timeout: 1801 },
      status: 400,
      error: 'timeout must be between 1 and 1800',
    },
    {
      name: 'comment 1025',
      body: { ...A, name: 'a1', comment: 'c'.repeat(1025) },
      status: 400,
      error: 'comment must be at most 1024 characters',
    },
    {
      name: 'host_header_mode',
      body: { ...A, name: 'a1', host_header_mode: 'both' },
      status: 400,
      error: 'host_header_mode must be one of: own, target',
    },
    {
      name: 'type',
      body: { ...A, name: 'a1', type: 'SPF' },
      status: 400,
      error: 'type must be one of A, AAAA, CNAME, MX, TXT, NS, SRV, CAA, PTR',
    },
    { name: 'name missing', body: { type: 'A', destination: '192.0.2.1' }, status: 400, error: 'name is required' },
    {
      name: 'name outside zone',
      body: { ...A, name: 'www.example.net.' },
      status: 400,
      error: 'name "www.example.net." is not inside the zone example.org',
    },
    {
      name: 'wildcard not leftmost',
      body: { ...A, name: 'a.*.b' },
      status: 400,
      error: 'name "a.*.b" is not valid: a wildcard "*" is allowed only as the whole leftmost label',
    },
    {
      name: 'A destination',
      body: { ...A, name: 'a1', destination: '192.0.2' },
      status: 400,
      error: 'A destination must be an IPv4 address',
    },
    {
      name: 'AAAA destination',
      body: { name: 'a1', type: 'AAAA', destination: '2001:db8::g' },
      status: 400,
      error: 'AAAA destination must be an IPv6 address',
    },
    {
      name: 'CNAME destination',
      body: { name: 'a1', type: 'CNAME', destination: 'not a host' },
      status: 400,
      error: 'CNAME destination must be a host name',
    },
    {
      name: 'MX destination',
      body: { name: '@', type: 'MX', destination: '192.0.2.1' },
      status: 400,
      error: 'MX destination must be a host name',
    },
    {
      name: 'NS destination',
      body: { name: 'sub', type: 'NS', destination: 'ns_1..example' },
      status: 400,
      error: 'NS destination must be a host name',
    },
    {
      name: 'PTR destination',
      body: { name: 'a1', type: 'PTR', destination: '' },
      status: 400,
      error: 'destination must not be empty',
    },
    {
      name: 'TXT too long',
      body: { name: 'a1', type: 'TXT', destination: 't'.repeat(2049) },
      status: 400,
      error: 'TXT destination must be at most 2048 bytes',
    },
    {
      name: 'SRV shape',
      body: { name: '_sip._tcp', type: 'SRV', destination: 'sip.example.org' },
      status: 400,
      error: 'SRV destination must be "weight port target"',
    },
    {
      name: 'CAA tag',
      body: { name: '@', type: 'CAA', destination: '0 policy "x"' },
      status: 400,
      error: 'CAA tag must be issue, issuewild or iodef',
    },
    {
      name: 'proxied MX',
      body: { name: '@', type: 'MX', destination: 'mail.example.org', proxied: true },
      status: 400,
      error: 'only A, AAAA and CNAME records can be proxied',
    },
    {
      name: 'proxied TXT',
      body: { name: 'a1', type: 'TXT', destination: 'x', proxied: true },
      status: 400,
      error: 'only A, AAAA and CNAME records can be proxied',
    },
    {
      name: 'CNAME at apex',
      body: { name: '@', type: 'CNAME', destination: 'x.example.net' },
      status: 400,
      error: 'a CNAME record cannot be at the zone apex',
    },
    {
      name: 'CNAME to itself',
      body: { name: 'loop', type: 'CNAME', destination: 'loop.example.org' },
      status: 400,
      error: 'a CNAME record cannot point to itself',
    },
    {
      name: 'NS at apex',
      body: { name: '@', type: 'NS', destination: 'ns.example.net' },
      status: 400,
      error: 'NS records at the zone apex are managed by the platform',
    },
    {
      name: 'CNAME beside A',
      body: { name: 'www', type: 'CNAME', destination: 'x.example.net' },
      status: 400,
      error: 'a CNAME record cannot share its name with other records: "www" already has A records',
    },
    { name: 'identical record', body: { ...A }, status: 409, error: 'an identical record already exists' },
    {
      name: 'host_header not on the free plan',
      body: { ...A, name: 'a1', host_header: 'origin.example.net' },
      status: 403,
      error: 'your plan (free) does not include the host_header_edit_enabled feature',
    },
  ];
  await t.test('each rule answers its status and error body, and stores nothing', async () => {
    const before = await f.logCount();
    for (const r of rules) {
      const res = await post(r.body);
      assert.equal(res.statusCode, r.status, `${r.name}: ${res.body}`);
      assert.equal(res.json().error, r.error, r.name);
    }
    assert.equal((await cp.call(key, 'GET', url())).json().length, 1, 'nothing stored');
    assert.equal(await f.logCount(), before, 'no config-log entry for a failed write');
  });

  await t.test('a name that has a CNAME takes no other record', async () => {
    assert.equal(
      (await post({ name: 'alias', type: 'CNAME', destination: 'target.example.net', proxied: true })).statusCode,
      200,
    );
    const res = await post({ name: 'alias', type: 'TXT', destination: 'x' });
    assert.equal(res.statusCode, 400);
    assert.deepEqual(res.json(), {
      error: '"alias" already has a CNAME record, and a CNAME cannot share its name with other records',
    });
    const second = await post({ name: 'alias', type: 'CNAME', destination: 'other.example.net' });
    assert.equal(
      second.json().error,
      'a CNAME record cannot share its name with other records: "alias" already has CNAME records',
    );
  });

  await t.test('ttl, mx_priority, comment, host_header boundaries and removal', async () => {
    const r = (await post({ ...A, name: 'b', ttl: 604800, timeout: 1800, comment: 'c'.repeat(1024) })).json();
    assert.equal(r.ttl, 604800);
    assert.equal(r.timeout, 1800);
    assert.equal(r.comment.length, 1024);
    const proxied = (await cp.call(key, 'PUT', url(String(r.id)), { proxied: true, ttl: 3600 })).json();
    assert.equal(proxied.ttl, 120, 'forced to 120 while proxied');
    const cleared = (await cp.call(key, 'PUT', url(String(r.id)), { comment: '' })).json();
    assert.equal('comment' in cleared, false, 'an empty comment removes it');
    const mx = (await post({ name: '@', type: 'MX', destination: 'Mail.Example.org.', mx_priority: 65535 })).json();
    assert.deepEqual([mx.destination, mx.mx_priority], ['mail.example.org', 65535]);
    const ignored = (await post({ ...A, name: 'c', mx_priority: 5 })).json();
    assert.equal('mx_priority' in ignored, false, 'mx_priority is ignored on non-MX types');
    await f.setOverride('host_header_edit_enabled', true);
    const hh = (await post({ ...A, name: 'd', host_header: 'Origin.example.org', host_header_mode: 'target' })).json();
    assert.deepEqual([hh.host_header, hh.host_header_mode], ['origin.example.org', 'target']);
    const noHh = (await cp.call(key, 'PUT', url(String(hh.id)), { host_header: '' })).json();
    assert.equal('host_header' in noHh, false, 'an empty host_header removes the override');
  });

  await t.test('scheme and port behaviour; never reads back Default', async () => {
    const cases: [Record<string, unknown>, string, number][] = [
      [{ scheme: 'Https' }, 'Https', 443],
      [{ scheme: 'Https', port: 8443 }, 'Https', 8443],
      [{ scheme: 'Https', port: 70000 }, 'Https', 443],
      [{ scheme: 'Http' }, 'Http', 80],
      [{ scheme: 'Http', port: 8080 }, 'Http', 8080],
      [{ scheme: 'Http', port: 0 }, 'Http', 80],
      [{ scheme: 'Auto', port: 8080 }, 'Auto', 443],
      [{ scheme: 'Default', port: 80 }, 'Auto', 443],
      [{ scheme: '' }, 'Auto', 443],
      [{ scheme: 'ftp', port: 21 }, 'Auto', 443],
    ];
    for (const [i, [fields, scheme, port]] of cases.entries()) {
      const res = await post({ ...A, name: `s${i}`, ...fields });
      assert.equal(res.statusCode, 200, res.body);
      assert.deepEqual([res.json().scheme, res.json().port], [scheme, port], JSON.stringify(fields));
    }
    const list = (await cp.call(key, 'GET', url())).json() as { scheme: string }[];
    assert.ok(list.every((r) => r.scheme !== 'Default'));
  });

  await t.test('update and delete: omitted fields kept, 404 for unknown ids, type fixed', async () => {
    const r = (await post({ name: 'u', type: 'AAAA', destination: '2001:DB8:0::1', ttl: 300 })).json();
    assert.equal(r.destination, '2001:db8::1');
    const before = await f.logCount();
    const up = await cp.call(key, 'PUT', url(String(r.id)), { destination: '2001:db8::2' });
    assert.equal(up.statusCode, 200);
    assert.deepEqual([up.json().destination, up.json().ttl], ['2001:db8::2', 300]);
    assert.equal(await f.logCount(), before + 1);
    const same = await cp.call(key, 'PUT', url(String(r.id)), { destination: '2001:db8:0::2', ttl: 300, type: 'aaaa' });
    assert.deepEqual(same.json(), up.json(), 'an update that changes nothing answers the record as it is');
    assert.equal(await f.logCount(), before + 1, 'and appends nothing');
    assert.deepEqual((await cp.call(key, 'PUT', url(String(r.id)), { type: 'A' })).json(), {
      error: 'type cannot be changed; delete the record and create a new one',
    });
    assert.equal((await cp.call(key, 'PUT', url('999999'), { ttl: 60 })).statusCode, 404);
    assert.deepEqual((await cp.call(key, 'DELETE', url('999999'))).json(), { error: 'record not found' });
    const del = await cp.call(key, 'DELETE', url(String(r.id)));
    assert.deepEqual([del.statusCode, del.json()], [200, { message: `record ${r.id} deleted` }]);
    assert.equal(await f.logCount(), before + 2);
  });

  await t.test('permissions: viewer reads, cannot write; read-only key; invisible domain is 404', async () => {
    const viewer = await cp.user();
    await cp.addMember(f.domain, viewer.id, 'viewer');
    assert.equal((await cp.call(viewer.key, 'GET', url())).statusCode, 200);
    const denied = await post({ ...A, name: 'v' }, viewer.key);
    assert.deepEqual(
      [denied.statusCode, denied.json()],
      [403, { error: 'your role (viewer) lacks the records.edit permission on this domain' }],
    );
    const ro = await cp.key(f.userId, { readOnly: true });
    const roRes = await post({ ...A, name: 'v' }, ro.key);
    assert.deepEqual([roRes.statusCode, roRes.json()], [403, { error: 'read-only API key' }]);
    assert.equal((await cp.call(ro.key, 'GET', url('export'))).statusCode, 200);
    const stranger = await cp.user();
    assert.deepEqual((await cp.call(stranger.key, 'GET', url())).json(), { error: 'domain not found' });
    assert.equal((await post({ ...A, name: 'v' }, stranger.key)).statusCode, 404);
  });

  await t.test('plan limit max_records answers 403 naming it', async () => {
    const n = (await cp.call(key, 'GET', url())).json().length;
    await f.setOverride('max_records', n);
    const before = await f.logCount();
    const res = await post({ ...A, name: 'over' });
    assert.deepEqual(
      [res.statusCode, res.json()],
      [
        403,
        {
          error: `record limit reached: your plan (free) allows at most ${n} records (max_records)`,
          feature: 'max_records',
        },
      ],
    );
    // The record is inserted in the statement that reads the count; the refusal rolls it back.
    assert.equal((await cp.call(key, 'GET', url())).json().length, n, 'nothing stored');
    assert.equal(await f.logCount(), before, 'no config-log entry');
    await f.setOverride('max_records', null);
  });

  await t.test('the config-log entry of a write carries the zone with the change', async () => {
    const created = (await post({ name: 'logged', type: 'TXT', destination: 'hello', ttl: 77 })).json();
    const [entry] = await cp.database.db
      .select()
      .from(configLog)
      .where(eq(configLog.domainId, f.domainId))
      .orderBy(desc(configLog.version))
      .limit(1);
    const zone = decodeDomainSnapshot(entry!.payload).zone!;
    const rec = zone.records.find((r) => Number(r.id) === created.id);
    assert.deepEqual([rec?.name, rec?.type, rec?.destination, rec?.ttl], ['logged', 'TXT', 'hello', 77]);
  });

  await t.test('the list is byte for byte what the record schema serialises, escapes included', async () => {
    // The list's JSON text is built by the database (store.ts listRecordsJson); each create answers the same record
    // through the response schema, so the list must be exactly those answers, in id order.
    const other = await cp.domain(key, 'list-bytes.example');
    const [row] = await cp.database.db.select().from(domains).where(eq(domains.name, other));
    await setOverride(cp.database.db, row!.id, 'host_header_edit_enabled', true);
    const listUrl = `/domains/${other}/records/`;
    assert.equal((await cp.call(key, 'GET', listUrl)).body, '[]');
    const bodies = [
      { name: 'www', type: 'A', destination: '192.0.2.1', proxied: true, host_header: 'origin.list-bytes.example' },
      { name: '@', type: 'MX', destination: 'mail.example.net', mx_priority: 0 },
      { name: '_sip._tcp', type: 'SRV', destination: '10 5060 sip.example.net', comment: 'é 😀 </script>' },
      { name: 'txt', type: 'TXT', destination: '"quoted \\"inner\\" text" "and more"' },
      {
        name: 'c',
        type: 'A',
        destination: '192.0.2.2',
        comment: 'tab\there "quote" back\\slash\nnew line \u0001\u001f\u007f\u2028',
      },
      {
        name: 'monitored',
        type: 'CNAME',
        destination: 'target.example.net',
        monitor: true,
        captcha: true,
        scheme: 'Http',
        port: 8080,
      },
    ];
    const created: string[] = [];
    for (const b of bodies) {
      const res = await cp.call(key, 'POST', listUrl, b);
      assert.equal(res.statusCode, 200, res.body);
      created.push(res.body);
    }
    const list = await cp.call(key, 'GET', listUrl);
    assert.equal(list.statusCode, 200);
    assert.match(String(list.headers['content-type']), /^application\/json; charset=utf-8$/);
    assert.equal(list.body, `[${created.join(',')}]`);
  });

  await t.test('concurrent conflicting creates: exactly one wins', async () => {
    const bodies = Array.from({ length: 8 }, (_, i) =>
      i % 2 === 0
        ? { name: 'race', type: 'CNAME', destination: `t${i}.example.net` }
        : { name: 'race', type: 'A', destination: `192.0.2.${i}` },
    );
    const answers = await Promise.all(bodies.map((b) => post(b)));
    const won = answers.filter((r) => r.statusCode === 200).map((r) => r.json().type as string);
    assert.ok(
      answers.every((r) => r.statusCode === 200 || r.statusCode === 400),
      answers.map((r) => r.body).join('\n'),
    );
    const types = new Set(won);
    assert.equal(types.size, 1, `only one kind can hold the name: ${won.join(', ')}`);
    if (types.has('CNAME')) assert.equal(won.length, 1, 'a single CNAME');
    const stored = ((await cp.call(key, 'GET', url())).json() as { name: string }[]).filter((r) => r.name === 'race');
    assert.equal(stored.length, won.length);
  });

  await t.test('a disabled or banned domain takes no writes (409)', async () => {
    for (const state of ['disabled', 'banned']) {
      await f.setState(state);
      const res = await post({ ...A, name: 'z' });
      assert.deepEqual([res.statusCode, res.json()], [409, { error: `domain is ${state}` }]);
      assert.equal((await cp.call(key, 'GET', url())).statusCode, 200, 'reads still work');
    }
    await f.setState('pending');
  });
});
