// Every expectation of reads.test.ts, account-reads.test.ts and fields.test.ts run again with the analytics store on a
// real ClickHouse server (test/helpers/clickhouse-server.ts), each file as a test run of its own. Apart from
// clickhouse.test.ts (the store's own tests) so that neither file comes near the runner's limit per file on a loaded
// machine.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startClickHouse } from '../../../../test/helpers/clickhouse-server.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', '..');

test(
  'the reads of reads.test.ts, account-reads.test.ts and fields.test.ts on ClickHouse',
  { timeout: 900_000 },
  async (t) => {
    const server = await startClickHouse();
    t.after(() => server.stop());

    for (const file of ['reads.test.ts', 'account-reads.test.ts', 'fields.test.ts'])
      await t.test(`${file}, every assertion, with the store on ClickHouse`, async () => {
        // A test run of its own (node's runner skips a nested run that inherits NODE_TEST_CONTEXT).
        const env: NodeJS.ProcessEnv = { ...process.env, NODE_ENV: 'test', TEST_ANALYTICS_CLICKHOUSE_URL: server.url };
        delete env.NODE_TEST_CONTEXT;
        const child = spawn(
          process.execPath,
          ['--import', 'tsx', '--test', join(ROOT, 'control-plane/src/areas/analytics', file)],
          {
            cwd: ROOT,
            env,
            stdio: ['ignore', 'pipe', 'pipe'],
          },
        );
        let out = '';
        child.stdout.on('data', (d) => (out += d));
        child.stderr.on('data', (d) => (out += d));
        const code = await new Promise<number | null>((r) => child.once('exit', r));
        assert.equal(code, 0, out.slice(-20_000));
        assert.match(out, /# fail 0/);
      });
  },
);
