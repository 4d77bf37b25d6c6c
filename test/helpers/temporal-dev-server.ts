// The Temporal dev server for tests, started through the SDK's TestWorkflowEnvironment. On a loaded machine the
// server now and then answers after the SDK's connect deadline ("Failed to connect before the deadline", or "Failed
// to connect to Temporal server" after 20 s): start it again, up to three times.
import { TestWorkflowEnvironment } from '@temporalio/testing';
// @ts-expect-error -- setup.mjs is plain JavaScript without type declarations
import { temporalCliPath } from '../../scripts/setup.mjs';

const SLOW_START = /Failed to connect (before the deadline|to Temporal server)/;

export async function startTemporalDevServer(port?: number): Promise<TestWorkflowEnvironment> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await TestWorkflowEnvironment.createLocal({
        server: {
          executable: { type: 'existing-path', path: temporalCliPath() as string },
          ip: '127.0.0.1',
          ...(port ? { port } : {}),
          log: { format: 'pretty', level: 'error' },
        },
      });
    } catch (err) {
      if (attempt >= 3 || !SLOW_START.test(String(err))) throw err;
    }
  }
}
