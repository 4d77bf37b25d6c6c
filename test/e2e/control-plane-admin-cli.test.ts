// The admin CLI's commands against a real database, checked through the API they govern; exit codes through the real CLI.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { acquireDataDirLock } from '../../control-plane/src/admin/data-dir-lock.js';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startTestControlPlane } from '../helpers/control-plane.js';
import { COMMANDS, UsageError } from '../../control-plane/src/admin/commands.js';
import { effectiveFeatures } from '../../control-plane/src/plans/entitlements.js';
import { domains } from '../../control-plane/src/db/schema.js';
import { eq } from 'drizzle-orm';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

test('admin CLI commands', async (t) => {
  const cp = await startTestControlPlane(t);
  const lines: string[] = [];
  const ctx = { db: cp.database.db, configLog: cp.app.configLog, out: (l: string) => lines.push(l) };
  const run = async (...argv: string[]) => {
    lines.length = 0;
    const command = COMMANDS[`${argv[0]} ${argv[1]}`];
    assert.ok(command, argv.join(' '));
    await command(ctx, argv.slice(2));
    return [...lines];
  };

  await t.test('user create', async () => {
    const [line] = await run('user', 'create', 'Ops@Example.org', '--name', 'Ops');
    assert.match(line, /^created user ops@example\.org \(id \d+\)$/);
    await assert.rejects(run('user', 'create', 'not-an-email'), { message: 'invalid email address "not-an-email"' });
    await assert.rejects(run('user', 'create'), UsageError);
  });

  await t.test('key create (read-only, 30 days), key list, key revoke', async () => {
    const [key] = await run('key', 'create', 'ops@example.org', '--read-only', '--expires', '30', '--name', 'ci');
    assert.match(key, /^svc_[A-Za-z0-9]{65}$/);
    assert.equal((await cp.call(key, 'GET', '/domains/')).statusCode, 200);
    assert.equal((await cp.call(key, 'POST', '/domains/', { name: 'ro.example.org' })).statusCode, 403);
    const list = await run('key', 'list', 'ops@example.org');
    assert.equal(list[0], 'id\tprefix\tmode\tstatus\texpires_at\tlast_used_at\tname');
    const row = list[1].split('\t');
    assert.deepEqual([row[1], row[2], row[3], row[6]], [`${key.slice(0, 8)}…`, 'read-only', 'active', 'ci']);
    assert.ok(Math.abs(Date.parse(row[4]) - (Date.now() + 30 * 86_400_000)) < 600_000, 'expires in 30 days');
    assert.notEqual(row[5], '-', 'last use recorded');
    assert.deepEqual(await run('key', 'revoke', row[0]), [`revoked key ${row[0]}`]);
    assert.equal((await cp.call(key, 'GET', '/domains/')).statusCode, 401);
    await assert.rejects(run('key', 'revoke', row[0]), { message: `no active key with id ${row[0]}` });
    await assert.rejects(run('key', 'create', 'ops@example.org', '--expires', '7'), UsageError);
    await assert.rejects(run('key', 'create', 'nobody@example.org'), { message: 'no user nobody@example.org' });
  });

  await t.test('user deactivate / activate', async () => {
    const [key] = await run('key', 'create', 'ops@example.org');
    await run('user', 'deactivate', 'ops@example.org');
    assert.deepEqual((await cp.call(key, 'GET', '/domains/')).json(), { error: 'account is inactive' });
    await run('user', 'activate', 'ops@example.org');
    assert.equal((await cp.call(key, 'GET', '/domains/')).statusCode, 200);
    await assert.rejects(run('user', 'create', 'ops@example.org'), { message: 'user ops@example.org already exists' });
  });

  await t.test('plan set, override, clear-override, show; member add and remove', async () => {
    const [key] = await run('key', 'create', 'ops@example.org');
    await cp.domain(key, 'plans.example.org');
    const [d] = await cp.database.db.select().from(domains).where(eq(domains.name, 'plans.example.org'));
    assert.equal((await effectiveFeatures(cp.database.db, d.id)).plan, 'free');
    assert.equal((await cp.call(key, 'PUT', '/domains/plans.example.org', { cache_cap_mb: 1000 })).statusCode, 403);
    assert.deepEqual(await run('plan', 'set', 'plans.example.org', 'pro'), ['plans.example.org is now on plan pro']);
    assert.equal((await cp.call(key, 'PUT', '/domains/plans.example.org', { cache_cap_mb: 1000 })).statusCode, 200);
    await run('plan', 'override', 'plans.example.org', 'override_max_records', '12345');
    await run('plan', 'override', 'plans.example.org', 'custom_ssl_enabled', 'true');
    await run('plan', 'override', 'plans.example.org', 'disabled_rule_types', '[]');
    let f = await effectiveFeatures(cp.database.db, d.id);
    assert.deepEqual([f.plan, f.max_records, f.custom_ssl_enabled, f.disabled_rule_types], ['pro', 12345, true, []]);
    await run('plan', 'clear-override', 'plans.example.org', 'max_records');
    f = await effectiveFeatures(cp.database.db, d.id);
    assert.equal(f.max_records, 1000);
    assert.equal(JSON.parse((await run('plan', 'show', 'plans.example.org')).join('\n')).max_records, 1000);
    await assert.rejects(run('plan', 'override', 'plans.example.org', 'max_records', 'lots'), {
      message: 'max_records takes a non-negative integer, got "lots"',
    });
    await assert.rejects(run('plan', 'override', 'plans.example.org', 'colour', '1'), /unknown plan field "colour"/);
    await assert.rejects(run('plan', 'set', 'plans.example.org', 'platinum'), { message: 'unknown plan "platinum"' });

    await run('user', 'create', 'member@example.org');
    const [memberKey] = await run('key', 'create', 'member@example.org');
    assert.equal((await cp.call(memberKey, 'GET', '/domains/plans.example.org')).statusCode, 404);
    assert.deepEqual(await run('member', 'add', 'plans.example.org', 'member@example.org', 'editor'), [
      'member@example.org is editor of plans.example.org',
    ]);
    assert.equal(
      (await cp.call(memberKey, 'GET', '/domains/plans.example.org')).json<{ role: string }>().role,
      'editor',
    );
    await assert.rejects(run('member', 'add', 'plans.example.org', 'member@example.org', 'owner'), UsageError);
    await run('member', 'remove', 'plans.example.org', 'member@example.org');
    assert.equal((await cp.call(memberKey, 'GET', '/domains/plans.example.org')).statusCode, 404);
  });
});

test('admin CLI process: usage errors exit 2 with the usage text', () => {
  const r = spawnSync(process.execPath, ['--import', 'tsx', 'control-plane/src/admin/cli.ts', 'user', 'explode'], {
    cwd: root,
    encoding: 'utf8',
    timeout: 60_000,
  });
  assert.equal(r.status, 2);
  assert.equal(r.stdout, '');
  assert.match(r.stderr, /^unknown command "user explode"\nusage: npm run admin -- <command>/);
});

test('admin CLI process: a PGlite DATA_DIR held without an admin socket exits 3 and says why', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'platform-cli-lock-'));
  const lock = acquireDataDirLock(dataDir, 'control-plane');
  t.after(() => {
    lock.release();
    rmSync(dataDir, { recursive: true, force: true });
  });
  const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dataDir };
  delete env.DATABASE_URL;
  const r = spawnSync(
    process.execPath,
    ['--import', 'tsx', 'control-plane/src/admin/cli.ts', 'user', 'create', 'x@example.org'],
    { cwd: root, env, encoding: 'utf8', timeout: 60_000 },
  );
  assert.equal(r.status, 3);
  assert.match(
    r.stderr,
    new RegExp(
      `^error: the PGlite database in ${dataDir} is in use by control-plane \\(pid ${process.pid}\\); with PGlite only one process may open it`,
    ),
  );
});
