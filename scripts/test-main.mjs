// The test run itself, started by scripts/run-tests.mjs as `node --import tsx --import scripts/test-stage-guard.mjs
// scripts/test-main.mjs file...` (each test file's process gets the same flags). Through node:test's run() rather
// than `node --test file...`: node 20's command line sorts the files by name, so the longest-first order that
// run-tests.mjs computes was lost (the slowest file, test/e2e/uptime-probes.test.ts, started among the last); run()
// starts them in the order given. Reporters as before: TAP, the failure summary, the durations record, all to stdout.
import { run } from 'node:test';
import { tap } from 'node:test/reporters';
import { resolve } from 'node:path';
import failureSummary from './test-failure-summary.mjs';
import testDurations from './test-durations.mjs';

const files = process.argv.slice(2).map((f) => resolve(f));
const stream = run({ files, concurrency: 2, timeout: 600_000 });
stream.setMaxListeners(20); // three reporters' listeners
let failed = false;
stream.on('test:fail', (data) => {
  // A todo test that fails does not fail the run (as with --test).
  if (!data.todo) failed = true;
});
for (const reporter of [tap, failureSummary, testDurations]) stream.compose(reporter).pipe(process.stdout);
process.on('beforeExit', () => {
  if (failed) process.exitCode = 1;
});
