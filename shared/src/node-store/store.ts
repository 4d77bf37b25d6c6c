// The node-side config store in LMDB: per domain its header (every snapshot field but records and rules), and each
// record and rule under its own key, so that a delta entry is applied in one transaction touching only what it names.
import { open, type Database, type RootDatabase } from 'lmdb';
import { componentLogger } from '../logger.js';
import {
  decodeDomainSnapshot,
  decodeRule,
  decodeZoneRecord,
  encodeConfigEntry,
  encodeSnapshotHeader,
  sliceSnapshotParts,
  splitConfigEntry,
  splitSnapshot,
  zoneRecordId,
  type ConfigEntry,
  type DomainSnapshot,
  type Rule,
  type ZoneRecord,
} from '../config/index.js';
import { LAYOUT_KEY, STORE_LAYOUT, VERSION_KEY, migrateLayout } from './layout.js';

/**
 * What a listener learns after an entry is committed. Listeners read what they need from the store, which holds
 * the state after the whole batch the entry came in (so a later entry of the same batch may already show).
 */
export interface AppliedEvent {
  version: number;
  domain: string;
  /** 'snapshot': the domain was replaced whole; 'delta': only `recordIds` and `ruleIds` changed (besides the
   *  header, which every delta carries whole); 'deleted': the domain is gone. */
  kind: 'snapshot' | 'delta' | 'deleted';
  /** Same as kind === 'deleted'. */
  deleted: boolean;
  /** Delta only: the records written or removed (read them with getRecord: undefined means removed). */
  recordIds: readonly number[];
  /** Delta only: the rules written or removed. */
  ruleIds: readonly number[];
  /** Records the entry wrote: a snapshot's whole zone, a delta's written records (0 for a deletion). */
  recordCount: number;
}

export type AppliedListener = (e: AppliedEvent) => void;

/** What a serving process needs to bring one domain up to date from the store (an AppliedEvent without its version). */
export type DomainChange = Pick<AppliedEvent, 'domain' | 'kind' | 'recordIds' | 'ruleIds'> &
  Partial<Pick<AppliedEvent, 'recordCount'>>;

/** The change that makes a consumer read the domain whole (at start, or when it cannot tell what changed). */
export function wholeDomain(domain: string): DomainChange {
  return { domain, kind: 'snapshot', recordIds: [], ruleIds: [] };
}

/** The DomainChange of an event, without the fields a worker message does not need. */
export function domainChange(e: AppliedEvent): DomainChange {
  return { domain: e.domain, kind: e.kind, recordIds: e.recordIds, ruleIds: e.ruleIds, recordCount: e.recordCount };
}

export interface NodeStore {
  /** The last version applied (0 for an empty store). Read from LMDB, so other processes on the same path see it too. */
  readonly version: number;
  /** The whole snapshot of a domain (records and rules in id order), or undefined. */
  getSnapshot(domain: string): DomainSnapshot | undefined;
  /** The domain's snapshot without records and rules (`zone.records` and `ruleSet.rules` empty), or undefined. */
  getHeader(domain: string): DomainSnapshot | undefined;
  getRecord(domain: string, id: number): ZoneRecord | undefined;
  getRule(domain: string, id: number): Rule | undefined;
  /** Every record of a domain, in id order. */
  getRecords(domain: string): ZoneRecord[];
  /**
   * The domain's header (as getHeader) and its records in id order, decoded as they are iterated, both from one read
   * snapshot that stays open until the records have all been read or `close()` is called (call it in any case: a
   * large zone is read across many turns of the event loop), or undefined when the store does not hold the domain.
   */
  readDomain(domain: string): { header: DomainSnapshot; records: Iterable<ZoneRecord>; close(): void } | undefined;
  /** Every rule of a domain, in id order. */
  getRules(domain: string): Rule[];
  domains(): string[];
  /** Applies one entry in one LMDB transaction together with its version; entries with version <= current are ignored. */
  apply(entry: ConfigEntry): void;
  /** Applies encoded ConfigEntry messages (as the hub sends them) in ONE transaction; older versions are skipped. */
  applyEncoded(entries: readonly Uint8Array[]): void;
  /**
   * Drops every domain and sets the version to 0 in one transaction; listeners hear a deletion (version 0) per domain.
   * Used when the hub's log is behind this store (a control plane restored or replaced): the store is rebuilt from it.
   */
  reset(): void;
  /** Registers a listener called after each applied entry commits; returns the function that removes it. */
  onApplied(listener: AppliedListener): () => void;
  close(): Promise<void>;
}

/**
 * How commits reach the disk. 'data' (default): data pages are synced, the meta page is not, so an OS crash or power
 * loss can undo the last transaction (entry and version together: the node fetches it again from the hub) but never
 * corrupts the store; a killed process loses nothing. 'full': both synced (two fsyncs per entry). 'none': no fsync
 * (fastest; an OS crash may corrupt the store, which is then deleted and re-synced).
 */
export type NodeStoreDurability = 'full' | 'data' | 'none';

const log = componentLogger('node-store');

/** Keys of records and rules: [domain, id]. Numbers sort before strings, so this range holds one domain's ids. */
const idRange = (domain: string) => ({ start: [domain, -Infinity], end: [domain, Infinity] });

type Part = { id: number; bytes: Uint8Array };

/** An entry decoded enough to be written. */
interface Pending {
  version: number;
  domain: string;
  kind: AppliedEvent['kind'];
  /** Absent in a delta that carries no snapshot (the stored header stays), or an unreadable entry (skipped). */
  header?: Uint8Array;
  records: Part[];
  rules: Part[];
  removedRecordIds: number[];
  removedRuleIds: number[];
  /** The entry could not be read: only the version moves. */
  skip?: boolean;
}

/** Opens (creating if needed) the LMDB store at `path`. */
export function openNodeStore(path: string, opts: { durability?: NodeStoreDurability } = {}): NodeStore {
  const durability = opts.durability ?? 'data';
  const root: RootDatabase = open({ path, noMetaSync: durability !== 'full', noSync: durability === 'none' });
  const meta: Database<number, string> = root.openDB({ name: 'meta' });
  const headers: Database<Buffer, string> = root.openDB({ name: 'domains', encoding: 'binary' });
  const records: Database<Buffer, [string, number]> = root.openDB({ name: 'records', encoding: 'binary' });
  const rules: Database<Buffer, [string, number]> = root.openDB({ name: 'rules', encoding: 'binary' });
  const listeners = new Set<AppliedListener>();
  const currentVersion = () => meta.get(VERSION_KEY) ?? 0;

  function clearAll(): void {
    headers.clearSync();
    records.clearSync();
    rules.clearSync();
  }
  migrateLayout(root, meta, log, {
    clear: clearAll,
    writeSnapshot: (domain, snapshot, bytes) => writeSnapshot(domain, snapshot, bytes),
  });

  function removeIds(db: Database<Buffer, [string, number]>, domain: string, keep?: ReadonlySet<number>): void {
    const doomed: Array<[string, number]> = [];
    for (const key of db.getKeys(idRange(domain))) {
      const k = key as [string, number];
      if (!keep?.has(k[1])) doomed.push(k);
    }
    for (const k of doomed) db.removeSync(k);
  }

  function putParts(db: Database<Buffer, [string, number]>, domain: string, parts: readonly Part[]): void {
    for (const p of parts) db.putSync([domain, p.id], asBuffer(p.bytes));
  }

  // Inside a transaction: replaces the domain whole.
  function writeSnapshot(domain: string, snapshot: DomainSnapshot, bytes: Uint8Array): void {
    const p = snapshotParts(snapshot, bytes);
    headers.putSync(domain, asBuffer(encodeSnapshotHeader(snapshot)));
    removeIds(records, domain, new Set(p.records.map((r) => r.id)));
    removeIds(rules, domain, new Set(p.rules.map((r) => r.id)));
    putParts(records, domain, p.records);
    putParts(rules, domain, p.rules);
  }

  function write(p: Pending): void {
    if (p.skip) return;
    const { domain } = p;
    if (p.kind === 'deleted') {
      headers.removeSync(domain);
      removeIds(records, domain);
      removeIds(rules, domain);
      return;
    }
    if (p.kind === 'snapshot') {
      headers.putSync(domain, asBuffer(p.header!));
      removeIds(records, domain, new Set(p.records.map((r) => r.id)));
      removeIds(rules, domain, new Set(p.rules.map((r) => r.id)));
    } else {
      if (!headers.doesExist(domain))
        log.warn({ version: p.version, domain }, 'delta for a domain this store does not hold; applied onto nothing');
      if (p.header) headers.putSync(domain, asBuffer(p.header));
      // Removals first: an id both removed and written by one delta ends up written.
      for (const id of p.removedRecordIds) records.removeSync([domain, id]);
      for (const id of p.removedRuleIds) rules.removeSync([domain, id]);
    }
    putParts(records, domain, p.records);
    putParts(rules, domain, p.rules);
  }

  function commit(batch: Pending[]): void {
    if (batch.length === 0) return;
    root.transactionSync(() => {
      for (const p of batch) write(p);
      meta.putSync(VERSION_KEY, batch[batch.length - 1]!.version);
    });
    for (const p of batch) {
      if (p.skip) continue;
      const event: AppliedEvent = {
        version: p.version,
        domain: p.domain,
        kind: p.kind,
        deleted: p.kind === 'deleted',
        recordIds: p.kind === 'delta' ? [...p.records.map((r) => r.id), ...p.removedRecordIds] : [],
        ruleIds: p.kind === 'delta' ? [...p.rules.map((r) => r.id), ...p.removedRuleIds] : [],
        recordCount: p.records.length,
      };
      notify(event);
    }
  }

  function notify(event: AppliedEvent): void {
    for (const l of listeners) {
      try {
        l(event);
      } catch (err) {
        log.error({ err, version: event.version, domain: event.domain }, 'onApplied listener failed');
      }
    }
  }

  function readAll<T>(db: Database<Buffer, [string, number]>, domain: string, decode: (b: Uint8Array) => T): T[] {
    const out: T[] = [];
    for (const { value } of db.getRange(idRange(domain))) out.push(decode(value));
    return out;
  }

  return {
    get version() {
      return currentVersion();
    },
    getSnapshot(domain) {
      // One read transaction: the header, records and rules of the same committed version.
      const txn = root.useReadTransaction();
      try {
        const header = headers.get(domain, { transaction: txn });
        if (!header) return undefined;
        const s = decodeDomainSnapshot(header);
        for (const { value } of records.getRange({ ...idRange(domain), transaction: txn }))
          s.zone.records.push(decodeZoneRecord(value));
        for (const { value } of rules.getRange({ ...idRange(domain), transaction: txn }))
          s.ruleSet.rules.push(decodeRule(value));
        return s;
      } finally {
        txn.done();
      }
    },
    getHeader(domain) {
      const header = headers.get(domain);
      return header ? decodeDomainSnapshot(header) : undefined;
    },
    getRecord(domain, id) {
      const bytes = records.get([domain, id]);
      return bytes ? decodeZoneRecord(bytes) : undefined;
    },
    getRule(domain, id) {
      const bytes = rules.get([domain, id]);
      return bytes ? decodeRule(bytes) : undefined;
    },
    getRecords(domain) {
      return readAll(records, domain, decodeZoneRecord);
    },
    getRules(domain) {
      return readAll(rules, domain, decodeRule);
    },
    readDomain(domain) {
      const txn = root.useReadTransaction();
      let open = true;
      const finish = () => {
        if (!open) return;
        open = false;
        txn.done();
      };
      try {
        const header = headers.get(domain, { transaction: txn });
        if (!header) {
          finish();
          return undefined;
        }
        const range = records.getRange({ ...idRange(domain), transaction: txn });
        function* decoded(): Generator<ZoneRecord> {
          try {
            for (const { value } of range) yield decodeZoneRecord(value);
          } finally {
            finish();
          }
        }
        const gen = decoded();
        const close = () => {
          gen.return(undefined); // ends the range's cursor when the records were not all read
          finish();
        };
        return { header: decodeDomainSnapshot(header), records: gen, close };
      } catch (err) {
        finish();
        throw err;
      }
    },
    domains() {
      return [...headers.getKeys()] as string[];
    },
    apply(entry) {
      this.applyEncoded([encodeConfigEntry(entry)]);
    },
    applyEncoded(entries) {
      let last = currentVersion();
      const batch: Pending[] = [];
      for (const bytes of entries) {
        const e = splitConfigEntry(bytes);
        if (e.version <= last) continue;
        last = e.version;
        batch.push(readEntry(e));
      }
      commit(batch);
    },
    reset() {
      const gone = [...headers.getKeys()] as string[];
      root.transactionSync(() => {
        clearAll();
        meta.putSync(VERSION_KEY, 0);
        meta.putSync(LAYOUT_KEY, STORE_LAYOUT);
      });
      for (const domain of gone)
        notify({ version: 0, domain, kind: 'deleted', deleted: true, recordIds: [], ruleIds: [], recordCount: 0 });
    },
    onApplied(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    async close() {
      listeners.clear();
      await root.close();
    },
  };
}

/** Decodes an entry (checking its snapshot) into what the transaction writes. */
function readEntry(e: ReturnType<typeof splitConfigEntry>): Pending {
  const p: Pending = {
    version: e.version,
    domain: e.domain,
    kind: e.deleted ? 'deleted' : e.delta ? 'delta' : 'snapshot',
    records: [],
    rules: [],
    removedRecordIds: e.delta ? e.removedRecordIds : [],
    removedRuleIds: e.delta ? e.removedRuleIds : [],
  };
  if (p.kind === 'deleted' || (p.kind === 'delta' && e.snapshotBytes.length === 0)) return p;
  try {
    // The records are checked and keyed without being decoded: a large zone's entry holds a million of them.
    const parts = splitSnapshot(e.snapshotBytes);
    p.header = encodeSnapshotHeader(decodeDomainSnapshot(parts.header));
    p.records = parts.records.map((bytes) => ({ id: zoneRecordId(bytes), bytes }));
    p.rules = parts.rules.map((bytes) => ({ id: decodeRule(bytes).id, bytes }));
  } catch (err) {
    // A snapshot this node cannot read: keep serving what it holds, but move past the version (STYLE.md §5).
    log.error({ err, version: e.version, domain: e.domain }, 'unreadable entry skipped; keeping what the store holds');
    p.skip = true;
  }
  return p;
}

/** The records and rules of a decoded snapshot with their encoded bytes, sliced from `bytes` without re-encoding. */
function snapshotParts(snapshot: DomainSnapshot, bytes: Uint8Array): { records: Part[]; rules: Part[] } {
  const slices = sliceSnapshotParts(bytes);
  const pair = <T extends { id: number }>(items: T[], raw: Uint8Array[]): Part[] => {
    if (raw.length !== items.length) throw new Error('snapshot parts do not match its decoded lists');
    return items.map((item, i) => ({ id: item.id, bytes: raw[i]! }));
  };
  return { records: pair(snapshot.zone.records, slices.records), rules: pair(snapshot.ruleSet.rules, slices.rules) };
}

function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}
