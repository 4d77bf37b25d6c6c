// Temporal for the routes: the domain-lifecycle workflows BY NAME (no workflow code loads here; only `import type` of
// their signatures), decorated as `app.temporal`. Background workflows are never started from a request: a write
// records them in the workflow outbox in its own transaction (`starts.*` build the entries) and the dispatcher starts
// them (src/workflow-outbox/). Only `execute`, a check the user waits for, talks to Temporal during a request.
// Ids are `<purpose>:<domain>`, so a repeated start finds the running workflow instead of starting a second one.
import fp from 'fastify-plugin';
import type { FastifyInstance } from 'fastify';
import { WorkflowFailedError } from '@temporalio/client';
import type * as wf from '../../../workflows/src/workflows/index.js';
import { and, eq, or } from 'drizzle-orm';
import { domains } from '../db/schema.js';
import { ApiError } from '../errors.js';
import { enqueueMissingWorkflows, type WorkflowStart } from '../workflow-outbox/outbox.js';
import { lazyTemporalClient } from './temporal-client.js';
import type { TemporalConfig } from './temporal-config.js';

type DomainRow = typeof domains.$inferSelect;

/** A check a user waits for must finish within this; otherwise 503 (is the worker running?). */
const INTERACTIVE_TIMEOUT_MS = 30_000;

/** Workflow ids: readable, derived from purpose and domain; search `*:<domain>` in the Temporal UI. */
export const workflowId = {
  delegation: (d: string) => `domain-delegation:${d}`,
  checkNs: (d: string) => `check-ns:${d}`,
  verification: (d: string) => `domain-verification:${d}`,
  verify: (d: string) => `verify:${d}`,
  sslDelegationCheck: (d: string) => `ssl-delegation-check:${d}`,
  developerMode: (d: string) => `developer-mode:${d}`,
  zoneScan: (d: string) => `zone-scan:${d}`,
};

/** The outbox entries of the domain lifecycle; record them with enqueueWorkflows in the write's transaction. */
export interface DomainWorkflowStarts {
  /** After POST /domains/ (or a dns_mode switch): delegation watch + zone scan (managed) or verification watch (external). */
  domainAdded(row: DomainRow): WorkflowStart[];
  /** `restart`: replace a run that is still open (enable must not attach to a watch that is just finishing). */
  delegationWatch(domain: string, opts?: { restart?: boolean }): WorkflowStart;
  /** A new token (verify/retry, enable, dns_mode switch) replaces a watch still running for the old one. */
  verificationWatch(row: DomainRow): WorkflowStart;
  armDeveloperMode(domain: string, expiresAtMs: number): WorkflowStart;
  /** Not running (already expired or never armed): the dispatcher has nothing to stop. */
  stopDeveloperMode(domain: string): WorkflowStart;
}

export interface DomainWorkflows {
  /** False when TEMPORAL_ADDRESS is empty (tests of other areas): checks answer 503, the outbox is not dispatched. */
  readonly enabled: boolean;
  readonly starts: DomainWorkflowStarts;
  /** Runs a short workflow a user waits for and returns its result; 503 when Temporal or the worker do not answer. */
  execute<R>(workflowType: string, id: string, args: unknown[]): Promise<R>;
  /** Asks Temporal for its system info (one cheap RPC); rejects when it does not answer (GET /readyz). */
  ping(): Promise<void>;
}

declare module 'fastify' {
  interface FastifyInstance {
    temporal: DomainWorkflows;
  }
}

export function domainWorkflowStarts(cfg: TemporalConfig): DomainWorkflowStarts {
  const delegationWatch = (domain: string, opts: { restart?: boolean } = {}): WorkflowStart => ({
    kind: 'start',
    workflowType: 'watchDelegation',
    workflowId: workflowId.delegation(domain),
    args: [{ domain, backoff: cfg.delegationBackoff } satisfies Parameters<typeof wf.watchDelegation>[0]],
    conflictPolicy: opts.restart ? 'terminate-existing' : 'use-existing',
  });
  const verificationWatch = (row: DomainRow, conflictPolicy: WorkflowStart['conflictPolicy']): WorkflowStart => {
    const verification = row.verification as { name: string; type: string; value: string; expires_at: string } | null;
    const sslDelegation = row.sslDelegation as { name: string; type: string; target: string; canary?: string } | null;
    const expiresAtMs = verification?.expires_at ? Date.parse(verification.expires_at) : Date.now();
    const args: Parameters<typeof wf.awaitVerification>[0] = {
      domain: row.name,
      verification,
      sslDelegation,
      expiresAtMs,
      backoff: cfg.verificationBackoff,
    };
    return {
      kind: 'start',
      workflowType: 'awaitVerification',
      workflowId: workflowId.verification(row.name),
      args: [args],
      conflictPolicy,
    };
  };
  return {
    domainAdded(row) {
      if (row.dnsMode === 'external') return [verificationWatch(row, 'terminate-existing')];
      return [
        delegationWatch(row.name),
        {
          kind: 'start',
          workflowType: 'scanAndImportZone',
          workflowId: workflowId.zoneScan(row.name),
          args: [{ domain: row.name } satisfies Parameters<typeof wf.scanAndImportZone>[0]],
        },
      ];
    },
    delegationWatch,
    verificationWatch: (row) => verificationWatch(row, 'terminate-existing'),
    armDeveloperMode: (domain, expiresAtMs) => ({
      kind: 'signal-with-start',
      workflowType: 'expireDeveloperMode',
      workflowId: workflowId.developerMode(domain),
      args: [{ domain, expiresAtMs } satisfies Parameters<typeof wf.expireDeveloperMode>[0]],
      signal: 'extendDeveloperMode',
      signalArgs: [expiresAtMs],
    }),
    stopDeveloperMode: (domain) => ({
      kind: 'signal',
      workflowType: 'expireDeveloperMode',
      workflowId: workflowId.developerMode(domain),
      args: [],
      signal: 'stopDeveloperMode',
    }),
  };
}

/** Watches of the domains still waiting for delegation or verification, as ensure-starts (running ones are kept). */
function waitingDomainWatches(rows: DomainRow[], starts: DomainWorkflowStarts): WorkflowStart[] {
  return rows.map((row) =>
    row.dnsMode === 'managed'
      ? starts.delegationWatch(row.name)
      : { ...starts.verificationWatch(row), conflictPolicy: 'use-existing' as const },
  );
}

async function temporalPlugin(app: FastifyInstance) {
  const cfg = app.config.temporal;
  const log = app.log.child({ component: 'control-plane.temporal' });
  const temporalClient = lazyTemporalClient(cfg);
  const starts = domainWorkflowStarts(cfg);

  const temporal: DomainWorkflows = {
    enabled: cfg.address !== '',
    starts,
    async execute<R>(workflowType: string, id: string, args: unknown[]): Promise<R> {
      if (!cfg.address)
        throw new ApiError('CP_ERR_UNAVAILABLE', 'workflow service unavailable (TEMPORAL_ADDRESS is not set)');
      try {
        const c = await temporalClient.get();
        const handle = await c.workflow.start(workflowType, {
          taskQueue: cfg.taskQueue,
          workflowId: id,
          workflowIdConflictPolicy: 'USE_EXISTING',
          workflowIdReusePolicy: 'ALLOW_DUPLICATE',
          args,
          workflowExecutionTimeout: INTERACTIVE_TIMEOUT_MS,
        });
        return (await handle.result()) as R;
      } catch (err) {
        if (err instanceof WorkflowFailedError) {
          throw new ApiError(
            'CP_ERR_UNAVAILABLE',
            'the check did not complete; the workflows worker may be down or the resolvers unreachable',
            undefined,
            { cause: err },
          );
        }
        throw new ApiError('CP_ERR_UNAVAILABLE', 'workflow service unavailable', undefined, { cause: err });
      }
    },
    async ping() {
      const c = await temporalClient.get();
      await c.workflowService.getSystemInfo({});
    },
  };

  app.decorate('temporal', temporal);

  // A watch can be lost outside the outbox (a Temporal dev server restarted without its state, a database restored):
  // on start, every domain still waiting gets its watch ensured through the outbox unless an entry already waits.
  app.addHook('onReady', async () => {
    if (!cfg.address) return;
    void (async () => {
      const waiting = await app.db
        .select()
        .from(domains)
        .where(
          or(
            and(eq(domains.dnsMode, 'managed'), eq(domains.state, 'pending')),
            and(
              eq(domains.dnsMode, 'external'),
              eq(domains.state, 'unverified'),
              eq(domains.verificationState, 'awaiting'),
            ),
          ),
        );
      const added = await enqueueMissingWorkflows(app.db, waitingDomainWatches(waiting, starts));
      if (added > 0) {
        app.workflowOutbox.nudge();
        log.info({ domains: added }, 'watches of waiting domains queued');
      }
    })().catch((err: unknown) => log.warn({ err }, 'could not queue the watches of waiting domains'));
  });
  app.addHook('onClose', () => temporalClient.close());
}

export default fp(temporalPlugin, { name: 'temporal', dependencies: ['database'] });
