// Issue 15 item 1, must show: a stream of request-log batches from the edge's own shipper to a control plane started as
// a user starts it, killed (kill -9) and restarted in the middle of the stream; afterwards every request is counted
// exactly once in request_logs, the analytics store (DuckDB), the uptime minute counts and the attack minutes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';
import { eq, sql } from 'drizzle-orm';
import { parsePeerAddress } from '@platform/shared/match';
import { ensureNodeToken } from '@platform/shared/node-token';
import { createFastTestDatabase } from '../helpers/fast-database.js';
import { freePort } from '../helpers/free-port.js';
import { openDatabase } from '../../control-plane/src/db/index.js';
import { attackMinutes, domains, requestLogs, uptimeMinuteCounts } from '../../control-plane/src/db/schema.js';
import { openDuckDbStore } from '../../control-plane/src/areas/analytics/duckdb-store.js';
import { RequestContext } from '../../edge-node/src/context.js';
import { RequestLogBuffer } from '../../edge-node/src/log/buffer.js';
import { startLogShipper } from '../../edge-node/src/log/shipper.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

function admin(env: Record<string, string>, ...args: string[]) {
  const r = spawnSync(process.execPath, ['--import', 'tsx', 'control-plane/src/admin/cli.ts', ...args], {
    cwd: root,
    env: { ...process.env, ...env },
    encoding: 'utf8',
    timeout: 120_000,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

async function startControlPlane(env: Record<string, string>): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'control-plane/src/main.ts'], {
    cwd: root,
    env: { ...process.env, ...env, SYNC_PORT: '0', LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (c: Buffer) => {
    stderr += c.toString();
  });
  const lines = createInterface({ input: child.stdout! });
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no "listening" line within 120 s; stderr: ${stderr}`)), 120_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`control plane exited with ${code}: ${stderr}`));
    });
    lines.on('line', (line) => {
      try {
        if ((JSON.parse(line) as { msg?: string }).msg === 'control plane listening') {
          clearTimeout(timer);
          resolve();
        }
      } catch {
        /* not a log line */
      }
    });
  });
  return child;
}

async function stop(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill(signal);
  await exited;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('a control plane killed and restarted in the middle of a stream of batches counts every request once', async (t) => {
  const testDb = await createFastTestDatabase('rlbatches');
  const children: ChildProcess[] = [];
  t.after(async () => {
    for (const c of children) await stop(c, 'SIGKILL');
    await testDb.drop();
  });
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const env = { ...testDb.env, API_PORT: String(port) };
  const dataDir = testDb.env.DATA_DIR;
  const token = ensureNodeToken(dataDir, undefined);

  assert.equal(admin(env, 'user', 'create', 'batches@example.org').code, 0);
  const created = admin(env, 'key', 'create', 'batches@example.org', '--name', 'batches');
  assert.equal(created.code, 0, created.stderr);
  const headers = { authorization: `Bearer ${created.stdout.trim()}`, 'content-type': 'application/json' };

  let cp = await startControlPlane(env);
  children.push(cp);
  const domain = 'batches.example.org';
  let res = await fetch(`${base}/domains/`, { method: 'POST', headers, body: JSON.stringify({ name: domain }) });
  assert.equal(res.status, 200, await res.text());
  // A monitored proxied record: the uptime detector keeps minute counts of www.<domain>.
  res = await fetch(`${base}/domains/${domain}/records/`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ name: 'www', type: 'A', destination: '192.0.2.10', proxied: true, monitor: true }),
  });
  assert.equal(res.status, 200, await res.text());

  // The edge's own buffer and shipper; small batches so that the stream is many of them.
  const buffer = new RequestLogBuffer(100_000, { maxBatches: 10_000, maxBytes: 256 * 1024 * 1024 });
  const shipper = startLogShipper(buffer, { controlPlaneUrl: base, logFlushMs: 20, dataDir, nodeToken: token });
  t.after(() => shipper.stop().catch(() => undefined));
  let sent = 0;
  const request = () => {
    const ctx = new RequestContext({
      method: 'GET',
      host: `www.${domain}`,
      path: `/p/${sent}`,
      query: '',
      headers: [],
      peer: parsePeerAddress(`192.0.2.${1 + (sent % 200)}`),
      scheme: 'https',
      startedAt: performance.now(),
    });
    ctx.status = sent % 10 === 0 ? 503 : 200;
    ctx.upstreamMs = 1;
    ctx.bytes = 100;
    buffer.add(ctx);
    sent++;
  };
  const acknowledged = async () => {
    // Sends everything cut so far; true when the outbox is empty.
    await shipper.flush().catch(() => undefined);
    return buffer.outbox.length === 0;
  };

  // Part one: 30 rounds of 20 requests, shipped as they come.
  for (let round = 0; round < 30; round++) {
    for (let i = 0; i < 20; i++) request();
    await sleep(15);
  }
  // kill -9 while batches are on their way: some answers are lost after the commit, some batches never arrive.
  const inFlight = shipper.flush().catch(() => undefined);
  for (let i = 0; i < 20; i++) request();
  await sleep(5);
  // The batches on their way or waiting when it dies: below, each is also sent again as if its answer had been lost.
  const unanswered = buffer.outbox.map((b) => b.body);
  await stop(cp, 'SIGKILL');
  await inFlight;
  // While it is down: more requests, kept at the node.
  for (let round = 0; round < 20; round++) {
    for (let i = 0; i < 20; i++) request();
    await shipper.flush().catch(() => undefined);
  }
  assert.ok(buffer.outbox.length > 0, 'batches wait for the control plane');
  assert.equal(buffer.dropped, 0);

  cp = await startControlPlane(env);
  children.push(cp);
  for (let round = 0; round < 20; round++) {
    for (let i = 0; i < 20; i++) request();
    await sleep(15);
  }
  for (let i = 0; i < 100 && !(await acknowledged()); i++) await sleep(200);
  assert.equal(buffer.outbox.length, 0, 'every batch acknowledged');
  assert.equal(buffer.dropped, 0, 'nothing dropped');
  await shipper.stop();
  assert.ok(unanswered.length > 0);
  for (const body of unanswered) {
    const again = await fetch(`${base}/internal/request-logs`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/x-msgpack' },
      body,
    });
    assert.equal(again.status, 200);
    assert.equal(((await again.json()) as { duplicate: boolean }).duplicate, true, 'acknowledged, not counted');
  }
  await stop(cp, 'SIGTERM');

  // Every request once: request_logs, uptime minute counts, attack minutes (Postgres) and the analytics store.
  const database = await openDatabase({ dataDir, databaseUrl: testDb.env.DATABASE_URL });
  try {
    const db = database.db;
    const [d] = await db.select().from(domains).where(eq(domains.name, domain));
    const [logs] = await db
      .select({ n: sql<number>`count(*)::int`, paths: sql<number>`count(DISTINCT ${requestLogs.path})::int` })
      .from(requestLogs)
      .where(eq(requestLogs.host, `www.${domain}`));
    assert.deepEqual(logs, { n: sent, paths: sent }, 'request_logs: each request once');
    const [uptime] = await db
      .select({
        total: sql<number>`coalesce(sum(${uptimeMinuteCounts.total}), 0)::int`,
        errors: sql<number>`coalesce(sum(${uptimeMinuteCounts.errors}), 0)::int`,
      })
      .from(uptimeMinuteCounts)
      .where(eq(uptimeMinuteCounts.domainId, d.id));
    assert.deepEqual(uptime, { total: sent, errors: Math.ceil(sent / 10) }, 'uptime minute counts');
    const [attacks] = await db
      .select({ requests: sql<number>`coalesce(sum(${attackMinutes.requests}), 0)::int` })
      .from(attackMinutes)
      .where(eq(attackMinutes.domainId, d.id));
    assert.equal(attacks.requests, sent, 'attack minutes');
    const store = openDuckDbStore({ dir: dataDir, memoryLimitMb: 128, threads: 1 });
    try {
      assert.equal(await store.countRows(d.id), sent, 'analytics store');
    } finally {
      await store.close();
    }
  } finally {
    await database.close();
  }
  t.diagnostic(`${sent} requests, control plane killed once, ${unanswered.length} batches sent again after it`);
});
