// Config sync end to end: a control plane and DNS nodes as separate processes; writes through the HTTP API reach every
// node's LMDB store exactly; a node killed mid-stream resumes; a wrong node token is refused; random writes with node
// and control-plane restarts and log compaction end with every node equal to the database.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import WebSocket from 'ws';
import { prng } from '@platform/shared/testing/prng';
import {
  startControlPlane,
  startDnsNode,
  waitConverged,
  readControlPlaneState,
  type ControlPlaneProcess,
  type DnsNodeProcess,
} from './sync-harness.js';

let cp: ControlPlaneProcess;
const nodes: DnsNodeProcess[] = [];
after(async () => {
  for (const n of nodes) await n.stop();
  await cp?.stop();
});

type Rec = { id: number };

async function createRecord(domain: string, name: string, destination: string): Promise<Rec> {
  return cp.api<Rec>('POST', `/domains/${domain}/records/`, { name, type: 'A', destination, proxied: false, ttl: 300 });
}

test('writes through the API reach a node, two nodes converge after a burst, and a node killed mid-stream resumes', async () => {
  cp = await startControlPlane('sync-e2e');
  await cp.api('POST', '/domains/', { name: 'example.org' });
  await cp.api('POST', '/domains/', { name: 'example.net' });
  const first = await startDnsNode(cp);
  nodes.push(first);

  // (a) single writes reach the node exactly.
  const www = await createRecord('example.org', 'www', '192.0.2.1');
  await cp.api('POST', '/domains/example.org/records/', {
    name: '@',
    type: 'MX',
    destination: 'mail.example.org',
    mx_priority: 10,
    ttl: 3600,
  });
  let state = await waitConverged(cp, [first]);
  assert.ok(state['example.org']!.some((r) => r[0] === www.id && r[3] === '192.0.2.1'));

  // (b) a second node joins late; a burst of creates, updates, deletes and a batch update, spread over two domains.
  const second = await startDnsNode(cp);
  nodes.push(second);
  const ids: number[] = [];
  for (let i = 0; i < 24; i++)
    ids.push((await createRecord(i % 2 ? 'example.org' : 'example.net', `h${i}`, `198.51.100.${i + 1}`)).id);
  await Promise.all(
    ids.slice(0, 10).map((id, i) =>
      cp.api('PUT', `/domains/${i % 2 ? 'example.org' : 'example.net'}/records/${id}`, {
        destination: `203.0.113.${i + 1}`,
      }),
    ),
  );
  for (const [i, id] of ids.slice(10, 16).entries())
    await cp.api('DELETE', `/domains/${i % 2 ? 'example.org' : 'example.net'}/records/${id}`);
  const netIds = ids.filter((_, i) => i % 2 === 0 && i >= 16);
  await cp.api('POST', '/domains/example.net/records/batch-update', {
    updates: netIds.map((id) => ({ id, ttl: 600 })),
  });
  state = await waitConverged(cp, [first, second]);
  assert.equal(state['example.net']!.filter((r) => r[4] === 600).length, netIds.length);

  // (c) kill the first node while a stream of writes is flowing, keep writing, restart it: it resumes and converges.
  const writes = (async () => {
    for (let i = 0; i < 40; i++) await createRecord('example.org', `k${i}`, `192.0.2.${100 + i}`);
  })();
  // Kill as soon as the node has applied part of the stream.
  while (!first.readState()['example.org']?.some((r) => r[1] === 'k0')) await new Promise((r) => setTimeout(r, 5));
  await first.kill('SIGKILL');
  await writes;
  await cp.api('DELETE', '/domains/example.net');
  await first.restart();
  state = await waitConverged(cp, [first, second]);
  assert.deepEqual(Object.keys(state), ['example.org']);
  assert.deepEqual(first.readState(), await readControlPlaneState(cp));
});

test('the hub refuses a missing or wrong node token with 401 and accepts the right one', async () => {
  const statusOf = (headers: Record<string, string>) =>
    new Promise<number>((resolve, reject) => {
      const ws = new WebSocket(`${cp.syncUrl}/sync?from=0`, { headers });
      ws.on('unexpected-response', (_req, res) => {
        resolve(res.statusCode ?? 0);
        ws.terminate();
      });
      ws.on('open', () => {
        ws.close();
        resolve(101);
      });
      ws.on('error', (err) => {
        if (!/Unexpected server response/.test(err.message)) reject(err);
      });
    });
  assert.equal(await statusOf({}), 401);
  assert.equal(await statusOf({ authorization: 'Bearer 0000' }), 401);
  assert.equal(await statusOf({ authorization: `Bearer ${cp.nodeToken}` }), 101);
});

test('after random writes, node and control-plane restarts and compactions, every node holds exactly what the database holds', async () => {
  const plane = await startControlPlane('sync-random', { SYNC_COMPACT_AFTER_DELTAS: '3' });
  const fleet: DnsNodeProcess[] = [];
  try {
    const random = prng(20);
    const pick = <T>(xs: T[]) => xs[Math.floor(random() * xs.length)]!;
    const zones = ['random-a.example', 'random-b.example', 'random-c.example'];
    const live = new Set<string>();
    const records = new Map<string, number[]>();
    const createDomain = async (name: string) => {
      await plane.api('POST', '/domains/', { name });
      live.add(name);
      records.set(name, []);
    };
    for (const name of zones) await createDomain(name);
    fleet.push(await startDnsNode(plane), await startDnsNode(plane));
    for (let i = 0; i < 150; i++) {
      const domain = pick([...live]);
      const ids = records.get(domain)!;
      const op = random();
      if (op < 0.4 || ids.length === 0) {
        const type = random() < 0.5 ? 'A' : 'TXT';
        const destination = type === 'A' ? `192.0.2.${1 + (i % 250)}` : `v=${i}`;
        const rec = await plane.api<{ id: number }>('POST', `/domains/${domain}/records/`, {
          name: `r${i}`,
          type,
          destination,
          ttl: 300,
        });
        ids.push(rec.id);
      } else if (op < 0.6) {
        await plane.api('PUT', `/domains/${domain}/records/${pick(ids)}`, { ttl: 60 + i });
      } else if (op < 0.72) {
        const id = ids.splice(Math.floor(random() * ids.length), 1)[0]!;
        await plane.api('DELETE', `/domains/${domain}/records/${id}`);
      } else if (op < 0.82) {
        await plane.api('POST', `/domains/${domain}/records/batch-update`, {
          updates: ids.slice(0, 5).map((id) => ({ id, ttl: 900 + i })),
        });
      } else if (op < 0.87) {
        const gone = ids.splice(0, 3);
        await plane.api('POST', `/domains/${domain}/records/delete-many`, { ids: gone });
      } else if (op < 0.9 && live.size > 1) {
        await plane.api('DELETE', `/domains/${domain}`);
        live.delete(domain);
      } else if (op < 0.93) {
        const name = zones.find((z) => !live.has(z));
        if (name) await createDomain(name);
      }
      if (i % 50 === 25) {
        // A node killed mid-stream, and the control plane (its hub with it) restarted while nodes stay up.
        const node = pick(fleet);
        await node.kill('SIGKILL');
        await plane.api('POST', `/domains/${pick([...live])}/records/`, {
          name: `k${i}`,
          type: 'A',
          destination: '198.51.100.1',
        });
        await node.restart();
      } else if (i % 50 === 45) {
        await plane.restart();
      }
    }
    const want = await waitConverged(plane, fleet, 60_000);
    assert.deepEqual(Object.keys(want).sort(), [...live].sort());
    // A node that joins now catches up from the compacted log alone.
    fleet.push(await startDnsNode(plane));
    await waitConverged(plane, fleet, 60_000);
    for (const node of fleet) assert.deepEqual(node.readState(), await readControlPlaneState(plane));
  } finally {
    for (const n of fleet) await n.stop();
    await plane.stop();
  }
});
