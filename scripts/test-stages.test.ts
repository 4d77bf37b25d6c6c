// scripts/test-stages.mjs decides which test files CI runs a second time on a real Postgres server; a file it wrongly
// calls database-free would silently lose that stage, so: what it follows, what it treats as unknown (and so as a
// database test), and that scripts/test-stage-guard.mjs makes a misclassified file fail.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const stages = join(root, 'scripts', 'test-stages.mjs');
const MARK = 'TEST_DATABASE_URL';

function classify(base: string, files: string[]): Map<string, string> {
  const r = spawnSync(process.execPath, [stages, '--root', base, ...files], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  const out = new Map<string, string>();
  for (const line of r.stdout.trim().split('\n')) {
    const [kind, file] = line.split(' ');
    out.set(file, kind);
  }
  return out;
}

function tree(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'test-stages-'));
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, name)), { recursive: true });
    writeFileSync(join(dir, name), text);
  }
  return dir;
}

test('a file uses the database when the variable is reachable by any import it can follow', () => {
  const dir = tree({
    'package.json': JSON.stringify({ workspaces: ['pkg'] }),
    'pkg/package.json': JSON.stringify({
      name: '@x/pkg',
      exports: { './helper': './src/helper.ts', './t/*': './src/t/*.ts' },
    }),
    'pkg/src/helper.ts': `export { db } from '../../helpers/db.js';\n`,
    'pkg/src/t/plain.ts': `export const plain = 1;\n`,
    'helpers/db.ts': `// a fresh database on process.env.${MARK}\nexport const db = 1;\n`,
    'lib/a.ts': `import { db } from '../helpers/db.js';\nexport const a = db;\n`,
    'lib/x.ts': `import { y } from './y.js';\nexport const x = () => y;\n`,
    'lib/y.ts': `import { x } from './x.js';\nimport '../helpers/db.js';\nexport const y = () => x;\n`,
    'lib/pure.ts': `import { plain } from '@x/pkg/t/plain';\nexport const pure = plain;\n`,
    'lib/w.ts': `export const url = process.env.${MARK};\n`,
    'helper.ts': `import { a } from './lib/a.js';\n`,
    'direct.test.ts': `const url = process.env.${MARK};\n`,
    'indirect.test.ts': `import { test } from 'node:test';\nimport { a } from './lib/a.js';\n`,
    'cycle.test.ts': `import { x } from './lib/x.js';\n`,
    'cycle-other-end.test.ts': `import { y } from './lib/y.js';\n`,
    'workspace.test.ts': `import { db } from '@x/pkg/helper';\n`,
    'dynamic.test.ts': `const { a } = await import('./lib/a.js');\n`,
    'url.test.ts': `const u = new URL('./lib/a.ts', import.meta.url);\n`,
    'worker.test.ts': `startModuleWorker(import.meta.url, 'lib/w');\n`,
    'computed.test.ts': `const name = './lib/pure.js';\nawait import(name);\n`,
    // A script started as a process, named by a string (clickhouse-reads.test.ts runs three test files so).
    'spawned.test.ts': `for (const f of ['helper.ts']) spawn(process.execPath, [join(HERE, f)]);\n`,
    'spawned-from-root.test.ts': `spawn(process.execPath, [join(ROOT, 'lib/a.ts')]);\n`,
    'unresolved.test.ts': `import { gone } from './lib/gone.js';\n`,
    'unresolved-workspace.test.ts': `import { gone } from '@x/pkg/gone';\n`,
    'pure.test.ts':
      `import { test } from 'node:test';\nimport semver from 'semver';\nimport { pure } from './lib/pure.js';\n` +
      `const fixtures = new URL('./fixtures/', import.meta.url);\n// prose: an import (of records) is not code\n`,
  });
  try {
    const names = [
      'direct',
      'indirect',
      'cycle',
      'cycle-other-end',
      'workspace',
      'dynamic',
      'url',
      'worker',
      'computed',
      'spawned',
      'spawned-from-root',
      'unresolved',
      'unresolved-workspace',
      'pure',
    ].map((n) => `${n}.test.ts`);
    const got = classify(dir, names);
    const want = new Map(names.map((n) => [n, 'database']));
    want.set('pure.test.ts', 'no-database');
    assert.deepEqual(got, want);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('this repository: control-plane tests use the database, edge and DNS node tests do not', () => {
  const got = classify(root, [
    'test/e2e/records-api.test.ts',
    'control-plane/src/areas/account/account.test.ts',
    'control-plane/src/db/pg-prepared.test.ts',
    'control-plane/src/areas/analytics/clickhouse-reads.test.ts',
    'test/e2e/edge-waf.test.ts',
    'edge-node/src/proxy.test.ts',
    'dns-server/src/rrl.test.ts',
    'shared/src/match/path.test.ts',
  ]);
  assert.deepEqual(
    [...got],
    [
      ['test/e2e/records-api.test.ts', 'database'],
      ['control-plane/src/areas/account/account.test.ts', 'database'],
      ['control-plane/src/db/pg-prepared.test.ts', 'database'],
      // Starts reads.test.ts and two more as processes (the guard caught it before strings naming files were followed).
      ['control-plane/src/areas/analytics/clickhouse-reads.test.ts', 'database'],
      ['test/e2e/edge-waf.test.ts', 'database'],
      ['edge-node/src/proxy.test.ts', 'no-database'],
      ['dns-server/src/rrl.test.ts', 'no-database'],
      ['shared/src/match/path.test.ts', 'no-database'],
    ],
  );
});

test('the guard: a file called database-free that opens a test database fails, in either stage', () => {
  const dir = mkdtempSync(join(tmpdir(), 'test-stage-guard-'));
  try {
    const file = join(dir, 'sneaky.test.mts'); // .mts: an ES module outside the repository's package.json
    // Reaches test/helpers/database.ts by a path the classifier cannot see (a computed name).
    const helper = join(root, 'test', 'helpers', 'database.ts');
    writeFileSync(
      file,
      `const m = await import(${JSON.stringify(helper)}.slice(0));\n` +
        `console.log('url', process.env.${MARK});\n` +
        `try { const db = await m.createTestDatabase('guard'); await db.drop(); console.log('opened'); }\n` +
        `catch (e) { console.log('failed', (e as Error).message); process.exitCode = 1; }\n`,
    );
    const run = (list: string, url?: string) => {
      const { NODE_TEST_CONTEXT: _, ...env } = process.env;
      const e: Record<string, string | undefined> = { ...env, TEST_STAGE_NO_DATABASE_FILES: list };
      if (url === undefined) delete e[MARK];
      else e[MARK] = url;
      return spawnSync(
        process.execPath,
        ['--import', 'tsx', '--import', join(root, 'scripts', 'test-stage-guard.mjs'), file],
        { cwd: root, encoding: 'utf8', env: e },
      );
    };
    // Listed as database-free: the variable points at nothing, the database cannot be opened, the file fails.
    for (const url of [undefined, 'postgres://postgres@127.0.0.1:5432/postgres']) {
      const r = run(`${join(dir, 'other.test.ts')}\n${file}`, url);
      assert.equal(r.status, 1, r.stdout + r.stderr);
      assert.match(r.stdout, /url postgres:\/\/classified-database-free@127\.0\.0\.1:1\//);
      assert.match(r.stdout, /failed connect ECONNREFUSED 127\.0\.0\.1:1/);
    }
    // Not listed: left as it was (unset: PGlite, which opens).
    const r = run(join(dir, 'other.test.ts'));
    assert.equal(r.status, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /url undefined\nopened/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
