// The operations listener of a node or worker process (its *_METRICS_PORT): GET /healthz (alive), GET /readyz (200 or
// 503 naming what is not ready) and GET /metrics (Prometheus text), without credentials, on a port of its own so that
// the data plane's hot path never sees these requests.
import { createServer, type Server } from 'node:http';
import type { Registry } from 'prom-client';
import { checkReadiness, type ReadinessCheck } from './readiness.js';
import { scrapeMetrics } from './metrics.js';

export interface OpsServerOptions {
  host: string;
  /** 0 picks a free port (see OpsServer.port). */
  port: number;
  registry: Registry;
  /** Named readiness checks; none: ready as soon as it listens. */
  checks?: Record<string, ReadinessCheck>;
  /** Text appended to /metrics (e.g. another exporter's output), read at each scrape. */
  extraMetrics?: () => Promise<string>;
}

export interface OpsServer {
  readonly port: number;
  close(): Promise<void>;
}

const JSON_TYPE = 'application/json; charset=utf-8';

export const ALIVE_BODY = JSON.stringify({ status: 'alive' });

export async function startOpsServer(opts: OpsServerOptions): Promise<OpsServer> {
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD', 'content-type': JSON_TYPE }).end('{"error":"method not allowed"}');
      return;
    }
    const send = (status: number, type: string, body: string) =>
      res
        .writeHead(status, { 'content-type': type, 'cache-control': 'no-store' })
        .end(req.method === 'HEAD' ? '' : body);
    const fail = (err: unknown) => send(500, JSON_TYPE, JSON.stringify({ error: (err as Error).message }));
    switch (path) {
      case '/healthz':
        send(200, JSON_TYPE, ALIVE_BODY);
        return;
      case '/readyz':
        checkReadiness(opts.checks ?? {}).then(
          (r) => send(r.status === 'ready' ? 200 : 503, JSON_TYPE, JSON.stringify(r)),
          fail,
        );
        return;
      case '/metrics':
        Promise.all([scrapeMetrics(opts.registry), opts.extraMetrics?.() ?? ''])
          .then(([own, extra]) => send(200, opts.registry.contentType, extra ? `${own}\n${extra}` : own))
          .catch(fail);
        return;
      default:
        send(404, JSON_TYPE, '{"error":"not found: try /healthz, /readyz or /metrics"}');
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  return {
    port: typeof address === 'object' && address ? address.port : opts.port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
