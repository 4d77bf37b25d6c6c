// The control plane started as a user starts it (node --import tsx control-plane/src/main.ts): writes survive a clean
// stop and a kill -9 on the same DATA_DIR (or DATABASE_URL); the admin CLI works beside it (admin socket with PGlite).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';
import { createFastTestDatabase } from '../helpers/fast-database.js';

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

async function startControlPlane(env: Record<string, string>): Promise<{ child: ChildProcess; base: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'control-plane/src/main.ts'], {
    cwd: root,
    env: { ...process.env, ...env, API_PORT: '0', SYNC_PORT: '0', LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (c: Buffer) => {
    stderr += c.toString();
  });
  const lines = createInterface({ input: child.stdout! });
  const base = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no "listening" line within 90 s; stderr: ${stderr}`)), 90_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`control plane exited with ${code}: ${stderr}`));
    });
    lines.on('line', (line) => {
      try {
        const entry = JSON.parse(line) as { msg?: string; address?: string };
        if (entry.msg === 'control plane listening' && entry.address) {
          clearTimeout(timer);
          resolve(entry.address);
        }
      } catch {
        /* not a log line */
      }
    });
  });
  return { child, base };
}

async function stop(child: ChildProcess, signal: NodeJS.Signals): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
  const exited = once(child, 'exit');
  child.kill(signal);
  const [code] = (await exited) as [number | null];
  return code;
}

test('control plane restart loses nothing (clean stop and kill -9)', async (t) => {
  // A migrated PGlite copy saves the initdb; migrations at start are covered by every other test.
  const testDb = await createFastTestDatabase('cprestart');
  const children: ChildProcess[] = [];
  t.after(async () => {
    for (const c of children) await stop(c, 'SIGKILL');
    await testDb.drop();
  });
  const env = testDb.env;

  assert.equal(admin(env, 'user', 'create', 'restart@example.org').code, 0);
  const created = admin(env, 'key', 'create', 'restart@example.org', '--name', 'restart');
  assert.equal(created.code, 0, created.stderr);
  const key = created.stdout.trim();
  assert.match(created.stdout, /^svc_[A-Za-z0-9]{65}\n$/, 'the key alone on one line');
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };

  // 1. Start, write, stop cleanly.
  let cp = await startControlPlane(env);
  children.push(cp.child);
  let res = await fetch(`${cp.base}/domains/`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ name: 'restart.example.org' }),
  });
  assert.equal(res.status, 200);
  res = await fetch(`${cp.base}/domains/restart.example.org`, {
    method: 'PUT',
    headers,
    body: JSON.stringify({ cache_l2_ttl_days: 6 }),
  });
  assert.equal(res.status, 200);
  // The admin CLI works while the control plane runs: with PGlite through its admin socket, with Postgres directly.
  assert.equal(admin(env, 'user', 'create', 'late@example.org').code, 0);
  const late = admin(env, 'key', 'create', 'late@example.org', '--read-only');
  assert.equal(late.code, 0, late.stderr);
  assert.match(late.stdout, /^svc_[A-Za-z0-9]{65}\n$/);
  res = await fetch(`${cp.base}/domains/`, { headers: { authorization: `Bearer ${late.stdout.trim()}` } });
  assert.equal(res.status, 200);
  const missing = admin(env, 'key', 'list', 'nobody@example.org');
  assert.deepEqual([missing.code, missing.stdout, missing.stderr], [1, '', 'error: no user nobody@example.org\n']);
  assert.equal(await stop(cp.child, 'SIGTERM'), 0, 'graceful shutdown exits 0');

  // 2. Start again on the same data: the write is there; write more; kill -9.
  cp = await startControlPlane(env);
  children.push(cp.child);
  res = await fetch(`${cp.base}/domains/restart.example.org`, { headers });
  assert.equal(res.status, 200);
  assert.equal(((await res.json()) as { cache_l2_ttl_days: number }).cache_l2_ttl_days, 6);
  res = await fetch(`${cp.base}/domains/`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ name: 'second.example.org', dns_mode: 'external' }),
  });
  assert.equal(res.status, 200);
  await stop(cp.child, 'SIGKILL');

  // 3. After a kill -9 (a stale lock is taken over) everything acknowledged is still there.
  cp = await startControlPlane(env);
  children.push(cp.child);
  res = await fetch(`${cp.base}/domains/`, { headers });
  assert.equal(res.status, 200);
  const names = ((await res.json()) as Array<{ name: string; state: string }>).map((d) => `${d.name}:${d.state}`);
  assert.deepEqual(names, ['restart.example.org:pending', 'second.example.org:unverified']);
  assert.equal(await stop(cp.child, 'SIGTERM'), 0);
});
