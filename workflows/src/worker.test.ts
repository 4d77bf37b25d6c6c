// Workflow logic against a real Temporal dev server with mocked activities (typed as the real ones): the delegation
// watch's backoff, the verification expiry, and developer mode's re-arm and stop signals. Durations are arguments.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execFileSync } from 'node:child_process';
import protos from '@temporalio/proto';

const { temporal } = protos;
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { bundleWorkflowCode, Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { ApplicationFailure } from '@temporalio/activity';
// @ts-expect-error -- setup.mjs is plain JavaScript without type declarations
import { temporalCliPath } from '../../scripts/setup.mjs';
import type { Activities } from './activities/index.js';
import type { AcmeAttemptReport, NsCheckResult } from './types.js';
import { renewAt } from './workflows/manage-certificates.js';
import { WORKFLOWS_PATH } from './worker.js';
import { startTemporalDevServer } from '../../test/helpers/temporal-dev-server.js';

/** Recorded histories (RECORD_HISTORIES=1 rewrites them); every one must replay on the current workflow code. */
const HISTORIES = fileURLToPath(new URL('../../test/fixtures/histories/', import.meta.url));

async function keepHistory(workflowId: string, file: string): Promise<void> {
  if (!process.env.RECORD_HISTORIES) return;
  mkdirSync(HISTORIES, { recursive: true });
  // The CLI writes the JSON history format that replay reads (historyToJSON trips over duplicate protobufjs copies).
  const json = execFileSync(
    temporalCliPath() as string,
    ['workflow', 'show', '--workflow-id', workflowId, '--address', env.address, '--output', 'json'],
    { encoding: 'utf8' },
  );
  writeFileSync(join(HISTORIES, file), json);
}

/**
 * The CLI writes proto3 JSON; protobufjs' fromObject takes it except for the well-known Timestamp ("…Z") and Duration
 * ("1.5s") strings, converted here. (historyFromJSON would do it all, but trips over duplicate protobufjs copies.)
 */
function wellKnownTypes(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(wellKnownTypes);
  if (value && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, wellKnownTypes(v)]));
  if (typeof value !== 'string') return value;
  const duration = /^(\d+)(?:\.(\d{1,9}))?s$/.exec(value);
  if (duration) return { seconds: duration[1], nanos: Number((duration[2] ?? '').padEnd(9, '0')) };
  if (/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/.test(value)) {
    const frac = /\.(\d+)Z$/.exec(value)?.[1] ?? '';
    return { seconds: String(Math.floor(Date.parse(value) / 1000)), nanos: Number(frac.slice(0, 9).padEnd(9, '0')) };
  }
  return value;
}

let env: TestWorkflowEnvironment;
let bundle: WorkflowBundleWithSourceMap;
let n = 0;

before(async () => {
  [env, bundle] = await Promise.all([
    startTemporalDevServer(),
    bundleWorkflowCode({
      workflowsPath: WORKFLOWS_PATH,
      logger: { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} } as never,
    }),
  ]);
});
after(async () => {
  await env?.teardown();
});

/** Runs `fn` with a worker whose activities are `mocks` on a fresh task queue. */
async function withWorker<T>(mocks: Partial<Activities>, fn: (taskQueue: string) => Promise<T>): Promise<T> {
  const taskQueue = `test-${process.pid}-${++n}`;
  const worker = await Worker.create({
    connection: env.nativeConnection,
    taskQueue,
    workflowBundle: bundle,
    activities: mocks,
  });
  return worker.runUntil(fn(taskQueue));
}

const report = (state: string): NsCheckResult => ({
  ok: state === 'active',
  state,
  nameservers: [],
  expected: [],
  matched_set: null,
  checked_at: '',
});

test('watchDelegation checks at once, then backs off until the domain is no longer pending', async () => {
  const states = ['pending', 'pending', 'active'];
  const calls: number[] = [];
  const result = await withWorker(
    {
      lookupNameservers: async () => [{ resolver: 'r', values: [] }],
      reportDelegation: async () => {
        calls.push(Date.now());
        return report(states.shift()!);
      },
    },
    (taskQueue) =>
      env.client.workflow.execute('watchDelegation', {
        taskQueue,
        workflowId: 'domain-delegation:a.example.org',
        args: [{ domain: 'a.example.org', backoff: { initialMs: 200, maxMs: 400, giveUpAfterMs: 60_000 } }],
      }),
  );
  assert.equal(result, 'active');
  assert.equal(calls.length, 3);
  await keepHistory('domain-delegation:a.example.org', 'watch-delegation.json');
});

test("deliverUptimeWebhook sleeps the retry delays its worker's attempts carry; the third failure is final", async () => {
  const attempts: number[] = [];
  const reports: { final: boolean; keys: string[] }[] = [];
  const result = await withWorker(
    {
      sendUptimeWebhook: async (_id, attempt) => {
        attempts.push(attempt);
        return {
          attempt,
          started_at: new Date().toISOString(),
          status_code: 500,
          duration_ms: 1,
          error: 'answered 500',
          outcome: 'failure',
          retryDelaysMs: [150, 300],
        };
      },
      recordUptimeWebhookAttempt: async (_id, a) => {
        reports.push({ final: a.final, keys: Object.keys(a) });
      },
    },
    (taskQueue) =>
      env.client.workflow.execute('deliverUptimeWebhook', {
        taskQueue,
        workflowId: 'uptime-webhook:1',
        args: [{ deliveryId: 1 }],
      }),
  );
  assert.equal(result, 'failed');
  assert.deepEqual(attempts, [1, 2, 3]);
  assert.deepEqual(
    reports.map((r) => r.final),
    [false, false, true],
  );
  assert.ok(
    reports.every((r) => !r.keys.includes('retryDelaysMs')),
    'the schedule is not reported to the deliveries log',
  );
  const { events } = await env.client.workflow.getHandle('uptime-webhook:1').fetchHistory();
  const timers = (events ?? []).flatMap((e) => {
    const d = e.timerStartedEventAttributes?.startToFireTimeout;
    return d ? [Number(d.seconds ?? 0) * 1000 + (d.nanos ?? 0) / 1e6] : [];
  });
  assert.deepEqual(timers, [150, 300]);
});

test('watchDelegation gives up after its window and ends when the domain is deleted', async () => {
  const gaveUp = await withWorker(
    {
      lookupNameservers: async () => [],
      reportDelegation: async () => report('pending'),
    },
    (taskQueue) =>
      env.client.workflow.execute('watchDelegation', {
        taskQueue,
        workflowId: 'domain-delegation:b.example.org',
        args: [{ domain: 'b.example.org', backoff: { initialMs: 100, maxMs: 100, giveUpAfterMs: 350 } }],
      }),
  );
  assert.equal(gaveUp, 'gave-up');
  const deleted = await withWorker(
    { lookupNameservers: async () => [], reportDelegation: async () => null },
    (taskQueue) =>
      env.client.workflow.execute('watchDelegation', {
        taskQueue,
        workflowId: 'domain-delegation:c.example.org',
        args: [{ domain: 'c.example.org', backoff: { initialMs: 100, maxMs: 100, giveUpAfterMs: 10_000 } }],
      }),
  );
  assert.equal(deleted, 'deleted');
});

test('awaitVerification marks the token expired when nothing is found in time', async () => {
  const expired: string[] = [];
  const result = await withWorker(
    {
      lookupVerification: async () => ({ found: null, seen: 'nothing' }),
      expireVerification: async (_d: string, token: string) => {
        expired.push(token);
        return { state: 'unverified', verification_state: 'failed' };
      },
    },
    (taskQueue) =>
      env.client.workflow.execute('awaitVerification', {
        taskQueue,
        workflowId: 'domain-verification:d.example.org',
        args: [
          {
            domain: 'd.example.org',
            verification: { name: '_v.d.example.org', type: 'TXT', value: 'tok' },
            sslDelegation: null,
            expiresAtMs: Date.now() + 1500,
            backoff: { initialMs: 300, maxMs: 300, giveUpAfterMs: 0 },
          },
        ],
      }),
  );
  assert.equal(result, 'expired:failed');
  assert.deepEqual(expired, ['tok']);
  await keepHistory('domain-verification:d.example.org', 'await-verification.json');
});

test('expireDeveloperMode: a re-arm moves the expiry; a stop ends it without switching anything', async () => {
  const ended: number[] = [];
  const mocks = {
    endDeveloperMode: async (_d: string, ms: number) => {
      ended.push(ms);
      return { enabled: false, expires_at: null };
    },
  };
  await withWorker(mocks, async (taskQueue) => {
    const first = Date.now() + 1000;
    const handle = await env.client.workflow.start('expireDeveloperMode', {
      taskQueue,
      workflowId: 'developer-mode:e.example.org',
      args: [{ domain: 'e.example.org', expiresAtMs: first }],
    });
    const later = Date.now() + 2000;
    await handle.signal('extendDeveloperMode', later);
    assert.equal(await handle.result(), 'off');
    assert.deepEqual(ended, [later]);
    await keepHistory('developer-mode:e.example.org', 'expire-developer-mode.json');

    const stopped = await env.client.workflow.start('expireDeveloperMode', {
      taskQueue,
      workflowId: 'developer-mode:f.example.org',
      args: [{ domain: 'f.example.org', expiresAtMs: Date.now() + 60_000 }],
    });
    await stopped.signal('stopDeveloperMode');
    assert.equal(await stopped.result(), 'stopped');
    assert.equal(ended.length, 1);
  });
});

test('subscriptionLifecycle: sleeps to the next moment named, a signal wakes it, ends when nothing is due', async () => {
  const calls: number[] = [];
  let reply = 0;
  const mocks = {
    advanceSubscription: async (id: number) => {
      if (id === 8) return null; // the subscription no longer exists
      calls.push(id);
      reply++;
      if (reply === 1) return { status: 'active', next_at_ms: Date.now() + 600_000 }; // woken by the signal
      if (reply === 2) return { status: 'grace', next_at_ms: Date.now() + 300 }; // its timer
      return { status: 'expired', next_at_ms: null };
    },
  };
  await withWorker(mocks, async (taskQueue) => {
    const handle = await env.client.workflow.start('subscriptionLifecycle', {
      taskQueue,
      workflowId: 'subscription:7',
      args: [{ subscriptionId: 7 }],
    });
    while (calls.length === 0) await new Promise((r) => setTimeout(r, 50));
    await handle.signal('subscriptionChanged');
    assert.equal(await handle.result(), 'expired');
    assert.deepEqual(calls, [7, 7, 7]);
    const gone = await env.client.workflow.start('subscriptionLifecycle', {
      taskQueue,
      workflowId: 'subscription:8',
      args: [{ subscriptionId: 8 }],
    });
    assert.equal(await gone.result(), 'gone');
  });
});

test('renewAt: 30 days before expiry, or two thirds of the lifetime when that is later', () => {
  const day = 86_400_000;
  assert.equal(renewAt(0, 90 * day, 30 * day), 60 * day);
  assert.equal(renewAt(0, 365 * day, 30 * day), 335 * day);
  assert.equal(renewAt(0, 6 * day, 30 * day), 4 * day);
});

test('manageCertificates: a rate-limited order is reported and retried once the limit lifts, then renewed on its timer', async () => {
  const hostnames = ['m.example.org', '*.m.example.org'];
  const rateLimitedUntil = Date.now() + 1500;
  let cert: { notBeforeMs: number; notAfterMs: number } | null = null;
  let orders = 0;
  let issued = 0;
  let served = 0;
  const reports: AcmeAttemptReport[] = [];
  const published: string[] = [];
  const withdrawn: string[] = [];
  const challenge = {
    identifier: '*.m.example.org',
    name: '_acme-challenge.m.example.org',
    value: 'v'.repeat(43),
    challengeUrl: 'https://ca.test/chall/1',
    authorizationUrl: 'https://ca.test/authz/1',
  };
  const mocks: Partial<Activities> = {
    acmePlan: async () =>
      issued >= 2
        ? null
        : {
            directory_url: 'https://ca.test/dir',
            email: '',
            hostnames,
            manual: false,
            current: cert && {
              hostnames,
              not_before: new Date(cert.notBeforeMs).toISOString(),
              not_after: new Date(cert.notAfterMs).toISOString(),
            },
          },
    reportAcmeAttempt: async (_d, report) => {
      reports.push(report);
      return { ok: true };
    },
    acmeNewOrder: async (input) => {
      if (++orders === 1)
        // A rate limit whose time is later than the backoff: the retry waits for it.
        throw ApplicationFailure.create({
          message: 'the certificate issuer refused: too many new orders recently, retry after <t>',
          nonRetryable: true,
          details: [{ retryAtMs: rateLimitedUntil }],
        });
      return {
        url: `https://ca.test/order/${orders}`,
        finalize: 'f',
        hostnames: input.hostnames,
        challenges: [challenge],
      };
    },
    publishAcmeChallenges: async (d) => {
      published.push(d);
      return { published: 1 };
    },
    acmeChallengesServed: async () => ({ served: ++served % 2 === 0, missing: served % 2 === 0 ? [] : ['n1'] }),
    acmeCompleteChallenges: async () => undefined,
    acmeFinalizeAndStore: async (input) => {
      issued++;
      cert = { notBeforeMs: Date.now(), notAfterMs: Date.now() + 3000 };
      return { id: issued, ...cert, hostnames: input.order.hostnames };
    },
    withdrawAcmeChallenges: async (d) => {
      withdrawn.push(d);
      return { withdrawn: 1 };
    },
  };
  const result = await withWorker(mocks, (taskQueue) =>
    env.client.workflow.execute('manageCertificates', {
      taskQueue,
      workflowId: 'certificates:m.example.org',
      args: [
        {
          domain: 'm.example.org',
          backoff: { initialMs: 300, maxMs: 600 },
          challengeWait: { pollMs: 100, maxMs: 10_000 },
          renewBeforeMs: 30 * 86_400_000,
        },
      ],
    }),
  );
  assert.equal(result, 'deleted');
  assert.deepEqual(
    reports.map((r) => r.status),
    ['pending', 'failed', 'pending', 'issued', 'pending', 'issued'],
  );
  assert.match(reports[1]!.error!, /too many new orders/);
  assert.ok(reports[1]!.next_retry_at_ms! >= rateLimitedUntil - 50, 'the retry waits for the rate limit');
  assert.equal(orders, 3);
  assert.deepEqual(published, ['m.example.org', 'm.example.org']);
  assert.deepEqual(withdrawn, published);
  await keepHistory('certificates:m.example.org', 'manage-certificates.json');
});

test('recorded histories replay on the current workflow code (a non-deterministic change fails here: gate it with patched())', async () => {
  const files = readdirSync(HISTORIES).filter((f) => f.endsWith('.json'));
  assert.ok(files.length >= 3);
  for (const file of files) {
    const history = temporal.api.history.v1.History.fromObject(
      wellKnownTypes(JSON.parse(readFileSync(join(HISTORIES, file), 'utf8'))) as Record<string, unknown>,
    );
    await Worker.runReplayHistory({ workflowBundle: bundle }, history, file);
  }
});

test('rollDnssecKeys: sleeps until the step the control plane names, ends when DNSSEC is off or the domain gone', async () => {
  const calls: string[] = [];
  const replies: Array<{ enabled: boolean; next_at_ms: number | null } | null> = [];
  const mocks = {
    rollDnssecKeys: async (domain: string) => {
      calls.push(domain);
      const next = replies.shift();
      return next === undefined ? { enabled: false, next_at_ms: null } : next;
    },
  };
  await withWorker(mocks, async (taskQueue) => {
    replies.push({ enabled: true, next_at_ms: Date.now() + 300 }, { enabled: true, next_at_ms: Date.now() + 600 });
    const off = await env.client.workflow.execute('rollDnssecKeys', {
      taskQueue,
      workflowId: 'dnssec-rollover:r.example.org',
      args: [{ domain: 'r.example.org' }],
    });
    assert.equal(off, 'disabled');
    assert.deepEqual(calls, ['r.example.org', 'r.example.org', 'r.example.org']);
    replies.push(null);
    const gone = await env.client.workflow.execute('rollDnssecKeys', {
      taskQueue,
      workflowId: 'dnssec-rollover:gone.example.org',
      args: [{ domain: 'gone.example.org' }],
    });
    assert.equal(gone, 'deleted');
  });
});
