// Temporal client plugin: starts the domain-lifecycle workflows BY NAME (no workflow code loads here; only
// `import type` of their signatures) and decorates `app.temporal`. Ids are `<purpose>:<domain>`, so a repeated
// call finds the running workflow (conflict policy USE_EXISTING) instead of starting a second one.
import fp from 'fastify-plugin';
import type { FastifyInstance } from 'fastify';
import { Client, Connection, WorkflowFailedError } from '@temporalio/client';
import type * as wf from '../../../workflows/src/workflows/index.js';
import { and, eq, or } from 'drizzle-orm';
import { domains } from '../db/schema.js';
import { ApiError } from '../errors.js';

type DomainRow = typeof domains.$inferSelect;

/** The worker's task queue (workflows/src/task-queues.ts DOMAIN_LIFECYCLE; repeated: no runtime import across). */
export const TASK_QUEUE = 'domain-lifecycle';
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

export interface DomainWorkflows {
  /** False when TEMPORAL_ADDRESS is empty (tests of other areas): background starts are skipped, checks answer 503. */
  readonly enabled: boolean;
  /** After POST /domains/ (or a dns_mode switch): delegation watch + zone scan (managed) or verification watch (external). */
  domainAdded(row: DomainRow): Promise<void>;
  /** `restart`: replace a run that is still open (enable must not attach to a watch that is just finishing). */
  startDelegationWatch(domain: string, opts?: { restart?: boolean }): Promise<void>;
  startVerificationWatch(row: DomainRow): Promise<void>;
  /** Runs a short workflow a user waits for and returns its result; 503 when Temporal or the worker do not answer. */
  execute<R>(workflowType: string, id: string, args: unknown[]): Promise<R>;
  armDeveloperMode(domain: string, expiresAtMs: number): Promise<void>;
  stopDeveloperMode(domain: string): Promise<void>;
}

declare module 'fastify' {
  interface FastifyInstance {
    temporal: DomainWorkflows;
  }
}

async function temporalPlugin(app: FastifyInstance) {
  const cfg = app.config.temporal;
  const log = app.log.child({ component: 'control-plane.temporal' });
  let clientPromise: Promise<{ client: Client; connection: Connection }> | undefined;

  const client = async (): Promise<Client> => {
    if (!cfg.address) throw new ApiError(503, 'workflow service unavailable (TEMPORAL_ADDRESS is not set)');
    clientPromise ??= Connection.connect({ address: cfg.address, connectTimeout: '3 seconds' }).then((connection) => ({
      connection,
      client: new Client({ connection, namespace: cfg.namespace }),
    }));
    try {
      return (await clientPromise).client;
    } catch (err) {
      clientPromise = undefined; // try again on the next call
      throw new ApiError(503, 'workflow service unavailable', undefined, { cause: err });
    }
  };

  const startOptions = (id: string) => ({
    taskQueue: TASK_QUEUE,
    workflowId: id,
    workflowIdConflictPolicy: 'USE_EXISTING' as const,
    workflowIdReusePolicy: 'ALLOW_DUPLICATE' as const,
  });

  /** Background starts never fail the API call that caused them: the cause is logged. */
  const background = async (what: string, fn: () => Promise<unknown>) => {
    if (!cfg.address) return;
    try {
      await fn();
    } catch (err) {
      log.warn({ err }, `could not start ${what}`);
    }
  };

  const startDelegationWatch = (domain: string, opts: { restart?: boolean } = {}) =>
    background(workflowId.delegation(domain), async () => {
      await (
        await client()
      ).workflow.start<typeof wf.watchDelegation>('watchDelegation', {
        ...startOptions(workflowId.delegation(domain)),
        ...(opts.restart ? { workflowIdConflictPolicy: 'TERMINATE_EXISTING' as const } : {}),
        args: [{ domain, backoff: cfg.delegationBackoff }],
      });
    });

  const verificationArgs = (row: DomainRow) => {
    const verification = row.verification as { name: string; type: string; value: string; expires_at: string } | null;
    const sslDelegation = row.sslDelegation as { name: string; type: string; target: string; canary?: string } | null;
    const expiresAtMs = verification?.expires_at ? Date.parse(verification.expires_at) : Date.now();
    return [{ domain: row.name, verification, sslDelegation, expiresAtMs, backoff: cfg.verificationBackoff }] as [
      Parameters<typeof wf.awaitVerification>[0],
    ];
  };
  const resumeVerificationWatch = async (row: DomainRow) => {
    await (
      await client()
    ).workflow.start<typeof wf.awaitVerification>('awaitVerification', {
      ...startOptions(workflowId.verification(row.name)),
      args: verificationArgs(row),
    });
  };

  const startVerificationWatch = (row: DomainRow) =>
    background(workflowId.verification(row.name), async () => {
      await (
        await client()
      ).workflow.start<typeof wf.awaitVerification>('awaitVerification', {
        ...startOptions(workflowId.verification(row.name)),
        // A new token (verify/retry) replaces a watch still running for the old one.
        workflowIdConflictPolicy: 'TERMINATE_EXISTING',
        args: verificationArgs(row),
      });
    });

  const temporal: DomainWorkflows = {
    enabled: cfg.address !== '',
    async domainAdded(row) {
      if (row.dnsMode === 'external') return startVerificationWatch(row);
      await startDelegationWatch(row.name);
      await background(workflowId.zoneScan(row.name), async () => {
        await (
          await client()
        ).workflow.start<typeof wf.scanAndImportZone>('scanAndImportZone', {
          ...startOptions(workflowId.zoneScan(row.name)),
          args: [{ domain: row.name }],
        });
      });
    },
    startDelegationWatch,
    startVerificationWatch,
    async execute<R>(workflowType: string, id: string, args: unknown[]): Promise<R> {
      const c = await client();
      try {
        const handle = await c.workflow.start(workflowType, {
          ...startOptions(id),
          args,
          workflowExecutionTimeout: INTERACTIVE_TIMEOUT_MS,
        });
        return (await handle.result()) as R;
      } catch (err) {
        if (err instanceof WorkflowFailedError) {
          throw new ApiError(
            503,
            'the check did not complete; the workflows worker may be down or the resolvers unreachable',
            undefined,
            { cause: err },
          );
        }
        throw new ApiError(503, 'workflow service unavailable', undefined, { cause: err });
      }
    },
    async armDeveloperMode(domain, expiresAtMs) {
      await background(workflowId.developerMode(domain), async () => {
        await (
          await client()
        ).workflow.signalWithStart<typeof wf.expireDeveloperMode, [number]>('expireDeveloperMode', {
          taskQueue: TASK_QUEUE,
          workflowId: workflowId.developerMode(domain),
          args: [{ domain, expiresAtMs }],
          signal: 'extendDeveloperMode',
          signalArgs: [expiresAtMs],
        });
      });
    },
    async stopDeveloperMode(domain) {
      if (!cfg.address) return;
      try {
        await (await client()).workflow.getHandle(workflowId.developerMode(domain)).signal('stopDeveloperMode');
      } catch (err) {
        // Not running (already expired or never armed): nothing to stop.
        log.debug({ err }, 'developer-mode workflow not signalled');
      }
    },
  };

  app.decorate('temporal', temporal);

  // Domains added while Temporal was unreachable have no watch yet: on start, (re)start the watches of every domain
  // still waiting (idempotent: a running watch is found by its id). In the background; failures are logged.
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
      for (const row of waiting) {
        if (row.dnsMode === 'managed') await startDelegationWatch(row.name);
        else await background(workflowId.verification(row.name), () => resumeVerificationWatch(row));
      }
      if (waiting.length > 0) log.info({ domains: waiting.length }, 'watches of waiting domains ensured');
    })().catch((err: unknown) => log.warn({ err }, 'could not ensure the watches of waiting domains'));
  });
  app.addHook('onClose', async () => {
    const c = await clientPromise?.catch(() => undefined);
    await c?.connection.close();
  });
}

export default fp(temporalPlugin, { name: 'temporal', dependencies: ['database'] });
