// Ships request log batches to the control plane (POST /internal/request-logs, msgpack, node token) on a timer.
//
// Acknowledged batches: the records drained from the buffer are cut into batches of at most MAX_BATCH records, each
// packed once with its batch id (`<incarnation>-<sequence>`: 16 random hex digits drawn when the shipper starts, and
// a counter) and kept in the buffer's outbox until the control plane answers 2xx. Batches go oldest first, one at a
// time; a failure leaves the batch at the head and the next attempt waits (1 s doubling to 60 s, with jitter). The
// control plane counts a batch id once (control-plane/src/internal/request-logs.ts), so a batch sent again after a
// lost answer is acknowledged and not counted twice. A restarted node draws a new incarnation: its ids never repeat
// an earlier process's for other records. The outbox is bounded (batches and bytes, OutboxBounds); beyond it, and for
// a batch older than MAX_BATCH_AGE_MS, the oldest batch is dropped and its records counted in `dropped`.
import { randomBytes } from 'node:crypto';
import { pack } from 'msgpackr';
import { componentLogger } from '@platform/shared';
import { ensureNodeToken } from '@platform/shared/node-token';
import type { EdgeConfig } from '../config.js';
import type { RequestLogBuffer } from './buffer.js';
import { nodeName, postReport, reportLoop, retryAt } from './post.js';
import type { UptimeProber } from '../uptime/probes.js';

const log = componentLogger('edge-node.logs');
const MAX_BATCH = 5000;
/** A batch is resent for a day at most (the control plane remembers batch ids for seven). */
export const MAX_BATCH_AGE_MS = 24 * 3600_000;

export interface LogShipper {
  /** Cuts what the buffer holds into batches and sends the outbox now (no backoff wait). */
  flush(): Promise<void>;
  stop(): Promise<void>;
}

export function startLogShipper(
  buffer: RequestLogBuffer,
  config: Pick<EdgeConfig, 'controlPlaneUrl' | 'logFlushMs' | 'dataDir' | 'nodeToken'>,
  /** Uptime probes: told what traffic was drained, and its outcomes shipped with the counts. */
  prober?: Pick<UptimeProber, 'observe' | 'drain'>,
): LogShipper {
  if (!config.controlPlaneUrl) return { flush: async () => undefined, stop: async () => undefined };
  const url = `${config.controlPlaneUrl}/internal/request-logs`;
  const token = ensureNodeToken(config.dataDir, config.nodeToken);
  const node = nodeName();
  const incarnation = randomBytes(8).toString('hex');
  let sequence = 0;
  let failures = 0;
  let nextAttempt = 0;

  /** The buffer's records (and the uptime counts, with the first batch) packed into the outbox. */
  const cut = (): void => {
    const records = buffer.drain();
    const minutes = buffer.origins.drain();
    const probes = prober?.drain() ?? [];
    prober?.observe(minutes, records);
    const now = Date.now();
    for (let i = 0; i === 0 || i < records.length; i += MAX_BATCH) {
      const batch = records.slice(i, i + MAX_BATCH);
      const first = i === 0;
      if (batch.length === 0 && minutes.length === 0 && probes.length === 0) return;
      const id = `${incarnation}-${++sequence}`;
      const body = pack({
        node,
        batch: id,
        records: batch,
        minutes: first ? minutes : [],
        probes: first ? probes : [],
      });
      buffer.enqueue({ id, body, records: batch.length, at: now });
    }
  };

  const send = async (): Promise<void> => {
    while (buffer.outbox.length > 0) {
      const head = buffer.outbox[0];
      if (Date.now() - head.at > MAX_BATCH_AGE_MS) {
        buffer.removeOldest(true);
        continue;
      }
      try {
        await postReport(url, token, head.body);
      } catch (err) {
        if (failures++ % 30 === 0)
          log.warn(
            {
              err: (err as Error).message,
              batches: buffer.outbox.length,
              bytes: buffer.outboxBytes,
              dropped: buffer.dropped,
            },
            'request log shipment failed; the batch is kept and sent again',
          );
        nextAttempt = retryAt(failures);
        return;
      }
      // The head is still this batch: cut() and send() run one at a time (the chain), and only cut() drops.
      if (buffer.outbox[0] === head) buffer.removeOldest(false);
      failures = 0;
      nextAttempt = 0;
    }
  };

  /** A cut and a send; `force` ignores the backoff. */
  const step = (force: boolean): Promise<void> | undefined => {
    cut();
    if (force || Date.now() >= nextAttempt) return send();
  };
  const loop = reportLoop(
    config.logFlushMs,
    () => step(false),
    (err) => log.warn({ err }, 'request log shipment failed'),
  );
  return {
    flush: () => loop.run(() => step(true)),
    async stop() {
      loop.stop();
      await loop.run(() => step(true));
    },
  };
}
