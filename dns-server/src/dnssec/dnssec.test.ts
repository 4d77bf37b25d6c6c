// DNSSEC checked by BIND's own tools (Debian's bind9 packages): the signed zone dumped whole passes dnssec-verify,
// also after changes patched in record by record (the NSEC3 chain and the signatures kept up to date), and answers
// over real UDP — positive, NXDOMAIN, NODATA, wildcard, CNAME, DS at a delegation — are validated by delv against
// the zone's key-signing key as the trust anchor.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createCounters } from '../counters.js';
import { startDnsServer } from '../server.js';
import { buildQuery, rec, sampleSnapshot } from '../testing/fixtures.js';
import { answerQuery } from '../handler.js';
import { TYPE } from '../wire/constants.js';
import { ParsedQuery, parseQuery, PARSE } from '../wire/query.js';
import { ZoneBuilder } from '../zone/builder.js';
import { ZoneTable } from '../zone/table.js';
import { dumpZone, makeDnssec, trustAnchor } from './testing.js';

const run = promisify(execFile);
const OPTS = { edgeIpv4: ['203.0.113.1'], edgeIpv6: ['2001:db8::1'] };

function tool(name: string): string {
  const r = spawnSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${name} is not installed: apt-get install bind9-dnsutils bind9-utils`);
  return r.stdout.trim();
}

function verify(dir: string, text: string): string {
  const file = join(dir, `zone-${Math.random().toString(36).slice(2)}`);
  writeFileSync(file, text);
  const r = spawnSync(tool('dnssec-verify'), ['-o', 'example.org', file], { encoding: 'utf8', timeout: 60000 });
  assert.equal(r.status, 0, `dnssec-verify failed:\n${r.stdout}\n${r.stderr}`);
  return r.stdout + r.stderr;
}

test('a signed zone passes dnssec-verify, whole and after patches', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'dnssec-verify-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const snapshot = sampleSnapshot({ dnssec: makeDnssec() });
  const builder = new ZoneBuilder(snapshot, OPTS);
  assert.match(verify(dir, dumpZone(builder.zone!)), /Zone fully signed/);

  // Names appear and go (new empty non-terminals, a new delegation, a wildcard), a record changes type set.
  const header = (serial: number) => ({ ...snapshot, zone: { ...snapshot.zone, serial, records: [] } });
  const added = [
    rec('new', 'A', '192.0.2.99'),
    rec('c.b.a', 'TXT', 'deep'),
    rec('*.wild', 'AAAA', '2001:db8::99'),
    rec('deleg', 'NS', 'ns.elsewhere.example.net'),
    rec('www', 'TXT', 'now with text'),
  ];
  let r = builder.apply(header(8), added, []);
  assert.equal(r.how, 'patched');
  verify(dir, dumpZone(builder.zone!));
  const www = snapshot.zone.records.find((x) => x.name === 'www' && x.type === 'AAAA')!;
  r = builder.apply(header(9), [], [added[1].id, added[3].id, www.id, snapshot.zone.records[0].id]);
  assert.equal(r.how, 'patched');
  const out = verify(dir, dumpZone(builder.zone!));
  assert.match(out, /Zone fully signed/);
  // The serial written in place is signed again.
  assert.equal(builder.zone!.serial, 9);
  // A week before the signatures run out the zone is signed again, whole.
  assert.equal(builder.resignDue(), false);
  assert.equal(builder.resignDue(Date.now() + 8 * 86400_000), true);
  const before = builder.zone!.signer!.validity.expiration;
  builder.resign();
  assert.ok(builder.zone!.signer!.validity.expiration >= before);
  verify(dir, dumpZone(builder.zone!));
});

test('a zone whose keys cannot sign is not served signed: the compile fails and names the reason', () => {
  const dnssec = makeDnssec();
  dnssec.keys[1] = { ...dnssec.keys[1], privateKeyDer: new Uint8Array(0) }; // a ZSK without its private half
  assert.throws(() => new ZoneBuilder(sampleSnapshot({ dnssec }), OPTS), /no signing ZSK and KSK/);
  const other = makeDnssec();
  dnssec.keys[1] = { ...makeDnssec().keys[1], publicKey: other.keys[1].publicKey }; // halves of two keys
  assert.throws(() => new ZoneBuilder(sampleSnapshot({ dnssec }), OPTS), /does not match its public key/);
});

test('answers over UDP validate with delv; without DO nothing DNSSEC is added', async (t) => {
  const delv = tool('delv');
  const dir = mkdtempSync(join(tmpdir(), 'dnssec-delv-'));
  const dnssec = makeDnssec();
  const builder = new ZoneBuilder(sampleSnapshot({ dnssec }), OPTS);
  const table = new ZoneTable();
  table.set(builder.zone!);
  const counters = createCounters();
  const server = await startDnsServer({ host: '127.0.0.1', port: 0, tcpIdleMs: 5000, table, counters });
  t.after(async () => {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  });
  writeFileSync(join(dir, 'anchor'), trustAnchor('example.org', dnssec.keys[0]));
  // The server answers in this process: the tools run asynchronously.
  const ask = async (name: string, type: string): Promise<string> => {
    try {
      const r = await run(
        delv,
        ['@127.0.0.1', '-p', String(server.port), '-a', join(dir, 'anchor'), '+root=example.org', name, type],
        { encoding: 'utf8', timeout: 30000 },
      );
      return r.stdout + r.stderr;
    } catch (err) {
      const e = err as { stdout?: string; stderr?: string };
      return `${e.stdout ?? ''}${e.stderr ?? ''}`;
    }
  };
  const cases: Array<[string, string, RegExp]> = [
    ['www.example.org', 'A', /^; fully validated\nwww\.example\.org\.\s+300\s+IN\s+A\s+192\.0\.2\.10/m],
    ['example.org', 'DNSKEY', /^; fully validated/m],
    ['example.org', 'CDS', /^; fully validated/m],
    ['example.org', 'SOA', /^; fully validated/m],
    ['shop.example.org', 'A', /^; fully validated\nshop\.example\.org\.\s+120\s+IN\s+A\s+203\.0\.113\.1/m],
    ['nothere.example.org', 'A', /^; negative response, fully validated\n.*NXDOMAIN/m],
    ['www.example.org', 'TXT', /^; negative response, fully validated\n.*NXRRSET/m],
    ['deep.example.org', 'A', /^; negative response, fully validated/m], // empty non-terminal
    ['a.dev.example.org', 'A', /^; fully validated\na\.dev\.example\.org\.\s+300\s+IN\s+A\s+192\.0\.2\.50/m],
    ['b.x.dev.example.org', 'TXT', /^; fully validated/m], // wildcard, deeper
    ['a.dev.example.org', 'MX', /^; negative response, fully validated/m], // wildcard NODATA
    ['alias.example.org', 'A', /^; fully validated\nalias\.example\.org\.\s+300\s+IN\s+CNAME/m],
    ['dangling.example.org', 'A', /^; fully validated\ndangling\.example\.org\.\s+300\s+IN\s+CNAME/m],
    ['sub.example.org', 'DS', /^; negative response, fully validated/m], // unsigned delegation
    ['x.mx.example.org', 'MX', /^; fully validated/m],
  ];
  // Kept negative answers (ZoneSigner.nxdomainTail, a node's kept NODATA): the same NXDOMAIN asked again, names that
  // share one kept proof (found below), a DS for a missing name, names asked in another case, NODATA asked again.
  const zone = builder.zone!;
  const byTail = new Map<unknown, string[]>();
  for (let i = 0; i < 200; i++) {
    const name = `n${i}.example.org`;
    const tail = zone.signer!.nxdomainTail(zone, name);
    byTail.set(tail, [...(byTail.get(tail) ?? []), name]);
  }
  const sharing = [...byTail.values()].find((names) => names.length >= 3)!;
  assert.ok(sharing, 'names sharing one kept proof');
  const nx = /^; negative response, fully validated\n.*NXDOMAIN/m;
  const nodata = /^; negative response, fully validated\n.*NXRRSET/m;
  cases.push(
    ['nothere.example.org', 'A', nx],
    ['NotHere.Example.ORG', 'AAAA', nx],
    ...sharing.slice(0, 3).map((n): [string, string, RegExp] => [n, 'A', nx]),
    [sharing[0], 'DS', nx],
    ['nope.example.org', 'DS', nx],
    ['nope.example.org', 'DS', nx],
    ['a.b.c.deep.example.org', 'A', nx], // closest encloser: an empty non-terminal
    ['q.x.y.deep.example.org', 'TXT', nx],
    ['q.x.y.deep.example.org', 'TXT', nx],
    ['z.nx.www.example.org', 'A', nx],
    ['www.example.org', 'TXT', nodata],
    ['WWW.example.org', 'TXT', nodata],
    ['deep.example.org', 'A', /^; negative response, fully validated/m],
  );
  const failures: string[] = [];
  for (const [name, type, expect] of cases) {
    const out = await ask(name, type);
    if (!expect.test(out)) failures.push(`${name} ${type}:\n${out}`);
  }
  assert.deepEqual(failures, []);

  // The same answers from the table's answer cache: each question asked twice more with DO=1 (a name that does not
  // exist or comes from a wildcard is kept on its second asking), found kept, then validated again by delv.
  for (const [name, type] of cases) {
    const msg = buildQuery(name, TYPE[type as keyof typeof TYPE], { edns: { do: true } });
    for (let i = 0; i < 2; i++) answerQuery(msg, msg.length, false, table, counters);
    const q = new ParsedQuery();
    assert.equal(parseQuery(msg, msg.length, q), PARSE.OK);
    assert.ok(table.answers.find(q) >= 0, `${name} ${type} kept`);
  }
  const fromCache: string[] = [];
  for (const [name, type, expect] of cases) {
    const out = await ask(name, type);
    if (!expect.test(out)) fromCache.push(`${name} ${type}:\n${out}`);
  }
  assert.deepEqual(fromCache, []);

  // Without DO the answer has no RRSIG; with DO a referral carries the cut's NSEC3 (no DS) and its signature.
  const dig = async (...args: string[]) =>
    (
      await run(tool('dig'), ['@127.0.0.1', '-p', String(server.port), '+norec', ...args], {
        encoding: 'utf8',
        timeout: 30000,
      })
    ).stdout;
  assert.doesNotMatch(await dig('www.example.org', 'A'), /RRSIG/);
  assert.match(await dig('+dnssec', 'www.example.org', 'A'), /IN\s+RRSIG\s+A 13 3 300/);
  const referral = await dig('+dnssec', 'q.sub.example.org', 'A');
  assert.match(referral, /AUTHORITY SECTION:\nsub\.example\.org\.\s+300\s+IN\s+NS/);
  assert.match(referral, /IN\s+NSEC3\s+1 0 0 - \S+ NS\n/);
  assert.match(referral, /IN\s+RRSIG\s+NSEC3 13 3 300/);
});
