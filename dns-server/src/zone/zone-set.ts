// Keeps the ZoneTable in step with the node store: compiles every zone at start, recompiles one zone per change.
import type { DomainSnapshot } from '@platform/shared/config';
import type { Logger } from '@platform/shared';
import type { Counters } from '../counters.js';
import { compileZone, type CompileOptions } from './compile.js';
import type { ZoneTable } from './table.js';

export interface SnapshotSource {
  getSnapshot(domain: string): DomainSnapshot | undefined;
  domains(): string[];
}

/**
 * Recompiles `domain` from `snapshot` (undefined: deleted) and swaps it into the table. A snapshot that
 * fails to compile leaves the previous zone served (STYLE.md §5); skipped records are logged once per apply.
 */
export function applyDomain(
  table: ZoneTable,
  domain: string,
  snapshot: DomainSnapshot | undefined,
  opts: CompileOptions,
  counters: Counters,
  log: Logger,
): void {
  const apex = domain.toLowerCase();
  if (!snapshot) {
    table.delete(apex);
    return;
  }
  try {
    const { zone, problems } = compileZone(snapshot, opts, table.get(apex));
    counters.dns_zone_compiles_total++;
    if (problems.length > 0) log.warn({ domain: apex, problems }, 'zone compiled with records skipped');
    if (zone) table.set(zone);
    else table.delete(apex);
  } catch (err) {
    counters.dns_zone_compile_failures_total++;
    log.error({ err, domain: apex }, 'zone failed to compile; keeping the previous one');
  }
}

/** Compiles every zone the store holds. */
export function loadAll(
  table: ZoneTable,
  store: SnapshotSource,
  opts: CompileOptions,
  counters: Counters,
  log: Logger,
): void {
  for (const domain of store.domains()) {
    let snapshot: DomainSnapshot | undefined;
    try {
      snapshot = store.getSnapshot(domain);
    } catch (err) {
      counters.dns_zone_compile_failures_total++;
      log.error({ err, domain }, 'stored snapshot unreadable; zone not served');
      continue;
    }
    applyDomain(table, domain, snapshot, opts, counters, log);
  }
}
