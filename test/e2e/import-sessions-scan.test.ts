// Import scans with a real Temporal dev server, the workflows worker and the control plane as processes: a scan that
// gets the zone by AXFR from the domain's nameserver (Debian's NSD on 127.0.0.1, a port of its own: SCAN_AXFR_PORT),
// one that falls back to the label list through the stub resolvers, a rescan that supersedes, POST and GET
// records/scan, a domain whose nameservers are private addresses (never asked), an open session across a restart of
// the control plane, and the proxied re-check of an external-DNS domain.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect, createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually, startLifecycle, type Lifecycle } from '../helpers/workflows-harness.js';
import { freeDnsPort, startNsd, type Nsd } from '../../dns-server/src/xfr/testing.js';
import { SCAN_LABELS } from '../../workflows/src/scan-labels.js';

const AXFR_ZONE = 'axfr.example.org';
const ZONE_FILE = `$ORIGIN axfr.example.org.
$TTL 300
@ IN SOA ns1.axfr.example.org. hostmaster.axfr.example.org. 1 3600 600 86400 300
@ IN NS ns1.axfr.example.org.
ns1 IN A 127.0.0.1
@ IN A 192.0.2.1
www IN CNAME axfr.example.org.
mail 600 IN A 192.0.2.2
@ IN MX 10 mail.axfr.example.org.
@ IN TXT "v=spf1 mx -all"
_sip._tcp IN SRV 1 5 5060 sip.axfr.example.org.
sip IN A 192.0.2.3
deep.unusual-label IN A 192.0.2.4
`;

let L: Lifecycle;
let nsd: Nsd | undefined;
let dir: string;
let axfrPort: number;
/** Listens on 127.0.0.2 at the AXFR port: a nameserver the platform must never reach (loopback is not allowed). */
let forbidden: Server;
let forbiddenConnections = 0;

const both = (fn: (s: Lifecycle['dns']) => void) => {
  fn(L.dns);
  fn(L.dns2);
};

async function startNsdPrimary(): Promise<void> {
  dir = mkdtempSync(join(tmpdir(), 'import-scan-nsd-'));
  axfrPort = await freeDnsPort();
  nsd = await startNsd({ dir, port: axfrPort, zone: AXFR_ZONE, zoneText: ZONE_FILE });
  // Ready once it answers on TCP.
  await eventually('NSD to listen', async () => {
    return new Promise<true | undefined>((resolve) => {
      const c = connect({ host: '127.0.0.1', port: axfrPort });
      c.on('connect', () => {
        c.destroy();
        resolve(true);
      });
      c.on('error', () => resolve(undefined));
    });
  });
}

before(async () => {
  await startNsdPrimary();
  forbidden = createServer((c) => {
    forbiddenConnections++;
    c.destroy();
  });
  await new Promise<void>((r) => forbidden.listen(axfrPort, '127.0.0.2', r));
  L = await startLifecycle(
    'import-scan',
    { EDGE_IPV4: '203.0.113.10' },
    { workerEnv: { SCAN_AXFR_PORT: String(axfrPort), ALLOWED_PRIVATE_NETWORKS: '127.0.0.1/32' } },
  );
});

after(async () => {
  await L?.close();
  await nsd?.stop(); // NSD writes its state files as it stops
  await new Promise<void>((r) => (forbidden ? forbidden.close(() => r()) : r()));
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** A managed domain whose own background zone scan (POST /domains/) has finished before the test sets its DNS. */
async function addDomain(name: string, nameservers: string[]): Promise<void> {
  both((s) => s.delegate(name, nameservers));
  const res = await L.api('POST', '/domains/', { name });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  // The outbox dispatcher starts it just after the answer.
  await eventually('the zone scan of a new domain', async () => {
    await L.temporal.client.workflow.getHandle(`zone-scan:${name}`).result();
    return true;
  });
}

async function settled(domain: string, id: number, states = ['open', 'committed', 'failed']) {
  return eventually(`session ${id} to leave scanning`, async () => {
    const r = await L.api('GET', `/domains/${domain}/records/import-sessions/${id}`);
    return states.includes(r.body.status) ? r.body : undefined;
  });
}

test('a scan session gets the zone by AXFR from the current nameserver; commit imports it', async () => {
  await addDomain(AXFR_ZONE, ['ns1.axfr.example.org']);
  both((s) => s.set('ns1.axfr.example.org', 'A', ['127.0.0.1']));
  const start = await L.api('POST', `/domains/${AXFR_ZONE}/records/import-sessions/`, { source: 'scan' });
  assert.equal(start.status, 200, JSON.stringify(start.body));
  assert.equal(start.body.status, 'scanning');
  const s = await settled(AXFR_ZONE, start.body.id);
  assert.equal(s.status, 'open', JSON.stringify(s));
  assert.equal(s.progress.method, 'axfr');
  assert.equal(s.progress.phase, 'done');
  assert.match(s.progress.nameservers[0].result, /^transferred \d+ records$/);
  const seen = s.records.map((r: any) => `${r.name} ${r.type} ${r.destination}`).sort();
  assert.deepEqual(seen, [
    '@ A 192.0.2.1',
    '@ MX mail.axfr.example.org',
    '@ TXT v=spf1 mx -all',
    '_sip._tcp SRV 5 5060 sip.axfr.example.org',
    'deep.unusual-label A 192.0.2.4',
    'mail A 192.0.2.2',
    'ns1 A 127.0.0.1',
    'sip A 192.0.2.3',
    'www CNAME axfr.example.org',
  ]);
  const committed = await L.api('POST', `/domains/${AXFR_ZONE}/records/import-sessions/${s.id}/commit`);
  assert.equal(committed.status, 200, JSON.stringify(committed.body));
  assert.equal(committed.body.result.created, 9);
  const records = (await L.api('GET', `/domains/${AXFR_ZONE}/records/`)).body;
  assert.equal(records.length, 9);
  assert.equal(records.find((r: any) => r.name === 'mail').ttl, 600);
});

test('without a zone transfer the scan asks the label list, with progress; a rescan supersedes the session', async () => {
  const d = 'labels.example.org';
  await addDomain(d, ['ns1.labels.example.org']);
  both((s) => {
    s.set('ns1.labels.example.org', 'A', ['127.0.0.1']); // NSD there does not serve this zone: REFUSED / NOTAUTH
    s.set(d, 'A', ['192.0.2.20']);
    s.set(`www.${d}`, 'A', ['192.0.2.21']);
    s.set(`mail.${d}`, 'A', ['192.0.2.22']);
    s.set(d, 'MX', [`10 mail.${d}`]);
    s.set(`not-a-common-label.${d}`, 'A', ['192.0.2.99']);
  });
  const start = await L.api('POST', `/domains/${d}/records/import-sessions/`, { source: 'scan' });
  assert.equal(start.status, 200, JSON.stringify(start.body));
  const s = await settled(d, start.body.id);
  assert.equal(s.status, 'open', JSON.stringify(s));
  assert.equal(s.progress.method, 'labels');
  assert.equal(s.progress.labels_total, SCAN_LABELS.length);
  assert.equal(s.progress.labels_done, SCAN_LABELS.length);
  assert.match(s.progress.nameservers[0].result, /^no transfer: the nameserver refused the transfer/);
  const seen = s.records.map((r: any) => `${r.name} ${r.type} ${r.destination}`).sort();
  assert.deepEqual(seen, ['@ A 192.0.2.20', `@ MX mail.${d}`, 'mail A 192.0.2.22', 'www A 192.0.2.21']);
  const open = await L.api('GET', `/domains/${d}/records/import-sessions/open`);
  assert.equal(open.body.id, s.id);

  const rescan = await L.api('POST', `/domains/${d}/records/import-sessions/${s.id}/rescan`);
  assert.equal(rescan.status, 200, JSON.stringify(rescan.body));
  assert.equal(rescan.body.source, 'scan');
  assert.notEqual(rescan.body.id, s.id);
  const old = (await L.api('GET', `/domains/${d}/records/import-sessions/${s.id}`)).body;
  assert.equal(old.status, 'superseded');
  assert.equal(old.superseded_by, rescan.body.id);
  assert.equal((await L.api('POST', `/domains/${d}/records/import-sessions/${s.id}/commit`)).status, 409);
  const next = await settled(d, rescan.body.id);
  assert.equal(next.status, 'open');
  assert.equal((await L.api('GET', `/domains/${d}/records/scan`)).body.id, next.id, 'GET scan: the latest scan');
  const discarded = await L.api('DELETE', `/domains/${d}/records/import-sessions/${next.id}`);
  assert.equal(discarded.body.status, 'discarded');
  assert.equal((await L.api('GET', `/domains/${d}/records/`)).body.length, 0, 'nothing imported');

  // POST records/scan: scan and import in one go.
  const scan = await L.api('POST', `/domains/${d}/records/scan`);
  assert.equal(scan.status, 200, JSON.stringify(scan.body));
  assert.equal(scan.body.auto_commit, true);
  const done = await settled(d, scan.body.id, ['committed', 'failed']);
  assert.equal(done.status, 'committed', JSON.stringify(done));
  assert.equal(done.result.created, 4);
  assert.equal((await L.api('GET', `/domains/${d}/records/`)).body.length, 4);
  assert.equal((await L.api('GET', `/domains/${d}/records/scan`)).body.status, 'committed');
});

test('nameservers at private or loopback addresses are never asked for a zone transfer', async () => {
  const d = 'private.example.org';
  await addDomain(d, ['ns1.private.example.org', 'ns2.private.example.org']);
  both((s) => {
    s.set('ns1.private.example.org', 'A', ['10.0.0.53']);
    s.set('ns2.private.example.org', 'A', ['127.0.0.2']);
    s.set(`www.${d}`, 'A', ['192.0.2.30']);
  });
  const scan = await L.api('POST', `/domains/${d}/records/scan`);
  assert.equal(scan.status, 200, JSON.stringify(scan.body));
  const done = await settled(d, scan.body.id, ['committed', 'failed']);
  const results = Object.fromEntries(done.progress.nameservers.map((n: any) => [n.address, n.result]));
  assert.equal(results['10.0.0.53'], 'not asked: 10.0.0.53 is a private address (RFC 1918)');
  assert.equal(results['127.0.0.2'], 'not asked: 127.0.0.2 is a loopback address');
  assert.equal(forbiddenConnections, 0);
  assert.equal(done.progress.method, 'labels');
  assert.equal(done.status, 'committed');
  assert.deepEqual(
    (await L.api('GET', `/domains/${d}/records/`)).body.map((r: any) => r.name),
    ['www'],
  );
});

test('an open session survives a restart of the control plane and commits after it', async () => {
  const d = 'restart.example.org';
  await addDomain(d, ['ns.elsewhere.example.net']);
  const start = await L.api('POST', `/domains/${d}/records/import-sessions/`, {
    zone: 'a 300 IN A 192.0.2.40\nb 300 IN TXT "kept"\n',
  });
  assert.equal(start.status, 200, JSON.stringify(start.body));
  await L.restartControlPlane();
  const open = await L.api('GET', `/domains/${d}/records/import-sessions/open`);
  assert.equal(open.status, 200);
  assert.equal(open.body.id, start.body.id);
  assert.deepEqual(open.body.records, start.body.records);
  const committed = await L.api('POST', `/domains/${d}/records/import-sessions/${start.body.id}/commit`);
  assert.equal(committed.status, 200, JSON.stringify(committed.body));
  assert.equal(committed.body.result.created, 2);
});

test('re-check of proxied records (external DNS): each hostname must resolve to the edge addresses', async () => {
  const d = 'ext.example.org';
  const created = await L.api('POST', '/domains/', { name: d, dns_mode: 'external' });
  assert.equal(created.status, 200, JSON.stringify(created.body));
  for (const name of ['www', 'shop'])
    assert.equal(
      (await L.api('POST', `/domains/${d}/records/`, { name, type: 'A', destination: '192.0.2.60', proxied: true }))
        .status,
      200,
    );
  both((s) => {
    s.set(`www.${d}`, 'A', ['203.0.113.10']);
    s.set(`shop.${d}`, 'A', ['192.0.2.60']);
  });
  const res = await L.api('POST', `/domains/${d}/records/recheck-proxied`);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.equal(res.body.ok, false);
  assert.equal(res.body.checked, 2);
  const by = Object.fromEntries(res.body.records.map((r: any) => [r.name, r]));
  assert.equal(by.www.ok, true);
  assert.deepEqual(by.www.seen, ['203.0.113.10']);
  assert.equal(by.shop.ok, false);
  assert.match(by.shop.error, /resolves to 192\.0\.2\.60, not the service/);
  const managed = await L.api('POST', `/domains/${AXFR_ZONE}/records/recheck-proxied`);
  assert.equal(managed.status, 400);
  assert.match(managed.body.error, /the re-check is for external DNS/);
});
