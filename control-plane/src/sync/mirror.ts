// The sync hub's in-memory copy of the config log, compacted: per domain its latest whole snapshot (or tombstone) and
// the deltas after it. Every version is read from the database once and encoded once, whatever the number of nodes
// that need it; catch-up is planned from here, never from the database.
import {
  applyDeltas,
  decodeDomainSnapshotFast,
  encodeConfigEntry,
  encodeDomainSnapshotFast,
  type DomainSnapshot,
} from '@platform/shared/config';
import { WHOLE_DELTA, type Compacted } from '../config-log/compacted.js';
import { squashAppended } from './squash.js';

/** One config-log entry as the main thread reads it (StoredEntry of config-log.ts). */
export interface LogEntry {
  version: number;
  domainName: string;
  deleted: boolean;
  delta: boolean;
  removedRecordIds: number[];
  removedRuleIds: number[];
  /** Encoded DomainSnapshot (whole, or a delta's); empty for a tombstone. */
  payload: Uint8Array;
}

type Kind = 'snapshot' | 'delta' | 'tombstone';

interface Item {
  version: number;
  domain: DomainLog;
  kind: Kind;
  payload: Uint8Array;
  removedRecordIds: number[];
  removedRuleIds: number[];
  /** No node needs it any more: a later snapshot or tombstone of the domain replaces it. */
  superseded: boolean;
  /** The ConfigEntry as sent, encoded on first use and shared by every node. */
  encoded?: Uint8Array;
}

interface DomainLog {
  name: string;
  /** The latest whole snapshot or tombstone. */
  base?: Item;
  /** Deltas after `base`, in version order. */
  deltas: Item[];
  deltaBytes: number;
  /** Size of the whole state's snapshot at the latest version: exact when `stateExact`, else an upper bound. */
  stateBytes: number;
  stateExact: boolean;
  /** Decoded whole state at `state.version`, kept for the domains written most recently. */
  state?: { version: number; snapshot: DomainSnapshot };
  /** The whole state as a snapshot entry at the latest version, built when a node or compaction needs it. */
  squashed?: Item;
  /** True while the domain's whole state does not fit in a frame: none of its entries is sent. */
  withheld: boolean;
  /** The last version withheld: a node whose version is below it missed entries and receives the whole state. */
  withheldAt: number;
}

export interface MirrorOptions {
  /** The largest frame a node takes (MAX_SYNC_FRAME_BYTES); a domain whose state is larger is withheld. */
  maxFrameBytes: number;
  /** False: nodes receive whole snapshots only (every delta is squashed before it is sent). */
  sendDeltas: boolean;
  /** Squash a domain's deltas into a snapshot after this many (and when they outweigh the snapshot). */
  compactAfterDeltas?: number;
  /**
   * Called when entries older than `version` of `domain` are superseded; `payload` is the squashed snapshot, or
   * WHOLE_DELTA when it is byte for byte the delta at `version` (which then only becomes a snapshot).
   */
  onCompact?: (domain: string, version: number, payload?: Compacted) => void;
  /** Called when an entry cannot be read or squashed: its domain is withheld like an oversized one. */
  onError?: (domain: string, version: number, err: unknown) => void;
  /** Called when a domain's state is too large to send, and when it fits again. */
  onWithheld?: (domain: string, version: number, bytes: number, withheld: boolean) => void;
}

/** Domains whose decoded state is kept (the rest is decoded again when needed). */
const DECODED_STATES = 64;
const COMPACT_MIN_BYTES = 64 * 1024;

export class LogMirror {
  /** The highest version ingested. */
  head = 0;
  /** Nodes whose version is below this may have missed a tombstone deleted after its retention. */
  horizon = 0;
  private readonly items: Item[] = [];
  private supersededCount = 0;
  private readonly domains = new Map<string, DomainLog>();
  private readonly decoded = new Set<DomainLog>();
  private readonly compactAfter: number;
  /** Domains whose deltas are due to be squashed (compactDue). */
  private readonly due = new Set<DomainLog>();

  constructor(private readonly opts: MirrorOptions) {
    this.compactAfter = opts.compactAfterDeltas ?? 64;
  }

  /** Number of entries kept (not superseded). */
  get size(): number {
    return this.items.length - this.supersededCount;
  }

  /**
   * Adds entries (in version order, each after `head`) and returns the encoded entries live nodes receive for them,
   * in version order: the entry itself, its domain's whole state in its place (snapshots-only mode, or a domain that
   * was withheld), or nothing (a domain too large to send).
   */
  ingest(entries: readonly LogEntry[]): Uint8Array[] {
    const out: Uint8Array[] = [];
    for (const e of entries) {
      if (e.version <= this.head) continue;
      this.head = e.version;
      try {
        const sent = this.add(e);
        if (sent) out.push(sent);
      } catch (err) {
        // One domain's unreadable entry must not stop the stream for the others: it is withheld like an oversized one.
        this.withholdUnreadable(this.domains.get(e.domainName)!, e.version, err);
      }
    }
    this.sweep();
    return out;
  }

  /** Raises the horizon and forgets the tombstones at or below it (nodes below it rebuild from version 0). */
  setHorizon(horizon: number): void {
    if (horizon <= this.horizon) return;
    this.horizon = horizon;
    for (const d of this.domains.values()) {
      if (d.base?.kind === 'tombstone' && d.base.version <= horizon && d.deltas.length === 0) {
        this.supersede(d.base);
        this.domains.delete(d.name);
      }
    }
    this.sweep();
  }

  /**
   * The encoded entries a node at version `from` needs to reach `head`, in version order: per domain, the entries
   * after `from` that no later snapshot or tombstone replaces, or the domain's whole state at its latest version when
   * that is smaller (or the node missed withheld entries). Domains too large to send are left out.
   */
  catchUp(from: number): Uint8Array[] {
    const start = this.firstAfter(from);
    const bytesAfter = new Map<DomainLog, number>();
    for (let i = start; i < this.items.length; i++) {
      const it = this.items[i]!;
      if (!it.superseded) bytesAfter.set(it.domain, (bytesAfter.get(it.domain) ?? 0) + it.payload.length);
    }
    const whole = new Set<DomainLog>();
    for (const [d, bytes] of bytesAfter) {
      if (d.withheld || d.deltas.length === 0) continue;
      if (d.withheldAt > from || !this.opts.sendDeltas || (d.stateExact && bytes > d.stateBytes)) whole.add(d);
    }
    const out: Uint8Array[] = [];
    for (let i = start; i < this.items.length; i++) {
      const it = this.items[i]!;
      const d = it.domain;
      if (it.superseded || d.withheld) continue;
      if (!whole.has(d)) out.push(this.encode(it));
      else if (it === this.latest(d)) out.push(this.encode(this.squash(d)));
    }
    return out;
  }

  private add(e: LogEntry): Uint8Array | undefined {
    let d = this.domains.get(e.domainName);
    if (!d) {
      d = {
        name: e.domainName,
        deltas: [],
        deltaBytes: 0,
        stateBytes: 0,
        stateExact: true,
        withheld: false,
        withheldAt: 0,
      };
      this.domains.set(d.name, d);
    }
    const item: Item = {
      version: e.version,
      domain: d,
      kind: e.deleted ? 'tombstone' : e.delta ? 'delta' : 'snapshot',
      payload: e.payload,
      removedRecordIds: e.removedRecordIds,
      removedRuleIds: e.removedRuleIds,
      superseded: false,
    };
    this.items.push(item);
    d.squashed = undefined;
    if (item.kind === 'delta') {
      d.deltas.push(item);
      d.deltaBytes += item.payload.length;
      d.stateBytes += item.payload.length;
      d.stateExact = false;
      // Squashing re-encodes the whole zone: it is left to compactDue, which the hub calls once the entry is sent.
      if (this.compactionDue(d)) this.due.add(d);
    } else {
      // A snapshot or tombstone replaces everything before it.
      const older = d.base !== undefined || d.deltas.length > 0;
      if (d.base) this.supersede(d.base);
      for (const old of d.deltas) this.supersede(old);
      d.base = item;
      d.deltas = [];
      d.deltaBytes = 0;
      d.stateBytes = item.payload.length;
      d.stateExact = true;
      this.forgetState(d);
      if (older) this.opts.onCompact?.(d.name, item.version);
    }
    return this.admit(d, item);
  }

  /** What live nodes receive for `item`, the domain's newest entry; updates the withheld state. */
  private admit(d: DomainLog, item: Item): Uint8Array | undefined {
    if (item.kind === 'tombstone') {
      if (d.withheld) this.opts.onWithheld?.(d.name, item.version, 0, false);
      d.withheld = false;
      return this.encode(item);
    }
    const fits = (bytes: number) => bytes + d.name.length + 32 <= this.opts.maxFrameBytes;
    if (!fits(d.stateBytes) && !d.stateExact) this.squash(d);
    if (!fits(d.stateBytes)) {
      if (!d.withheld) this.opts.onWithheld?.(d.name, item.version, d.stateBytes, true);
      d.withheld = true;
      d.withheldAt = item.version;
      return undefined;
    }
    const wasWithheld = d.withheld;
    if (wasWithheld) this.opts.onWithheld?.(d.name, item.version, d.stateBytes, false);
    d.withheld = false;
    if (item.kind === 'delta' && (wasWithheld || !this.opts.sendDeltas || !fits(item.payload.length)))
      return this.encode(this.squash(d));
    return this.encode(item);
  }

  /** True when domains wait for compactDue. */
  get compactionPending(): boolean {
    return this.due.size > 0;
  }

  /**
   * Compacts the domains whose deltas became due since the last call (see compactionDue). Ingest only marks them:
   * squashing re-encodes the whole zone (about 3.5 s for a million records), so the hub sends the entry first and
   * calls this afterwards. Returns the number of domains compacted.
   */
  compactDue(): number {
    let n = 0;
    for (const d of [...this.due]) {
      this.due.delete(d);
      if (!this.compactionDue(d)) continue;
      try {
        this.compact(d);
        n++;
      } catch (err) {
        // As when an entry cannot be read on ingest: the domain is withheld until its next snapshot.
        this.withholdUnreadable(d, this.latest(d).version, err);
      }
    }
    this.sweep();
    return n;
  }

  /** Withholds a domain whose entries at `version` cannot be read, until its next snapshot, and reports why. */
  private withholdUnreadable(d: DomainLog, version: number, err: unknown): void {
    d.withheld = true;
    d.withheldAt = version;
    this.opts.onError?.(d.name, version, err);
  }

  /**
   * Whether the domain's deltas are to be squashed: after `compactAfter` deltas only once they weigh an eighth of
   * the snapshot, so a large zone's squash (seconds for 100,000 records) comes once per that many bytes of deltas,
   * not once per 64 single-record writes (bench/sync/large-zones.ts p99); at once when they outweigh the snapshot.
   */
  private compactionDue(d: DomainLog): boolean {
    if (d.deltas.length === 0 || this.domains.get(d.name) !== d) return false;
    const base = d.base?.payload.length ?? 0;
    return (
      (d.deltas.length >= this.compactAfter && d.deltaBytes * 8 >= base) ||
      d.deltaBytes > Math.max(base, COMPACT_MIN_BYTES)
    );
  }

  /** Replaces the domain's base and deltas by its whole state at its latest version, here and in the database. */
  private compact(d: DomainLog): void {
    const last = this.latest(d);
    const squashed = this.squash(d);
    // The squashed snapshot takes the place of the domain's latest delta (later entries of other domains stay).
    const at = this.firstAfter(last.version - 1);
    if (this.items[at] !== last || squashed.version !== last.version) return;
    // An import onto an empty zone squashes to its own delta: the stored entry only changes its kind, and the mirror
    // keeps one copy of the bytes.
    const whole = sameBytes(squashed.payload, last.payload);
    if (whole) squashed.payload = last.payload;
    this.items[at] = squashed;
    if (d.base) this.supersede(d.base);
    for (const old of d.deltas) if (old !== last) this.supersede(old);
    d.base = squashed;
    d.deltas = [];
    d.deltaBytes = 0;
    this.opts.onCompact?.(d.name, squashed.version, whole ? WHOLE_DELTA : squashed.payload);
  }

  /** The domain's whole state as a snapshot entry at its latest version (built once per version). */
  private squash(d: DomainLog): Item {
    const latest = this.latest(d);
    if (latest.kind !== 'delta') return latest;
    if (d.squashed?.version === latest.version) return d.squashed;
    // Deltas that only add records after the ones before them (an import) are squashed from their bytes; the rest is
    // decoded and applied.
    const payload =
      squashAppended(d.base?.kind === 'snapshot' ? d.base.payload : undefined, d.deltas) ??
      encodeDomainSnapshotFast(this.latestState(d));
    d.stateBytes = payload.length;
    d.stateExact = true;
    d.squashed = {
      version: latest.version,
      domain: d,
      kind: 'snapshot',
      payload,
      removedRecordIds: [],
      removedRuleIds: [],
      superseded: false,
    };
    return d.squashed;
  }

  /**
   * The decoded whole state at the domain's latest version: the cached state (or the decoded base) with the deltas
   * after it applied in one pass. A domain whose deltas have no whole snapshot before them (never published whole)
   * starts from nothing.
   */
  private latestState(d: DomainLog): DomainSnapshot {
    let state = d.state;
    if (!state || state.version < (d.base?.version ?? 0)) {
      if (d.base?.kind === 'snapshot')
        state = { version: d.base.version, snapshot: decodeDomainSnapshotFast(d.base.payload) };
      else {
        const first = decodeDomainSnapshotFast(d.deltas[0]!.payload);
        state = {
          version: 0,
          snapshot: { ...first, zone: { ...first.zone, records: [] }, ruleSet: { ...first.ruleSet, rules: [] } },
        };
      }
    }
    const from = state.version;
    const pending = d.deltas.filter((x) => x.version > from);
    const snapshot = applyDeltas(
      state.snapshot,
      pending.map((x) => ({
        version: x.version,
        domain: d.name,
        deleted: false,
        delta: true,
        snapshot: decodeDomainSnapshotFast(x.payload),
        removedRecordIds: x.removedRecordIds,
        removedRuleIds: x.removedRuleIds,
      })),
    );
    d.state = { version: this.latest(d).version, snapshot };
    this.decoded.delete(d);
    this.decoded.add(d);
    if (this.decoded.size > DECODED_STATES) this.forgetState(this.decoded.values().next().value!);
    return snapshot;
  }

  private forgetState(d: DomainLog): void {
    d.state = undefined;
    this.decoded.delete(d);
  }

  private latest(d: DomainLog): Item {
    return d.deltas[d.deltas.length - 1] ?? d.base!;
  }

  private encode(it: Item): Uint8Array {
    it.encoded ??= encodeConfigEntry({
      version: it.version,
      domain: it.domain.name,
      deleted: it.kind === 'tombstone',
      ...(it.kind === 'delta'
        ? { delta: true, removedRecordIds: it.removedRecordIds, removedRuleIds: it.removedRuleIds }
        : {}),
      snapshotBytes: it.payload,
    });
    return it.encoded;
  }

  private supersede(it: Item): void {
    if (it.superseded) return;
    it.superseded = true;
    this.supersededCount++;
  }

  /** Drops superseded items once they are half the list (amortised linear). */
  private sweep(): void {
    if (this.supersededCount * 2 <= this.items.length) return;
    let w = 0;
    for (const it of this.items) if (!it.superseded) this.items[w++] = it;
    this.items.length = w;
    this.supersededCount = 0;
  }

  /** Index of the first item with version > v (binary search). */
  private firstAfter(v: number): number {
    let lo = 0;
    let hi = this.items.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.items[mid]!.version <= v) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a === b || (a.length === b.length && Buffer.from(a.buffer, a.byteOffset, a.length).equals(b));
}
