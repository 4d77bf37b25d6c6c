// Two instances of `npm start` on one machine: each with its own DATA_DIR and ports, the second on the first one's
// Temporal dev server; each instance's workflows run only on its own worker (a task queue per DATA_DIR).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { killLauncher, removeLauncherDir, startLauncher } from './launcher-harness.js';

/** `npm start` runs on its embedded database: the suite's Postgres round has nothing to add here. */
const ON_POSTGRES_ROUND = process.env.TEST_DATABASE_URL ? 'npm start uses PGlite; run on the PGlite round' : false;

test(
  "two launchers with their own DATA_DIR and ports, the second on the first one's Temporal: each runs only its own workflows",
  { timeout: 400_000, skip: ON_POSTGRES_ROUND },
  async (t) => {
    const first = await startLauncher({ name: 'first' });
    t.after(() => {
      killLauncher(first);
      removeLauncherDir(first);
    });
    const second = await startLauncher({
      name: 'second',
      extraEnv: { TEMPORAL_ADDRESS: `127.0.0.1:${first.ports.TEMPORAL_PORT}` },
    });
    t.after(() => {
      killLauncher(second);
      removeLauncherDir(second);
    });
    // A manual nameserver check is a workflow whose activity reports to the control plane that started it: on a
    // worker of the other instance it would find no such domain (404) or be refused its node token.
    for (const [launcher, label] of [
      [first, 'first'],
      [second, 'second'],
    ] as const) {
      for (let i = 0; i < 4; i++) {
        const domain = `${label}-${i}.launcher-pair.example.org`;
        await launcher.api('POST', '/domains/', { name: domain });
        const check = await launcher.api<{ ok?: boolean }>('POST', `/domains/${domain}/check-ns`);
        assert.equal(typeof check, 'object', `${domain}: ${JSON.stringify(check)}`);
      }
    }
    assert.doesNotMatch(first.output() + second.output(), /does not accept this worker's node token/);
  },
);
