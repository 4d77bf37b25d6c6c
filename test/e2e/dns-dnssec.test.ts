// DNSSEC end to end: PUT dnssec through the API, the keys reach a dns-server process through the config log (sealed
// under the node token), the node signs the zone, and delv (BIND) validates its answers from the DS record the API
// shows — positive, NXDOMAIN, NODATA, a record written after signing — then DNSSEC off serves the zone unsigned.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startControlPlane, type ControlPlaneProcess } from './sync-harness.js';
import { removeDir, startDnsProcess, type DnsProcess } from './dns-helpers.js';

const run = promisify(execFile);
let cp: ControlPlaneProcess | undefined;
let dns: DnsProcess | undefined;
const dirs: string[] = [];
after(async () => {
  await dns?.stop();
  await cp?.stop();
  for (const d of dirs) removeDir(d);
});

interface Ds {
  key_tag: number;
  algorithm: number;
  digest_type: number;
  digest: string;
  record: string;
}
interface Status {
  enabled: boolean;
  status: string;
  ds: Ds[];
  keys: Array<{ role: string; state: string; key_tag: number }>;
}

async function tool(file: string, args: string[]): Promise<string> {
  try {
    const r = await run(file, args, { encoding: 'utf8', timeout: 30_000 });
    return r.stdout + r.stderr;
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; code?: string };
    if (e.code === 'ENOENT') throw new Error(`${file} is not installed: apt-get install bind9-dnsutils`);
    return `${e.stdout ?? ''}${e.stderr ?? ''}`;
  }
}

/** Polls delv until `expect` matches (bounded); returns the last output. */
async function validated(port: number, anchor: string, name: string, type: string, expect: RegExp): Promise<string> {
  const end = Date.now() + 30_000;
  for (;;) {
    const out = await tool('delv', ['@127.0.0.1', '-p', String(port), '-a', anchor, '+root=sec.example', name, type]);
    if (expect.test(out)) return out;
    if (Date.now() > end) assert.fail(`delv ${name} ${type}: no match for ${expect}:\n${out}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

test('DNSSEC through the API: signed by the node, validated by delv from the DS the API shows', async () => {
  cp = await startControlPlane('dns-dnssec');
  await cp.api('POST', '/domains/', { name: 'sec.example' });
  await cp.api('POST', '/domains/sec.example/records/', { name: 'www', type: 'A', destination: '192.0.2.1', ttl: 300 });
  const off = await cp.api<Status>('GET', '/domains/sec.example/dnssec');
  assert.deepEqual([off.enabled, off.status, off.ds, off.keys], [false, 'disabled', [], []]);

  const on = await cp.api<Status>('PUT', '/domains/sec.example/dnssec', { enabled: true });
  assert.deepEqual([on.enabled, on.status, on.ds.length], [true, 'active', 1]);
  assert.deepEqual(on.keys.map((k) => `${k.role} ${k.state}`).sort(), ['ksk active', 'zsk active']);
  assert.match(on.ds[0].record, /^sec\.example\. 3600 IN DS \d+ 13 2 [0-9A-F]{64}$/);
  // Twice is once: the same keys.
  const again = await cp.api<Status>('PUT', '/domains/sec.example/dnssec', { enabled: true });
  assert.deepEqual(again.ds, on.ds);

  const dir = mkdtempSync(join(tmpdir(), 'dns-dnssec-'));
  dirs.push(dir);
  dns = await startDnsProcess({ DATA_DIR: dir, SYNC_URL: cp.syncUrl, NODE_TOKEN: cp.nodeToken });
  const ds = on.ds[0];
  const anchor = join(dir, 'anchor.conf');
  writeFileSync(
    anchor,
    `trust-anchors {\n  "sec.example." static-ds ${ds.key_tag} ${ds.algorithm} ${ds.digest_type} "${ds.digest}";\n};\n`,
  );
  await validated(
    dns.port,
    anchor,
    'www.sec.example',
    'A',
    /^; fully validated\nwww\.sec\.example\.\s+300\s+IN\s+A\s+192\.0\.2\.1/m,
  );
  await validated(dns.port, anchor, 'nope.sec.example', 'A', /^; negative response, fully validated\n.*NXDOMAIN/m);
  await validated(dns.port, anchor, 'www.sec.example', 'MX', /^; negative response, fully validated\n.*NXRRSET/m);
  await validated(
    dns.port,
    anchor,
    'sec.example',
    'CDS',
    new RegExp(`^; fully validated\\n.*CDS\\s+${ds.key_tag} 13 2`, 'm'),
  );

  // A record written after signing is signed by the node and validates; the name it replaces proves its absence.
  await cp.api('POST', '/domains/sec.example/records/', { name: 'new', type: 'TXT', destination: 'fresh', ttl: 300 });
  await validated(
    dns.port,
    anchor,
    'new.sec.example',
    'TXT',
    /^; fully validated\nnew\.sec\.example\.\s+300\s+IN\s+TXT\s+"fresh"/m,
  );
  await validated(dns.port, anchor, 'new.sec.example', 'A', /^; negative response, fully validated/m);

  // Off: the zone is served unsigned (no DNSKEY), the keys are gone.
  const disabled = await cp.api<Status>('PUT', '/domains/sec.example/dnssec', { enabled: false });
  assert.deepEqual([disabled.enabled, disabled.keys, disabled.ds], [false, [], []]);
  const end = Date.now() + 30_000;
  for (;;) {
    const out = await tool('dig', ['@127.0.0.1', '-p', String(dns.port), '+norec', '+dnssec', 'sec.example', 'DNSKEY']);
    if (/ANSWER: 0,/.test(out) && !/RRSIG/.test(out)) break;
    if (Date.now() > end) assert.fail(`DNSKEY still served:\n${out}`);
    await new Promise((r) => setTimeout(r, 200));
  }
});
