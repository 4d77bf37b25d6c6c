// Issue 13 item 3: how far over a rate_limit rule's limit a client gets through an edge node running several worker
// processes (EDGE_WORKERS), whose workers exchange their counts through the primary every 100 ms
// (edge-node/src/rules/README.md "rate_limit"; before that exchange each worker counted on its own).
// For each worker count an edge node (edge-node/src/main.ts, a child process, the cluster primary plus its workers)
// serves one domain with one rule (`requests` LIMIT per 60 s, key ip, block 60 s) in front of a stub origin on
// 127.0.0.1. One client address sends REQUESTS requests, each on a new connection (the kernel's SO_REUSEPORT hash
// spreads connections over the workers), another address sends REQUESTS on one keep-alive connection (one worker).
// It prints how many were answered 200 (let through) and 429. Bounded: REQUESTS per client, loopback only.
// Then, across nodes (docs/decisions.md: each node counts alone, with the full limit): NODES separate edge node
// processes (one worker each, own stores, the same snapshot) and one client address sending REQUESTS requests in
// turn to each node, as a client that a load balancer spreads over every node would.
// Usage: node --import tsx bench/edge-node/rate-limit-workers.ts
// Env: WORKERS (1,2,4: comma-separated worker counts), NODES (2: 0 skips it), LIMIT (20), REQUESTS (200).
import { createServer, type Server } from 'node:http';
import { Pool } from 'undici';
import { proxiedRecord, rule, send, snapshot } from '../../edge-node/src/testing/harness.js';
import { startEdgeNodeProcess } from '../../test/e2e/edge-harness.js';

const num = (name: string, dflt: number): number => {
  const v = Number(process.env[name] ?? dflt);
  if (!Number.isInteger(v) || v <= 0 || v > 100_000) throw new Error(`${name} must be an integer in 1..100000`);
  return v;
};
const LIMIT = num('LIMIT', 20);
const REQUESTS = num('REQUESTS', 200);
const WORKERS = (process.env.WORKERS ?? '1,2,4').split(',').map((w) => {
  const n = Number(w);
  if (!Number.isInteger(n) || n < 1 || n > 64) throw new Error('WORKERS: worker counts 1..64, comma-separated');
  return n;
});
const NODES = process.env.NODES === '0' ? 0 : num('NODES', 2);
if (NODES > 8) throw new Error('NODES: at most 8');
const DOMAIN = 'limits.bench.example.org';
const HOST = `www.${DOMAIN}`;

const origin: Server = createServer((_req, res) => res.end('origin\n'));
await new Promise<void>((r) => origin.listen(0, '127.0.0.1', r));
const originPort = (origin.address() as { port: number }).port;

interface Row {
  workers: number;
  fresh: { ok: number; limited: number };
  keepAlive: { ok: number; limited: number };
}
const rows: Row[] = [];
const limitedSnapshot = () =>
  snapshot(DOMAIN, {
    records: [proxiedRecord('www', originPort)],
    rules: [rule('rate_limit', { requests: LIMIT, period_s: 60, block_s: 60, key: 'ip' })],
  });
let acrossNodes: { nodes: number; ok: number; limited: number } | null = null;
try {
  for (const workers of WORKERS) {
    const edge = await startEdgeNodeProcess(null, { EDGE_WORKERS: String(workers), EDGE_HTTPS_PORT: '-1' }, [
      limitedSnapshot(),
    ]);
    try {
      // Every worker must have compiled the domain before counting starts (the first answer proves only one).
      const fresh = { ok: 0, limited: 0 };
      for (let i = 0; i < REQUESTS; i++) {
        const res = await send(edge.httpPort, HOST, `/r/${i}`, { localAddress: '127.0.0.11' });
        if (res.status === 200) fresh.ok++;
        else if (res.status === 429) fresh.limited++;
        else throw new Error(`unexpected status ${res.status}`);
      }
      const keepAlive = { ok: 0, limited: 0 };
      const pool = new Pool(`http://127.0.0.1:${edge.httpPort}`, { connections: 1, localAddress: '127.0.0.12' });
      try {
        for (let i = 0; i < REQUESTS; i++) {
          const res = await pool.request({ path: `/k/${i}`, method: 'GET', headers: { host: HOST } });
          await res.body.dump();
          if (res.statusCode === 200) keepAlive.ok++;
          else if (res.statusCode === 429) keepAlive.limited++;
          else throw new Error(`unexpected status ${res.statusCode}`);
        }
      } finally {
        await pool.close();
      }
      rows.push({ workers, fresh, keepAlive });
      console.log(
        `workers ${workers}: limit ${LIMIT}, ${REQUESTS} requests each; new connection per request: ${fresh.ok} passed ` +
          `(${(fresh.ok / LIMIT).toFixed(2)}x the limit), ${fresh.limited} got 429; one keep-alive connection: ` +
          `${keepAlive.ok} passed (${(keepAlive.ok / LIMIT).toFixed(2)}x), ${keepAlive.limited} got 429`,
      );
    } finally {
      await edge.stop();
    }
  }
  if (NODES > 0) {
    const nodes = [];
    try {
      for (let i = 0; i < NODES; i++) {
        nodes.push(await startEdgeNodeProcess(null, { EDGE_WORKERS: '1', EDGE_HTTPS_PORT: '-1' }, [limitedSnapshot()]));
      }
      const spread = { nodes: NODES, ok: 0, limited: 0 };
      for (let i = 0; i < REQUESTS; i++) {
        const node = nodes[i % NODES]!;
        const res = await send(node.httpPort, HOST, `/n/${i}`, { localAddress: '127.0.0.13' });
        if (res.status === 200) spread.ok++;
        else if (res.status === 429) spread.limited++;
        else throw new Error(`unexpected status ${res.status}`);
      }
      acrossNodes = spread;
      console.log(
        `${NODES} nodes of 1 worker, one client in turn to each: ${spread.ok} passed ` +
          `(${(spread.ok / LIMIT).toFixed(2)}x the limit), ${spread.limited} got 429`,
      );
    } finally {
      await Promise.all(nodes.map((n) => n.stop()));
    }
  }
} finally {
  origin.close();
}
console.log(JSON.stringify({ limit: LIMIT, requests: REQUESTS, rows, acrossNodes }));
