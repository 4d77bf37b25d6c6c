// Ships request log batches to the control plane (POST /internal/request-logs, msgpack, node token) on a timer.
import { pack } from 'msgpackr';
import { request } from 'undici';
import { componentLogger } from '@platform/shared';
import { ensureNodeToken } from '@platform/shared/node-token';
import type { EdgeConfig } from '../config.js';
import type { RequestLogBuffer } from './buffer.js';
import type { UptimeProber } from '../uptime/probes.js';

const log = componentLogger('edge-node.logs');
const MAX_BATCH = 5000;

export function startLogShipper(
  buffer: RequestLogBuffer,
  config: Pick<EdgeConfig, 'controlPlaneUrl' | 'logFlushMs' | 'dataDir' | 'nodeToken'>,
  /** Uptime probes: told what traffic was drained, and its outcomes shipped with the counts. */
  prober?: Pick<UptimeProber, 'observe' | 'drain' | 'requeue'>,
): { flush(): Promise<void>; stop(): Promise<void> } {
  if (!config.controlPlaneUrl) return { flush: async () => undefined, stop: async () => undefined };
  const url = `${config.controlPlaneUrl}/internal/request-logs`;
  const token = ensureNodeToken(config.dataDir, config.nodeToken);
  let running: Promise<void> | undefined;
  let failures = 0;

  const flush = async (): Promise<void> => {
    const records = buffer.drain();
    // The uptime counts travel with the first batch (alone when no record is left to ship).
    let minutes = buffer.origins.drain();
    let probes = prober?.drain() ?? [];
    prober?.observe(minutes, records);
    for (let i = 0; i < records.length || minutes.length > 0 || probes.length > 0; i += MAX_BATCH) {
      const batch = records.slice(i, i + MAX_BATCH);
      try {
        const res = await request(url, {
          method: 'POST',
          body: pack({ node: `edge-${process.pid}`, records: batch, minutes, probes }),
          headers: { 'content-type': 'application/x-msgpack', authorization: `Bearer ${token}` },
          headersTimeout: 10_000,
          bodyTimeout: 10_000,
        });
        await res.body.dump();
        if (res.statusCode >= 300) throw new Error(`control plane answered ${res.statusCode}`);
        failures = 0;
        minutes = [];
        probes = [];
      } catch (err) {
        if (failures++ % 30 === 0)
          log.warn(
            { err: (err as Error).message, records: records.length - i, max: buffer.max, dropped: buffer.dropped },
            'request log shipment failed; keeping the most recent records',
          );
        buffer.requeue(records.slice(i));
        buffer.origins.requeue(minutes);
        prober?.requeue(probes);
        return;
      }
    }
  };
  const timer = setInterval(() => {
    if (!running)
      running = flush().finally(() => {
        running = undefined;
      });
  }, config.logFlushMs);
  timer.unref();
  return {
    flush,
    async stop() {
      clearInterval(timer);
      await running;
      await flush();
    },
  };
}
