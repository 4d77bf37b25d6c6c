// Optional HTTP endpoint (DNS_METRICS_PORT) exposing the counters in Prometheus text format.
import { createServer, type Server } from 'node:http';
import { formatCounters, type Counters } from './counters.js';

export function startMetrics(host: string, port: number, read: () => Counters): Promise<Server> {
  const server = createServer((req, res) => {
    if (req.url !== '/metrics') {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' }).end(formatCounters(read()));
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve(server));
  });
}

/** Sums the counters of several workers. */
export function sumCounters(parts: Iterable<Counters>, into: Counters): Counters {
  for (const k of Object.keys(into) as (keyof Counters)[]) into[k] = 0;
  for (const p of parts) for (const k of Object.keys(into) as (keyof Counters)[]) into[k] += p[k] ?? 0;
  return into;
}
