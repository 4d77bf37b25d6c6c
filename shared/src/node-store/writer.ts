// The node store's writes, shared by the thread that serves (small batches) and the writer thread (large ones): the
// LMDB databases of layout 3, and one batch of encoded entries applied in ONE transaction together with the version.
import type { Database, RootDatabase } from 'lmdb';
import type { Logger } from '../logger.js';
import {
  decodeDomainSnapshot,
  decodeRule,
  encodeSnapshotHeader,
  sliceSnapshotParts,
  splitConfigEntry,
  splitSnapshot,
  zoneRecordId,
  type DomainSnapshot,
} from '../config/index.js';
import { VERSION_KEY } from './layout.js';
import { NO_IDS, blockOf, changedBlock, encodeBlock, groupByBlock, type RecordPart } from './record-blocks.js';

export interface StoreDatabases {
  meta: Database<number, string>;
  headers: Database<Buffer, string>;
  /** A domain's records in blocks of ids (record-blocks.ts), keyed [domain, block number]. */
  records: Database<Buffer, [string, number]>;
  rules: Database<Buffer, [string, number]>;
}

export function openDatabases(root: RootDatabase): StoreDatabases {
  return {
    meta: root.openDB({ name: 'meta' }),
    headers: root.openDB({ name: 'domains', encoding: 'binary' }),
    records: root.openDB({ name: 'record-blocks', encoding: 'binary' }),
    rules: root.openDB({ name: 'rules', encoding: 'binary' }),
  };
}

/** What one committed entry changed (an AppliedEvent without `deleted`), or a skipped entry's version. */
export interface WrittenEntry {
  version: number;
  domain: string;
  kind: 'snapshot' | 'delta' | 'deleted';
  /** Delta only: records written, then records removed. */
  recordIds: number[];
  ruleIds: number[];
  recordCount: number;
  /** The entry could not be read: only the version moved (no listener hears it). */
  skipped: boolean;
}

/** Keys of records and rules: [domain, id]. Numbers sort before strings, so this range holds one domain's ids. */
export const idRange = (domain: string) => ({ start: [domain, -Infinity], end: [domain, Infinity] });

type Part = RecordPart;

/** An entry decoded enough to be written. */
interface Pending {
  version: number;
  domain: string;
  kind: WrittenEntry['kind'];
  /** Absent in a delta that carries no snapshot (the stored header stays), or an unreadable entry (skipped). */
  header?: Uint8Array;
  records: Part[];
  rules: Part[];
  removedRecordIds: number[];
  removedRuleIds: number[];
  /** The entry could not be read: only the version moves. */
  skip?: boolean;
}

export interface StoreWriter {
  /** Applies encoded ConfigEntry messages in ONE transaction (entries at or below the stored version are skipped). */
  applyBatch(entries: readonly Uint8Array[]): WrittenEntry[];
  /** Inside a transaction: empties the databases. */
  clear(): void;
  /** Inside a transaction: replaces one domain whole (the layout migration). */
  writeSnapshot(domain: string, snapshot: DomainSnapshot, bytes: Uint8Array): void;
  /** Inside a transaction: moves the records of layout 2 (one value per record, keyed [domain, id], in the database
   *  `records`) into blocks, and drops that database; returns the records moved. */
  blocksFromLayout2(): number;
}

export function storeWriter(root: RootDatabase, dbs: StoreDatabases, log: Logger): StoreWriter {
  const { meta, headers, records, rules } = dbs;

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

  /** A domain's records replaced whole: its blocks written, and those it no longer has removed. */
  function replaceRecords(domain: string, parts: readonly Part[]): void {
    const blocks = groupByBlock(parts);
    removeIds(records, domain, new Set(blocks.keys()));
    for (const [b, list] of blocks) records.putSync([domain, b], encodeBlock(list));
  }

  /** A delta's records: the ids removed, then the records written, each block touched read and written once. */
  function changeRecords(domain: string, removedIds: readonly number[], parts: readonly Part[]): void {
    const removed = new Map<number, Set<number>>();
    for (const id of removedIds) {
      const b = blockOf(id);
      const ids = removed.get(b);
      if (ids) ids.add(id);
      else removed.set(b, new Set([id]));
    }
    const written = groupByBlock(parts);
    for (const b of new Set([...removed.keys(), ...written.keys()])) {
      const key: [string, number] = [domain, b];
      const before = records.get(key);
      const gone = removed.get(b);
      // A block not held yet, nothing removed from it (most of an import): its records as given.
      const after = !before && !gone ? written.get(b)! : changedBlock(before, gone ?? NO_IDS, written.get(b) ?? []);
      if (after.length > 0) records.putSync(key, encodeBlock(after));
      else if (before) records.removeSync(key);
    }
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
      replaceRecords(domain, p.records);
      removeIds(rules, domain, new Set(p.rules.map((r) => r.id)));
    } else {
      if (!headers.doesExist(domain))
        log.warn({ version: p.version, domain }, 'delta for a domain this store does not hold; applied onto nothing');
      if (p.header) headers.putSync(domain, asBuffer(p.header));
      // Removals first: an id both removed and written by one delta ends up written.
      changeRecords(domain, p.removedRecordIds, p.records);
      for (const id of p.removedRuleIds) rules.removeSync([domain, id]);
    }
    putParts(rules, domain, p.rules);
  }

  return {
    applyBatch(entries) {
      const written: WrittenEntry[] = [];
      root.transactionSync(() => {
        // The version is read inside the transaction: batches written by either thread apply in order, once.
        let last = meta.get(VERSION_KEY) ?? 0;
        for (const bytes of entries) {
          const e = splitConfigEntry(bytes);
          if (e.version <= last) continue;
          last = e.version;
          const p = readEntry(e, log);
          write(p);
          written.push({
            version: p.version,
            domain: p.domain,
            kind: p.kind,
            recordIds: p.kind === 'delta' ? [...p.records.map((r) => r.id), ...p.removedRecordIds] : [],
            ruleIds: p.kind === 'delta' ? [...p.rules.map((r) => r.id), ...p.removedRuleIds] : [],
            recordCount: p.records.length,
            skipped: p.skip === true,
          });
        }
        if (written.length > 0) meta.putSync(VERSION_KEY, last);
      });
      return written;
    },
    clear() {
      headers.clearSync();
      records.clearSync();
      rules.clearSync();
    },
    writeSnapshot(domain, snapshot, bytes) {
      const p = snapshotParts(snapshot, bytes);
      headers.putSync(domain, asBuffer(encodeSnapshotHeader(snapshot)));
      replaceRecords(domain, p.records);
      removeIds(rules, domain, new Set(p.rules.map((r) => r.id)));
      putParts(rules, domain, p.rules);
    },
    blocksFromLayout2() {
      const old: Database<Buffer, [string, number]> = root.openDB({ name: 'records', encoding: 'binary' });
      let domain = '';
      let block = NaN;
      let parts: RecordPart[] = [];
      let moved = 0;
      const flush = () => {
        if (parts.length > 0) records.putSync([domain, block], encodeBlock(parts));
        parts = [];
      };
      // Keys in order: each domain's ids increasing, so each block's records come together and in order.
      for (const { key, value } of old.getRange()) {
        const [d, id] = key;
        if (d !== domain || blockOf(id) !== block) {
          flush();
          domain = d;
          block = blockOf(id);
        }
        parts.push({ id, bytes: Buffer.from(value) });
        moved++;
      }
      flush();
      old.dropSync();
      return moved;
    },
  };
}

/** Decodes an entry (checking its snapshot) into what the transaction writes. */
function readEntry(e: ReturnType<typeof splitConfigEntry>, log: Logger): Pending {
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
