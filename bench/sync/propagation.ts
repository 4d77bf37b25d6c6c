// Propagation benchmark: time from the API's 200 on a record write (single, and a 1000-item batch-update) to the new
// answer from a dns-server process synced through the hub. Run: node --import tsx bench/sync/propagation.ts
// Options (env): SINGLE_WRITES (default 200), BATCH_WRITES (default 30), BATCH_SIZE (default 1000).
import { performance } from 'node:perf_hooks';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { openNodeStore, type NodeStore } from '@platform/shared/node-store';
import {
  startControlPlane,
  startDnsNode,
  type ControlPlaneProcess,
  type DnsNodeProcess,
} from '../../test/e2e/sync-harness.js';
import { createDnsProbe, type DnsProbe } from './dns-probe.js';
import { POLL_LIMIT_MS, summary, waitForAnswer } from './timing.js';

const SINGLE = Number(process.env.SINGLE_WRITES ?? 200);
const BATCHES = Number(process.env.BATCH_WRITES ?? 30);
const BATCH_SIZE = Number(process.env.BATCH_SIZE ?? 1000);
const DOMAIN = 'bench.example';
const SMALL = 'small.example';

/**
 * After a write acknowledged at t0: the delay until the node's LMDB store holds a version above `before` (read from
 * this process; LMDB readers see other processes' commits) and until the DNS answer changes.
 */
async function measure(
  store: NodeStore,
  before: number,
  probe: DnsProbe,
  name: string,
  address: string,
  t0: number,
): Promise<[number, number]> {
  const end = t0 + POLL_LIMIT_MS;
  // Two independent pollers: a DNS query in flight must not delay noticing the store's commit.
  const storeSeen = (async () => {
    while (store.version <= before) {
      if (performance.now() > end) throw new Error('the node store never moved');
      await new Promise((r) => setTimeout(r, 1));
    }
    return performance.now();
  })();
  const tDns = await waitForAnswer(probe, name, address);
  return [(await storeSeen) - t0, tDns - t0];
}

const ip = (i: number, base: number) => `10.${base}.${(i >> 8) & 255}.${i & 255}`;

async function main(): Promise<void> {
  let cp: ControlPlaneProcess | undefined;
  let node: DnsNodeProcess | undefined;
  let probe: DnsProbe | undefined;
  let store: NodeStore | undefined;
  try {
    cp = await startControlPlane('bench-sync');
    await cp.api('POST', '/domains/', { name: DOMAIN });
    // A plan that allows BATCH_SIZE records (the admin CLI owns the PGlite database while the control plane is down).
    await cp.restart(() => cp!.cli('plan', 'set', DOMAIN, 'business'));
    // The zone's BATCH_SIZE records arrive in one zone-file import (one config entry).
    const zone = Array.from({ length: BATCH_SIZE }, (_, i) => `r${i}.${DOMAIN}. 300 IN A ${ip(i, 0)}`).join('\n');
    const imported = await cp.api<{ records: Array<{ id: number; name: string }> }>(
      'POST',
      `/domains/${DOMAIN}/records/import`,
      { zone },
    );
    const byName = new Map(imported.records.map((r) => [r.name, r.id]));
    const ids = Array.from({ length: BATCH_SIZE }, (_, i) => byName.get(`r${i}`)!);
    // The probe asks one name back to back from 127.0.0.1: response rate limiting would drop most of it.
    node = await startDnsNode(cp, { DNS_RRL_RATE: '0' });
    probe = createDnsProbe('127.0.0.1', node.dnsPort);
    await waitForAnswer(probe, `r${BATCH_SIZE - 1}.${DOMAIN}`, ip(BATCH_SIZE - 1, 0));

    store = openNodeStore(join(node.dataDir, 'dns-node'));

    // Single writes to a small zone (10 records): the common case.
    await cp.api('POST', '/domains/', { name: SMALL });
    const smallIds: number[] = [];
    for (let i = 0; i < 10; i++)
      smallIds.push(
        (
          await cp.api<{ id: number }>('POST', `/domains/${SMALL}/records/`, {
            name: `s${i}`,
            type: 'A',
            destination: ip(i, 0),
            ttl: 300,
            proxied: false,
          })
        ).id,
      );
    await waitForAnswer(probe, `s9.${SMALL}`, ip(9, 0));
    const small: Array<[number, number]> = [];
    for (let i = 0; i < SINGLE; i++) {
      const target = ip(i, 200);
      const before = store.version;
      await cp.api('PUT', `/domains/${SMALL}/records/${smallIds[0]}`, { destination: target });
      small.push(await measure(store, before, probe, `s0.${SMALL}`, target, performance.now()));
    }

    // Single writes: one record's destination changes; the zone holds BATCH_SIZE records, so each entry is a whole zone.
    const single: Array<[number, number]> = [];
    for (let i = 0; i < SINGLE; i++) {
      const target = ip(i, 1);
      const before = store.version;
      await cp.api('PUT', `/domains/${DOMAIN}/records/${ids[0]}`, { destination: target });
      single.push(await measure(store, before, probe, `r0.${DOMAIN}`, target, performance.now()));
    }

    // Batch writes: every record changes in one batch-update (one config entry); wait for the last record's new answer.
    const batch: Array<[number, number]> = [];
    for (let b = 0; b < BATCHES; b++) {
      const base = 2 + b;
      const before = store.version;
      await cp.api('POST', `/domains/${DOMAIN}/records/batch-update`, {
        updates: ids.map((id, i) => ({ id, destination: ip(i, base) })),
      });
      batch.push(
        await measure(
          store,
          before,
          probe,
          `r${BATCH_SIZE - 1}.${DOMAIN}`,
          ip(BATCH_SIZE - 1, base),
          performance.now(),
        ),
      );
    }

    const rows = [
      summary(
        'single write → DNS answer (zone of 10 records)',
        small.map((x) => x[1]),
      ),
      summary(
        'single write → node store applied (10 records)',
        small.map((x) => x[0]),
      ),
      summary(
        `single write → DNS answer (zone of ${BATCH_SIZE} records)`,
        single.map((x) => x[1]),
      ),
      summary(
        `single write → node store applied (${BATCH_SIZE} records)`,
        single.map((x) => x[0]),
      ),
      summary(
        `${BATCH_SIZE}-item batch-update → DNS answer`,
        batch.map((x) => x[1]),
      ),
      summary(
        `${BATCH_SIZE}-item batch-update → node store applied`,
        batch.map((x) => x[0]),
      ),
    ];
    console.table(rows);
    console.log(
      `node ${process.version}, ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}; database: ${process.env.TEST_DATABASE_URL ? 'postgres' : 'pglite'}; load average ${loadavg()
        .map((l) => l.toFixed(1))
        .join(' ')}`,
    );
    console.log('| case | n | p50 ms | p90 ms | p99 ms | max ms |\n|---|---|---|---|---|---|');
    for (const r of rows) console.log(`| ${r.case} | ${r.n} | ${r.p50_ms} | ${r.p90_ms} | ${r.p99_ms} | ${r.max_ms} |`);
  } finally {
    probe?.close();
    await store?.close();
    await node?.stop();
    await cp?.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
