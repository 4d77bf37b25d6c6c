// The Temporal worker: the only module that joins workflow code (by path, bundled) and activities.
import { fileURLToPath } from 'node:url';
import { NativeConnection, Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { createActivities, type ActivityDeps } from './activities/index.js';
import { DOMAIN_LIFECYCLE } from './task-queues.js';

export const WORKFLOWS_PATH = fileURLToPath(new URL('./workflows/index.ts', import.meta.url));

export interface WorkerOptions extends ActivityDeps {
  temporalAddress: string;
  temporalNamespace: string;
  /** Defaults to DOMAIN_LIFECYCLE; the control plane's TEMPORAL_TASK_QUEUE must name the same queue. */
  taskQueue?: string;
  /** A prebuilt bundle (tests reuse one across worker restarts); bundled from WORKFLOWS_PATH otherwise. */
  workflowBundle?: WorkflowBundleWithSourceMap;
}

export interface RunningWorker {
  worker: Worker;
  connection: NativeConnection;
}

export async function createWorker(opts: WorkerOptions): Promise<RunningWorker> {
  const connection = await NativeConnection.connect({ address: opts.temporalAddress });
  const worker = await Worker.create({
    connection,
    namespace: opts.temporalNamespace,
    taskQueue: opts.taskQueue ?? DOMAIN_LIFECYCLE,
    ...(opts.workflowBundle ? { workflowBundle: opts.workflowBundle } : { workflowsPath: WORKFLOWS_PATH }),
    activities: createActivities(opts),
  });
  return { worker, connection };
}
