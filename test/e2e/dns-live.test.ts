// Writes through the control plane's API reach the dns-server's answers: a control plane with its sync hub, and two
// dns-server processes (1 worker, and 2 cluster workers) recompiling the changed zone on each applied entry.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { buildQuery } from '../../dns-server/src/testing/fixtures.js';
import { decode, type Decoded } from '../../dns-server/src/testing/decode.js';
import { startControlPlane, type ControlPlaneProcess } from './sync-harness.js';
import { removeDir, startDnsProcess, udpQuery, tcpQueries, type DnsProcess } from './dns-helpers.js';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

let cp: ControlPlaneProcess | undefined;
const nodes: Array<{ dns: DnsProcess; dir: string }> = [];
after(async () => {
  for (const n of nodes) {
    await n.dns.stop();
    removeDir(n.dir);
  }
  await cp?.stop();
});

async function ask(dns: DnsProcess, name: string, qtype: number, tcp = false): Promise<Decoded> {
  const q = buildQuery(name, qtype);
  const a = tcp ? (await tcpQueries(dns.port, [q]))[0] : await udpQuery(dns.port, q);
  assert.ok(a);
  return decode(a);
}

/** Polls until `check` holds for the node's answer (bounded); returns the last answer. */
async function until(dns: DnsProcess, name: string, qtype: number, check: (d: Decoded) => boolean): Promise<Decoded> {
  const end = Date.now() + 30_000;
  for (;;) {
    const d = await ask(dns, name, qtype);
    if (check(d)) return d;
    if (Date.now() > end) assert.fail(`no expected answer for ${name}/${qtype}; last: ${JSON.stringify(d)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const serial = (d: Decoded) => Number(d.answer[0]?.split(' ').pop() ?? 0);

test('API writes are answered by every dns-server, the serial grows, deletions are honoured', async () => {
  cp = await startControlPlane('dns-live');
  await cp.api('POST', '/domains/', { name: 'live.example' });
  for (const workers of ['1', '2']) {
    const dir = mkdtempSync(join(tmpdir(), 'dns-live-'));
    const dns = await startDnsProcess({
      DATA_DIR: dir,
      SYNC_URL: cp.syncUrl,
      NODE_TOKEN: cp.nodeToken,
      DNS_WORKERS: workers,
    });
    nodes.push({ dns, dir });
  }
  // A pending domain is served (its delegation can be checked): SOA answered before any record exists.
  const before = await Promise.all(nodes.map(({ dns }) => until(dns, 'live.example', 6, (d) => d.answer.length === 1)));

  const created = await cp.api<{ id: number }>('POST', '/domains/live.example/records/', {
    name: 'www',
    type: 'A',
    destination: '192.0.2.1',
    proxied: false,
    ttl: 300,
  });
  for (const [i, { dns }] of nodes.entries()) {
    await until(dns, 'www.live.example', 1, (d) => d.answer[0] === 'www.live.example 300 A 192.0.2.1');
    assert.deepEqual((await ask(dns, 'www.live.example', 1, true)).answer, ['www.live.example 300 A 192.0.2.1']);
    const after = await ask(dns, 'live.example', 6);
    assert.ok(serial(after) > serial(before[i]), `serial ${serial(before[i])} → ${serial(after)}`);
  }

  await cp.api('PUT', `/domains/live.example/records/${created.id}`, { destination: '192.0.2.2' });
  for (const { dns } of nodes)
    await until(dns, 'www.live.example', 1, (d) => d.answer[0] === 'www.live.example 300 A 192.0.2.2');

  await cp.api('DELETE', `/domains/live.example/records/${created.id}`);
  for (const { dns } of nodes) await until(dns, 'www.live.example', 1, (d) => d.rcode === 3);

  await cp.api('DELETE', '/domains/live.example');
  for (const { dns } of nodes) await until(dns, 'live.example', 6, (d) => d.rcode === 5);
});
