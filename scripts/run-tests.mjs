// Runs every *.test.ts in the project with node's test runner (tsx for TypeScript).
// Usage: node scripts/run-tests.mjs [path-filter...]
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join, relative, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { readDurations } from './test-durations.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const skip = new Set(['node_modules', 'data', '.git', '.tmp', 'bench']);

function find(dir, out) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (skip.has(entry.name)) continue;
    const full = join(dir, entry.name);
    if (entry.isDirectory()) find(full, out);
    else if (entry.name.endsWith('.test.ts')) out.push(relative(root, full));
  }
  return out;
}

const filters = process.argv.slice(2);
// Longest first (seconds from the last run's test-artifacts/test-durations.json, else test/durations-seed.json), so
// the slots finish together; files never timed go last, in name order.
const durations = { ...readDurations(join(root, 'test', 'durations-seed.json')), ...readDurations() };
const files = find(root, [])
  .sort()
  .filter((f) => filters.length === 0 || filters.some((p) => f.includes(p)))
  .sort((a, b) => (durations[b] ?? 0) - (durations[a] ?? 0));
if (files.length === 0) {
  console.error('no test files matched');
  process.exit(1);
}
const r = spawnSync(
  process.execPath,
  [
    '--import',
    'tsx',
    '--test',
    '--test-concurrency=2',
    '--test-timeout=600000',
    '--test-reporter=tap',
    '--test-reporter-destination=stdout',
    `--test-reporter=${join(root, 'scripts', 'test-failure-summary.mjs')}`,
    '--test-reporter-destination=stdout',
    `--test-reporter=${join(root, 'scripts', 'test-durations.mjs')}`,
    '--test-reporter-destination=stdout',
    ...files,
  ],
  { cwd: root, stdio: 'inherit', env: { ...process.env, NODE_ENV: 'test' } },
);
process.exit(r.status ?? 1);
