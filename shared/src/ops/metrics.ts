// Prometheus metrics with prom-client, read from plain counters at scrape time: a hot path only increments a number
// field (no labels looked up, nothing allocated); the registry turns those numbers into metrics when scraped.
import { collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client';

/** A registry of the caller's own metrics; scrapeMetrics adds the process's defaults to it. */
export function createRegistry(): Registry {
  return new Registry();
}

// The process's default metrics (CPU, memory, event-loop lag, GC, handles) are collected once per process, however
// many registries (Fastify instances in tests) scrape them.
let processRegistry: Registry | undefined;

/** The registry's metrics followed by the process's defaults, in Prometheus text (content type: registry.contentType). */
export async function scrapeMetrics(registry: Registry): Promise<string> {
  if (!processRegistry) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
  }
  return `${await registry.metrics()}\n${await processRegistry.metrics()}`;
}

type Labelled = ReadonlyArray<readonly [Record<string, string>, number]>;

/** A counter whose value is read at each scrape: one number, or one per label set. */
export function counterFrom(
  registry: Registry,
  name: string,
  help: string,
  read: () => number | Labelled,
  labelNames: string[] = [],
): void {
  new Counter({
    name,
    help,
    labelNames,
    registers: [registry],
    collect() {
      const v = read();
      this.reset();
      if (typeof v === 'number') this.inc(v);
      else for (const [labels, n] of v) this.inc(labels, n);
    },
  });
}

/** A gauge whose value is read at each scrape: one number, or one per label set (sets gone since are dropped). */
export function gaugeFrom(
  registry: Registry,
  name: string,
  help: string,
  read: () => number | Labelled | Promise<number | Labelled>,
  labelNames: string[] = [],
): void {
  new Gauge({
    name,
    help,
    labelNames,
    registers: [registry],
    async collect() {
      const v = await read();
      this.reset();
      if (typeof v === 'number') this.set(v);
      else for (const [labels, n] of v) this.set(labels, n);
    },
  });
}
