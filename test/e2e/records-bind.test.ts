// BIND master files: an export of a zone holding every record type passes named-checkzone (bind9-utils), and
// importing it again yields the same records; the parse preview stores nothing; an import is all or nothing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eq } from 'drizzle-orm';
import { buildDomainSnapshot } from '../../control-plane/src/config-log/snapshot.js';
import { domains } from '../../control-plane/src/db/schema.js';
import { buildQuery } from '../../dns-server/src/testing/fixtures.js';
import { decode } from '../../dns-server/src/testing/decode.js';
import { dataDirWith, removeDir, startDnsProcess, udpQuery } from './dns-helpers.js';
import { recordsFixture } from './records-helpers.js';

const EVERY_TYPE: Record<string, unknown>[] = [
  { name: '@', type: 'A', destination: '192.0.2.10', ttl: 3600 },
  { name: '@', type: 'AAAA', destination: '2001:db8::10' },
  {
    name: 'www',
    type: 'A',
    destination: '192.0.2.11',
    proxied: true,
    captcha: true,
    scheme: 'Https',
    port: 8443,
    comment: 'edge; "quoted" note',
  },
  { name: 'www', type: 'AAAA', destination: '2001:DB8:0:0::11', proxied: true, monitor: true, timeout: 90 },
  { name: 'blog', type: 'CNAME', destination: 'blog.example.net.', proxied: true, scheme: 'Http', port: 8080 },
  { name: '*.dev', type: 'A', destination: '192.0.2.12' },
  { name: 'mail', type: 'A', destination: '192.0.2.25' },
  { name: '@', type: 'MX', destination: 'mail.example.org', mx_priority: 10 },
  { name: '@', type: 'MX', destination: 'backup-mx.example.net', mx_priority: 20 },
  { name: '@', type: 'TXT', destination: 'v=spf1 mx -all' },
  { name: '@', type: 'TXT', destination: 'quote " backslash \\ semicolon ; unicode é' },
  { name: 'long', type: 'TXT', destination: `k=rsa; p=${'A'.repeat(600)}` },
  { name: 'sub', type: 'NS', destination: 'ns1.sub.example.org' },
  { name: 'ns1.sub', type: 'A', destination: '192.0.2.53' },
  { name: 'sub', type: 'NS', destination: 'ns.example.net' },
  { name: '_sip._tcp', type: 'SRV', destination: '5 5060 sip.example.org', mx_priority: 1 },
  { name: 'sip', type: 'A', destination: '192.0.2.60' },
  { name: '@', type: 'CAA', destination: '0 issue "letsencrypt.org"' },
  { name: '@', type: 'CAA', destination: '128 iodef "mailto:security@example.org"' },
  { name: '10', type: 'PTR', destination: 'host10.example.org.' },
  { name: 'ttl-max', type: 'TXT', destination: 'max', ttl: 604800 },
];

type Rec = Record<string, unknown> & { id: number; created_at: string; updated_at: string };
const comparable = (records: Rec[]) =>
  records
    .map(({ id: _i, created_at: _c, updated_at: _u, ...rest }) => rest)
    .sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));

test('BIND export and import', async (t) => {
  const f = await recordsFixture(t);
  const { cp, key, url } = f;
  await f.setOverride('host_header_edit_enabled', true);
  for (const body of EVERY_TYPE) {
    const res = await cp.call(key, 'POST', url(), body);
    assert.equal(res.statusCode, 200, `${JSON.stringify(body)}: ${res.body}`);
  }
  const hh = (
    await cp.call(key, 'POST', url(), {
      name: 'api',
      type: 'A',
      destination: '192.0.2.80',
      host_header: 'api.example.org',
      host_header_mode: 'target',
    })
  ).json();
  assert.equal(hh.host_header, 'api.example.org');
  const original = (await cp.call(key, 'GET', url())).json() as Rec[];
  const dir = mkdtempSync(join(tmpdir(), 'records-bind-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));

  let exported = '';
  await t.test('the export is a master file that named-checkzone accepts', async () => {
    const res = await cp.call(key, 'GET', url('export'));
    assert.equal(res.statusCode, 200);
    assert.match(String(res.headers['content-type']), /^text\/plain/);
    exported = res.body;
    assert.match(exported, /^\$ORIGIN example\.org\.$/m);
    assert.match(exported, /^\$TTL 120$/m);
    assert.match(exported, /^@\t3600\tIN\tSOA\tns1\.platform\.test\. hostmaster\.example\.org\. \d+ /m);
    assert.match(exported, /^@\t3600\tIN\tNS\tns1\.platform\.test\.$/m);
    assert.match(exported, /^_sip\._tcp\t120\tIN\tSRV\t1 5 5060 sip\.example\.org\.$/m);
    assert.match(exported, /^@\t120\tIN\tTXT\t"quote \\" backslash \\\\ semicolon ; unicode \\195\\169"$/m);
    const file = join(dir, 'example.org.zone');
    writeFileSync(file, exported);
    let out = '';
    try {
      out = execFileSync('named-checkzone', ['example.org', file], { encoding: 'utf8' });
    } catch (err) {
      const e = err as { code?: string; stdout?: string; stderr?: string };
      if (e.code === 'ENOENT') assert.fail('named-checkzone is missing: run `npm run setup` (installs bind9-utils)');
      assert.fail(`named-checkzone rejected the export:\n${e.stdout}${e.stderr}\n${exported}`);
    }
    assert.match(out, /loaded serial \d+\nOK/);
  });

  await t.test('the SOA and apex NS of the export have the TTLs a DNS node serves for the zone', async () => {
    const [row] = await cp.database.db.select().from(domains).where(eq(domains.id, f.domainId));
    const snapshot = await cp.database.db.transaction((tx) => buildDomainSnapshot(tx, row!, cp.config.nsSets));
    const dataDir = await dataDirWith([snapshot]);
    const dns = await startDnsProcess({ DATA_DIR: dataDir, SYNC_URL: 'ws://127.0.0.1:9' });
    try {
      for (const [qtype, type] of [
        [2, 'NS'],
        [6, 'SOA'],
      ] as const) {
        const answer = decode((await udpQuery(dns.port, buildQuery('example.org', qtype)))!);
        assert.ok(answer.answer.length > 0, `${type} answered`);
        const served = answer.answer.map((rr) => Number(rr.split(' ')[1]));
        const inExport = [...exported.matchAll(new RegExp(`^@\\t(\\d+)\\tIN\\t${type}\\t`, 'gm'))].map((m) =>
          Number(m[1]),
        );
        assert.equal(inExport.length, served.length, `${type} records in the export and in the answer`);
        assert.deepEqual(inExport, served, `${type} TTLs: export vs DNS answer`);
      }
    } finally {
      await dns.stop();
      removeDir(dataDir);
    }
  });

  await t.test('re-importing the export into the emptied zone yields the same records', async () => {
    const del = await cp.call(key, 'POST', url('delete-many'), { ids: original.map((r) => r.id) });
    assert.equal(del.json().succeeded, original.length);
    const preview = await cp.call(key, 'POST', url('import/parse'), { zone: exported });
    assert.equal(preview.statusCode, 200);
    assert.equal(preview.json().records.length, original.length);
    assert.deepEqual(preview.json().errors, []);
    assert.deepEqual(
      preview.json().skipped.map((s: { reason: string }) => s.reason),
      [
        'SOA is managed by the platform',
        'NS records at the zone apex are managed by the platform',
        'NS records at the zone apex are managed by the platform',
      ],
    );
    assert.equal((await cp.call(key, 'GET', url())).json().length, 0, 'the preview stores nothing');
    const before = await f.logCount();
    const res = await cp.call(key, 'POST', url('import'), { zone: exported });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().created, original.length);
    assert.equal(await f.logCount(), before + 1, 'one config-log entry per import');
    const after = (await cp.call(key, 'GET', url())).json() as Rec[];
    assert.deepEqual(comparable(after), comparable(original));
  });

  await t.test('importing the same file again skips every record as identical', async () => {
    const before = await f.logCount();
    const res = await cp.call(key, 'POST', url('import'), { zone: exported });
    assert.equal(res.statusCode, 200);
    assert.equal(res.json().created, 0);
    assert.equal(
      res.json().skipped.filter((s: { reason: string }) => s.reason === 'an identical record already exists').length,
      original.length,
    );
    assert.equal(await f.logCount(), before, 'nothing changed, nothing appended');
  });

  const handWritten = [
    '$TTL 1h',
    '$ORIGIN example.org.',
    '@ IN SOA ns1.example.org. hostmaster.example.org. (',
    '     2024010101 ; serial',
    '     7200 3600 1209600 3600 )',
    '  IN NS ns1.example.org.',
    'app 300 IN A 192.0.2.90 ; a comment',
    '    IN AAAA 2001:db8::90',
    'txt IN TXT ( "part one "',
    '            "part two" )',
    'rel CNAME app',
    '$ORIGIN deep.example.org.',
    'x 1d IN MX 5 mail.example.org.',
    'bad IN A 999.1.1.1',
    'other.example.net. IN A 192.0.2.1',
    'c IN HINFO "pc" "linux"',
    'y IN CH A 192.0.2.1',
  ].join('\n');

  await t.test(
    'parse preview: parentheses, comments, $ORIGIN, $TTL units, blank owners, relative names, line errors',
    async () => {
      const res = await cp.call(key, 'POST', url('import/parse'), { zone: handWritten });
      assert.equal(res.statusCode, 200);
      const body = res.json();
      assert.deepEqual(
        body.records.map((r: Record<string, unknown>) => [r.line, r.name, r.type, r.destination, r.ttl, r.mx_priority]),
        [
          [7, 'app', 'A', '192.0.2.90', 300, undefined],
          [8, 'app', 'AAAA', '2001:db8::90', 3600, undefined],
          [9, 'txt', 'TXT', 'part one part two', 3600, undefined],
          [11, 'rel', 'CNAME', 'app.example.org', 3600, undefined],
          [13, 'x.deep', 'MX', 'mail.example.org', 86400, 5],
        ],
      );
      assert.deepEqual(body.skipped, [
        { line: 3, reason: 'SOA is managed by the platform' },
        { line: 6, reason: 'NS records at the zone apex are managed by the platform' },
      ]);
      assert.deepEqual(body.errors, [
        { line: 14, error: 'A destination must be an IPv4 address' },
        { line: 15, error: 'name "other.example.net." is not inside the zone example.org' },
        { line: 16, error: 'unsupported record type HINFO' },
        { line: 17, error: 'class CH is not supported; only IN' },
      ]);
    },
  );

  await t.test('an import with any bad line stores nothing (400 with the line errors)', async () => {
    const count = (await cp.call(key, 'GET', url())).json().length;
    const res = await cp.call(key, 'POST', url('import'), { zone: handWritten });
    assert.equal(res.statusCode, 400);
    assert.equal(res.json().error, 'the zone file has 4 invalid lines; nothing was imported');
    assert.equal(res.json().errors.length, 4);
    assert.equal((await cp.call(key, 'GET', url())).json().length, count);
    const conflict = await cp.call(key, 'POST', url('import'), { zone: 'www 60 IN CNAME elsewhere.example.net.' });
    assert.deepEqual(conflict.json(), {
      error: 'the zone file has 1 invalid line; nothing was imported',
      errors: [
        {
          line: 1,
          error: 'a CNAME record cannot share its name with other records: "www" already has A, AAAA records',
        },
      ],
    });
    const unterminated = await cp.call(key, 'POST', url('import/parse'), { zone: 'a IN TXT "open\nb IN A 192.0.2.1' });
    assert.deepEqual(unterminated.json().errors, [{ line: 1, error: 'unterminated quoted string' }]);
  });

  await t.test('an import past max_records is 403 and stores nothing', async () => {
    const count = (await cp.call(key, 'GET', url())).json().length;
    await f.setOverride('max_records', count + 1);
    const res = await cp.call(key, 'POST', url('import'), { zone: 'n1 IN A 192.0.2.1\nn2 IN A 192.0.2.2' });
    assert.deepEqual(
      [res.statusCode, res.json()],
      [
        403,
        {
          error: `record limit reached: your plan (free) allows at most ${count + 1} records (max_records)`,
          feature: 'max_records',
        },
      ],
    );
    assert.equal((await cp.call(key, 'GET', url())).json().length, count);
  });
});
