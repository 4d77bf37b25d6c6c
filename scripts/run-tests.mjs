// Runs every *.test.ts in the project with node's test runner (tsx for TypeScript).
// Usage: node scripts/run-tests.mjs [--database-only] [path-filter...]
// --database-only: only the files that use the test database (scripts/test-stages.mjs); CI's Postgres stage.
import { spawnSync } from 'node:child_process';
import { join, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { readDurations } from './test-durations.mjs';
import { classify, findTestFiles, NO_DATABASE_FILES_ENV } from './test-stages.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
function main() {
  const args = process.argv.slice(2);
  const databaseOnly = args.includes('--database-only');
  const unknown = args.filter((a) => a.startsWith('--') && a !== '--database-only');
  if (unknown.length > 0) {
    console.error(`unknown option ${unknown.join(' ')}`);
    process.exit(2);
  }
  const filters = args.filter((a) => !a.startsWith('--'));
  const matched = findTestFiles().filter((f) => filters.length === 0 || filters.some((p) => f.includes(p)));
  const stages = classify(matched);
  const noDatabase = matched.filter((f) => !stages.get(f).db);
  // Longest first (seconds from the last run's test-artifacts/test-durations.json, else test/durations-seed.json), so
  // the slots finish together; files never timed go last, in name order.
  const durations = { ...readDurations(join(root, 'test', 'durations-seed.json')), ...readDurations() };
  const files = matched
    .filter((f) => !databaseOnly || stages.get(f).db)
    .sort((a, b) => (durations[b] ?? 0) - (durations[a] ?? 0));
  if (databaseOnly)
    console.log(
      `# --database-only: ${files.length} of ${matched.length} test files use the test database; the other ` +
        `${noDatabase.length} run only in the PGlite stage (scripts/test-stages.mjs): ${noDatabase.join(' ')}`,
    );
  if (files.length === 0) {
    console.error('no test files matched');
    process.exit(1);
  }
  const r = spawnSync(
    process.execPath,
    [
      '--import',
      'tsx',
      // Sets TEST_DATABASE_URL to a server that does not exist in the files classified database-free, so one that
      // does reach a database fails here rather than being left out of the Postgres stage (scripts/test-stages.mjs).
      '--import',
      join(root, 'scripts', 'test-stage-guard.mjs'),
      // node:test's run() at concurrency 2, a 600 s limit per test, in this order (scripts/test-main.mjs).
      join(root, 'scripts', 'test-main.mjs'),
      ...files,
    ],
    {
      cwd: root,
      stdio: 'inherit',
      env: {
        ...process.env,
        NODE_ENV: 'test',
        [NO_DATABASE_FILES_ENV]: noDatabase.map((f) => resolve(root, f)).join('\n'),
      },
    },
  );
  process.exit(r.status ?? 1);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
