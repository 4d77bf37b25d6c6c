// Keeps the ZoneTable in step with the node store: compiles every zone at start, then brings one zone up to date per
// applied entry, patching only the names a delta touched (ZoneBuilder) and diffing a snapshot against what is served.
import type { DomainSnapshot, ZoneRecord, ZoneRecordCore } from '@platform/shared/config';
import type { AppliedEvent, DomainChange, ReceivedRecords } from '@platform/shared/node-store';
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
  /** The header and the records read lazily from one snapshot (NodeStore.readDomain: each record read may be the
   *  same object, overwritten by the next); without it every change is compiled at once. */
  readDomain?(domain: string): { header: DomainSnapshot; records: Iterable<ZoneRecordCore>; close(): void } | undefined;
}

/** A zone's records to compile whole: read from the store, or from a change in hand over a builder's records. */
interface ZoneRead {
  header: DomainSnapshot;
  records: Iterable<ZoneRecordCore>;
  /** A delta in hand: the records of the zone before it, less those it removed (its own records come first). */
  previous?: { builder: ZoneBuilder; removed: ReadonlySet<number> };
  close(): void;
}

/**
 * A change as the store's listener hears it in this process: with the entry's records in hand
 * (AppliedEvent.received), a large change is compiled from them instead of read back from the store.
 */
export type ZoneChange = DomainChange & Partial<Pick<AppliedEvent, 'received'>>;

/**
 * A change writing at least this many records (a zone import, a large zone's snapshot) is compiled into a new zone a
 * slice at a time between answers (ZoneBuilder.inSlices) rather than at once: compiling costs a few microseconds
 * per record, so a change of this size would otherwise hold every query of the node for tens of milliseconds.
 */
export const LARGE_CHANGE = 5000;

/** Longest run of compile work between two turns of the event loop, in ms. */
const SLICE_MS = 4;

export class ZoneSet {
  /** One builder per compiled domain (served or not), holding what a patch needs. */
  private readonly builders = new Map<string, ZoneBuilder>();
  /** Serial last served per domain: a new one is announced to the zone's secondaries (onNewSerial). */
  private readonly served = new Map<string, number>();
  /** Domains being compiled in slices, with the changes that came meanwhile (applied in order once it is served). */
  private readonly building = new Map<string, ZoneChange[]>();
  private idleWaiters: Array<() => void> = [];

  constructor(
    readonly table: ZoneTable,
    private readonly store: ZoneSource,
    private readonly opts: CompileOptions,
    private readonly counters: Counters,
    private readonly log: Logger,
    /** Called when a zone is served with a new serial (NOTIFY to its secondaries, xfr/notify.ts). */
    private readonly onNewSerial: (zone: CompiledZone) => void = () => {},
    /** Changes writing this many records or more are compiled in slices (LARGE_CHANGE). */
    private readonly largeChange = LARGE_CHANGE,
  ) {}

  /** Resolves once no zone is being compiled in slices (tests, benchmarks). */
  idle(): Promise<void> {
    if (this.building.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Compiles every zone the store holds. */
  loadAll(): void {
    for (const domain of this.store.domains()) this.refresh({ domain, kind: 'snapshot', recordIds: [], ruleIds: [] });
  }

  /**
   * Brings `change.domain` up to date with the store. A zone that fails to compile leaves the previous one served
   * (STYLE.md §5) and its builder is dropped, so the next change compiles the domain whole from the store.
   */
  refresh(change: ZoneChange): void {
    const domain = change.domain.toLowerCase();
    const queued = this.building.get(domain);
    if (queued) {
      queued.push(change);
      return;
    }
    const size = Math.max(change.recordCount ?? 0, change.recordIds.length);
    if (this.store.readDomain && change.kind !== 'deleted' && size >= this.largeChange) {
      void this.compileInSlices(domain, change);
      return;
    }
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
      // A patch that threw may have changed the served zone in part: answers kept from before are not trusted.
      this.table.answers.clear();
      this.builders.delete(domain);
      this.counters.dns_zone_compile_failures_total++;
      this.log.error({ err, domain }, 'zone failed to compile; keeping the previous one');
    }
  }

  /**
   * Compiles the domain whole into a new zone, a slice at a time between answers, then serves it in one step; the
   * zone served before stays served (and answered) meanwhile, and the changes of the domain that come meanwhile are
   * applied once it is served. The records come from the change in hand when it has them (a snapshot's whole zone;
   * a delta's records over those the domain's builder holds), else from the store. Never rejects.
   */
  private async compileInSlices(domain: string, change: ZoneChange): Promise<void> {
    const queued: ZoneChange[] = [];
    this.building.set(domain, queued);
    const started = performance.now();
    let records = 0;
    let from = 'store';
    let outcome = 'served';
    try {
      const inHand = this.inHand(domain, change);
      if (inHand) from = 'entry';
      const read: ZoneRead | undefined = inHand ?? this.store.readDomain!(domain);
      if (!read) this.drop(domain);
      else {
        try {
          let last = performance.now();
          const pause = async (): Promise<void> => {
            if (performance.now() - last < SLICE_MS) return;
            await new Promise<void>((resolve) => setImmediate(resolve));
            last = performance.now();
          };
          const builder = await ZoneBuilder.inSlices(read.header, read.records, this.opts, pause, read.previous);
          records = builder.size;
          this.builders.set(domain, builder);
          this.serve(domain, builder);
          this.counters.dns_zone_compiles_total++;
          const problems = builder.problems();
          if (problems.length > 0)
            this.log.warn(
              { domain, problems: problems.slice(0, 100), count: problems.length },
              'zone compiled with records skipped',
            );
        } finally {
          read.close();
        }
      }
    } catch (err) {
      outcome = 'failed';
      this.builders.delete(domain);
      this.counters.dns_zone_compile_failures_total++;
      this.log.error({ err, domain }, 'zone failed to compile; keeping the previous one');
    } finally {
      this.building.delete(domain);
      this.log.info(
        { domain, records, from, outcome, ms: Math.round(performance.now() - started) },
        'large zone compiled in slices',
      );
    }
    for (const change of queued) this.refresh(change);
    if (this.building.size === 0) for (const resolve of this.idleWaiters.splice(0)) resolve();
  }

  /**
   * The zone after `change` from the records it carries, or undefined (read the store): a snapshot's records are
   * the zone; a delta's are put over the records of the domain's builder, which holds the zone as of the change
   * before (every change of the domain is heard in order; a builder dropped after a failure is not there).
   */
  private inHand(domain: string, change: ZoneChange): ZoneRead | undefined {
    if (!change.received || (change.kind !== 'snapshot' && change.kind !== 'delta')) return undefined;
    const builder = this.builders.get(domain);
    if (change.kind === 'delta' && !builder) return undefined;
    const header = this.store.getHeader(domain);
    if (!header) return undefined;
    const got: ReceivedRecords = change.received();
    const records = got.records;
    const previous =
      change.kind === 'delta' ? { builder: builder!, removed: new Set(got.removedRecordIds) } : undefined;
    return { header, records, previous, close: () => (records as Generator<unknown>).return?.(undefined) };
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
