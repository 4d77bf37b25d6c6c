// scripts/test-durations.mjs records each file's own wall time, not the span between the first and last of its events
// that reached the reporter: node's runner hands a reporter the tests of each file only after the files started before
// it have been reported, so that span counts the files ahead of it (stop 34's record had dozens of files at ~1,450 s).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const reporter = join(root, 'scripts', 'test-durations.mjs');

test('three files at concurrency 2: each file is recorded with its own time', () => {
  const dir = mkdtempSync(join(tmpdir(), 'test-durations-'));
  try {
    const sleep = 'const sleep = (ms) => new Promise((r) => setTimeout(r, ms));';
    const files = {
      // 4 s in two tests: runs beside b and then c, and is reported first.
      'a.test.mjs': `import { test } from 'node:test'; ${sleep}
        test('a1', () => sleep(2500)); test('a2', () => sleep(1500));`,
      // 1.2 s of top-level work before its one test: counts in the file's time, in no test's.
      'b.test.mjs': `import { describe, it } from 'node:test'; ${sleep}
        await sleep(1200); describe('b', () => { it('b1', () => sleep(300)); });`,
      // Starts when b ends and is done long before a: its events reach the reporter only after a's.
      'c.test.mjs': `import { test } from 'node:test'; ${sleep} test('c1', () => sleep(200));`,
    };
    for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
    const out = join(dir, 'durations.json');
    // NODE_TEST_CONTEXT (set in this file's process) would make the inner runner report to ours instead.
    const { NODE_TEST_CONTEXT: _, ...env } = process.env;
    const r = spawnSync(
      process.execPath,
      [
        '--test',
        '--test-concurrency=2',
        `--test-reporter=${reporter}`,
        '--test-reporter-destination=stdout',
        ...Object.keys(files).map((f) => join(dir, f)),
      ],
      { cwd: dir, encoding: 'utf8', env: { ...env, TEST_DURATIONS_FILE: out } },
    );
    assert.equal(r.status, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /# durations of 3 test files in /);
    const recorded = JSON.parse(readFileSync(out, 'utf8'));
    const seconds = (name: string) => recorded[relative(root, join(dir, name))];
    assert.ok(seconds('a.test.mjs') >= 4, JSON.stringify(recorded));
    // b's whole time (1.5 s of sleeps and its process's start), not the ~4 s until the reporter saw its tests.
    assert.ok(seconds('b.test.mjs') >= 1.5 && seconds('b.test.mjs') < 3.5, JSON.stringify(recorded));
    // c: 0.2 s and a process's start; its events arrive ~2.5 s after it was started.
    assert.ok(seconds('c.test.mjs') < 2.2, JSON.stringify(recorded));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
