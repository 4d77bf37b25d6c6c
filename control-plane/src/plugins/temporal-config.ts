// The control plane's settings for Temporal and the domain-lifecycle workflows, read by config.ts through its EnvReader.
import type { EnvReader, EnvSource } from '@platform/shared';

/** The worker's default task queue (workflows/src/task-queues.ts DOMAIN_LIFECYCLE; repeated: no runtime import across). */
export const DEFAULT_TASK_QUEUE = 'domain-lifecycle';

export interface Backoff {
  initialMs: number;
  maxMs: number;
  giveUpAfterMs: number;
}

export interface TemporalConfig {
  /** host:port of the Temporal frontend; '' disables workflows (the default under NODE_ENV=test). */
  address: string;
  namespace: string;
  /** TEMPORAL_TASK_QUEUE: the worker polls the same one; `npm start` derives it from DATA_DIR so that two
   *  instances sharing one Temporal never run each other's workflows. */
  taskQueue: string;
  /** Background delegation check of a new managed domain. */
  delegationBackoff: Backoff;
  /** Background verification check of an external domain (until its token expires). */
  verificationBackoff: Backoff;
  /** How long developer mode stays on after POST developer-mode. */
  developerModeMs: number;
  /** Manual POST check-ns: once per this interval per domain (spec Limits: once per hour). */
  checkNsIntervalMs: number;
  /** POST verify and ssl/delegation/check share: once per this interval per domain (spec Limits: once a minute). */
  delegationCheckIntervalMs: number;
  /** Outbox dispatcher: a start Temporal did not accept is tried again after this backoff (doubling). */
  startRetryBackoff: { initialMs: number; maxMs: number };
  /** Outbox dispatcher: how often it looks for due entries besides the nudges of this process's writes. */
  dispatchPollMs: number;
}

export function loadTemporalConfig(r: EnvReader, env: EnvSource): TemporalConfig {
  const s = (key: string, fallback: number) => r.int(key, fallback, 1) * 1000;
  return {
    // Set but empty disables workflows (as documented); unset takes the default.
    address:
      env.TEMPORAL_ADDRESS === '' ? '' : r.string('TEMPORAL_ADDRESS', env.NODE_ENV === 'test' ? '' : '127.0.0.1:7233'),
    namespace: r.string('TEMPORAL_NAMESPACE', 'default'),
    taskQueue: r.string('TEMPORAL_TASK_QUEUE', DEFAULT_TASK_QUEUE),
    delegationBackoff: {
      initialMs: s('DELEGATION_WATCH_FIRST_SECONDS', 60),
      maxMs: s('DELEGATION_WATCH_MAX_SECONDS', 3600),
      giveUpAfterMs: s('DELEGATION_WATCH_FOR_SECONDS', 14 * 86400),
    },
    verificationBackoff: {
      initialMs: s('VERIFICATION_WATCH_FIRST_SECONDS', 60),
      maxMs: s('VERIFICATION_WATCH_MAX_SECONDS', 3600),
      giveUpAfterMs: 0,
    },
    developerModeMs: s('DEVELOPER_MODE_SECONDS', 3 * 3600),
    checkNsIntervalMs: s('CHECK_NS_INTERVAL_SECONDS', 3600),
    delegationCheckIntervalMs: s('DELEGATION_CHECK_INTERVAL_SECONDS', 60),
    startRetryBackoff: {
      initialMs: s('WORKFLOW_START_RETRY_FIRST_SECONDS', 1),
      maxMs: s('WORKFLOW_START_RETRY_MAX_SECONDS', 60),
    },
    dispatchPollMs: r.int('WORKFLOW_DISPATCH_POLL_MS', 1000, 10, 3_600_000),
  };
}
