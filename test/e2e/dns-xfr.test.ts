// Zone transfers end to end: secondaries and a TSIG key configured through the API reach a dns-server process
// through the config log (the secret sealed under the node token); NSD, configured as the secondary, transfers the
// zone from that process, and a record written through the API reaches NSD after the node's NOTIFY.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startControlPlane, type ControlPlaneProcess } from './sync-harness.js';
import { removeDir, startDnsProcess, type DnsProcess } from './dns-helpers.js';
import { freeDnsPort, need, startNsd, type Nsd } from '../../dns-server/src/xfr/testing.js';

const run = promisify(execFile);
let cp: ControlPlaneProcess | undefined;
let dns: DnsProcess | undefined;
let nsd: Nsd | undefined;
const dirs: string[] = [];
after(async () => {
  await nsd?.stop();
  await dns?.stop();
  await cp?.stop();
  for (const d of dirs) removeDir(d);
});

async function dig(port: number, name: string, type: string): Promise<string> {
  try {
    return (await run('dig', ['@127.0.0.1', '-p', String(port), '+norec', name, type], { timeout: 10_000 })).stdout;
  } catch (err) {
    return String((err as { stdout?: string }).stdout ?? err);
  }
}

async function until(what: string, get: () => Promise<string>, expect: RegExp): Promise<void> {
  const end = Date.now() + 60_000;
  for (;;) {
    const text = await get();
    if (expect.test(text)) return;
    if (Date.now() > end) assert.fail(`${what}: no match for ${expect}:\n${text}\nnsd: ${nsd?.log() ?? ''}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

test('secondaries through the API: NSD transfers from a dns-server process and follows a change', async () => {
  need('nsd', 'dig');
  cp = await startControlPlane('dns-xfr');
  await cp.api('POST', '/domains/', { name: 'xfr.example' });
  await cp.api('POST', '/domains/xfr.example/records/', { name: 'www', type: 'A', destination: '192.0.2.1', ttl: 300 });
  const nsdPort = await freeDnsPort();
  const written = await cp.api<{ generated_secrets: Record<string, string> }>(
    'PUT',
    '/domains/xfr.example/zone-transfers',
    {
      secondaries: [{ address: '127.0.0.1', port: nsdPort, tsig_key: 'nsd-key' }],
      tsig_keys: [{ name: 'nsd-key' }],
    },
  );
  const secret = Buffer.from(written.generated_secrets['nsd-key'], 'base64');
  assert.equal(secret.length, 32);

  const dnsDir = mkdtempSync(join(tmpdir(), 'dns-xfr-node-'));
  const nsdDir = mkdtempSync(join(tmpdir(), 'dns-xfr-nsd-'));
  dirs.push(dnsDir, nsdDir);
  dns = await startDnsProcess({ DATA_DIR: dnsDir, SYNC_URL: cp.syncUrl, NODE_TOKEN: cp.nodeToken });
  await until('the node serves the zone', () => dig(dns!.port, 'www.xfr.example', 'A'), /192\.0\.2\.1/);
  nsd = await startNsd({
    dir: nsdDir,
    port: nsdPort,
    zone: 'xfr.example',
    primaryPort: dns.port,
    key: { name: 'nsd-key', secret },
  });
  await until(
    'NSD serves the zone',
    () => dig(nsdPort, 'www.xfr.example', 'A'),
    /www\.xfr\.example\.\s+300\s+IN\s+A\s+192\.0\.2\.1/,
  );

  await cp.api('POST', '/domains/xfr.example/records/', {
    name: 'late',
    type: 'TXT',
    destination: 'after notify',
    ttl: 300,
  });
  await until('NSD serves the change', () => dig(nsdPort, 'late.xfr.example', 'TXT'), /"after notify"/);
});
