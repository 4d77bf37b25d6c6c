// Keeps the ZoneTable in step with the node store: compiles every zone at start, then brings one zone up to date per
// applied entry, patching only the names a delta touched (ZoneBuilder) and diffing a snapshot against what is served.
import type { DomainSnapshot, ZoneRecord } from '@platform/shared/config';
import type { DomainChange } from '@platform/shared/node-store';
import type { Logger } from '@platform/shared';
import type { Counters } from '../counters.js';
import { ZoneBuilder, type PatchResult } from './builder.js';
import type { CompileOptions } from './owner.js';
import type { ZoneTable } from './table.js';
import type { CompiledZone } from './model.js';

/** The node store's reads a zone set needs. */
export interface ZoneSource {
  getSnapshot(domain: string): DomainSnapshot | undefined;
  getHeader(domain: string): DomainSnapshot | undefined;
  getRecord(domain: string, id: number): ZoneRecord | undefined;
  domains(): string[];
}

export class ZoneSet {
  /** One builder per compiled domain (served or not), holding what a patch needs. */
  private readonly builders = new Map<string, ZoneBuilder>();
  /** Serial last served per domain: a new one is announced to the zone's secondaries (onNewSerial). */
  private readonly served = new Map<string, number>();

  constructor(
    readonly table: ZoneTable,
    private readonly store: ZoneSource,
    private readonly opts: CompileOptions,
    private readonly counters: Counters,
    private readonly log: Logger,
    /** Called when a zone is served with a new serial (NOTIFY to its secondaries, xfr/notify.ts). */
    private readonly onNewSerial: (zone: CompiledZone) => void = () => {},
  ) {}

  /** Compiles every zone the store holds. */
  loadAll(): void {
    for (const domain of this.store.domains()) this.refresh({ domain, kind: 'snapshot', recordIds: [], ruleIds: [] });
  }

  /**
   * Brings `change.domain` up to date with the store. A zone that fails to compile leaves the previous one served
   * (STYLE.md §5) and its builder is dropped, so the next change compiles the domain whole from the store.
   */
  refresh(change: DomainChange): void {
    const domain = change.domain.toLowerCase();
    const builder = this.builders.get(domain);
    try {
      const result =
        change.kind === 'delta' && builder ? this.patch(builder, change) : this.compileWhole(domain, builder);
      if (!result) return;
      if (result.how === 'patched') this.counters.dns_zone_patches_total++;
      else this.counters.dns_zone_compiles_total++;
      if (result.problems.length > 0)
        this.log.warn({ domain, problems: result.problems }, 'zone compiled with records skipped');
    } catch (err) {
      this.builders.delete(domain);
      this.counters.dns_zone_compile_failures_total++;
      this.log.error({ err, domain }, 'zone failed to compile; keeping the previous one');
    }
  }

  /** Signs again every signed zone whose signatures are close to expiring. */
  resignDue(now = Date.now()): void {
    for (const [domain, builder] of this.builders) {
      if (!builder.resignDue(now)) continue;
      try {
        builder.resign();
        this.serve(domain, builder);
        this.counters.dns_zone_compiles_total++;
      } catch (err) {
        this.builders.delete(domain);
        this.counters.dns_zone_compile_failures_total++;
        this.log.error({ err, domain }, 'zone failed to sign again; keeping the previous one');
      }
    }
  }

  private patch(builder: ZoneBuilder, change: DomainChange): PatchResult | undefined {
    const header = this.store.getHeader(change.domain);
    if (!header) return this.drop(change.domain);
    const written: ZoneRecord[] = [];
    const removed: number[] = [];
    for (const id of change.recordIds) {
      const r = this.store.getRecord(change.domain, id);
      if (r) written.push(r);
      else removed.push(id);
    }
    const result = builder.apply(header, written, removed);
    this.serve(change.domain, builder);
    return result;
  }

  private compileWhole(domain: string, builder: ZoneBuilder | undefined): PatchResult | undefined {
    const snapshot = this.store.getSnapshot(domain);
    if (!snapshot) return this.drop(domain);
    let result: PatchResult;
    if (builder) result = builder.replace(snapshot);
    else {
      builder = new ZoneBuilder(snapshot, this.opts);
      this.builders.set(domain, builder);
      result = { how: 'rebuilt', problems: builder.problems(), recompiled: builder.zone?.nodes.size ?? 0 };
    }
    this.serve(domain, builder);
    return result;
  }

  private serve(domain: string, builder: ZoneBuilder): void {
    // A patched zone is the same object, changed in place; a rebuilt one replaces it with one Map write.
    if (builder.zone) {
      this.table.set(builder.zone);
      if (this.served.get(domain) !== builder.zone.serial) {
        this.served.set(domain, builder.zone.serial);
        if (builder.zone.transfers) this.onNewSerial(builder.zone);
      }
    } else {
      this.table.delete(domain);
      this.served.delete(domain);
    }
  }

  private drop(domain: string): undefined {
    this.builders.delete(domain);
    this.table.delete(domain);
    this.served.delete(domain);
    return undefined;
  }
}
