// The node-side config store in LMDB: per domain its header (every snapshot field but records and rules), its records
// in blocks of ids (record-blocks.ts) and each rule under its own key, so that a delta entry is applied in one
// transaction touching only the blocks and rules it names.
import type { Worker } from 'node:worker_threads';
import { open, type Database, type RootDatabase } from 'lmdb';
import { componentLogger } from '../logger.js';
import {
  decodeDomainSnapshot,
  decodeRule,
  decodeZoneRecord,
  decodeZoneRecordCore,
  encodeConfigEntry,
  splitConfigEntry,
  type ConfigEntry,
  type DomainSnapshot,
  type Rule,
  type ZoneRecord,
  type ZoneRecordCore,
} from '../config/index.js';
import { LAYOUT_KEY, STORE_LAYOUT, VERSION_KEY, migrateLayout } from './layout.js';
import { idRange, openDatabases, storeWriter, type WrittenEntry } from './writer.js';
import type { FromWriter, ToWriter, WriterData } from './writer-protocol.js';
import { startModuleWorker } from '../worker-thread.js';
import { snapshotRecords } from './received.js';
import { blockOf, blockRecords, findInBlock } from './record-blocks.js';

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
  /**
   * The entry's records as this process received them, read from the entry's bytes rather than back from the store
   * (absent for a deletion, or an entry without records): a snapshot's whole zone, or a delta's records written (the
   * `recordCount` first of `recordIds`) and the ids it removed (the rest). Call it while handling the event or later
   * (it keeps the entry's bytes until dropped); each record iterated is the SAME object, overwritten by the next
   * (readDomain's rule). What it gives is this entry alone: a later entry of the same batch is heard after it.
   */
  received?: () => ReceivedRecords;
}

/** AppliedEvent.received: what one entry wrote, from its bytes. */
export interface ReceivedRecords {
  /** Records written (a snapshot's whole zone), in the entry's order. */
  records: Iterable<ZoneRecordCore>;
  /** A delta's removed record ids ([] for a snapshot). */
  removedRecordIds: readonly number[];
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
   * Each record read is the SAME object, overwritten by the next (only its ZoneRecordCore fields: a large zone's
   * million records read back make no object each): copy what you keep before reading on.
   */
  readDomain(domain: string): { header: DomainSnapshot; records: Iterable<ZoneRecordCore>; close(): void } | undefined;
  /** Every rule of a domain, in id order. */
  getRules(domain: string): Rule[];
  domains(): string[];
  /** Applies one entry in one LMDB transaction together with its version; entries with version <= current are ignored. */
  apply(entry: ConfigEntry): Promise<void>;
  /**
   * Applies encoded ConfigEntry messages (as the hub sends them) in ONE transaction; older versions are skipped.
   * Batches apply in the order given. A small batch, when no earlier one is still being written, is written before
   * this returns (listeners heard it, or it threw). A large one (`offThreadBytes`), or any batch behind one still
   * being written, is written on the store's writer thread while this thread goes on serving what was committed; the
   * promise resolves once it is committed (durable as `durability` says) and listeners heard it. A failed batch
   * rejects, and so does every batch given after it and before the failure (they would apply with a gap): apply
   * again from `version`.
   */
  applyEncoded(entries: readonly Uint8Array[]): Promise<void>;
  /** Resolves when every batch given so far is written or failed (never rejects). */
  idle(): Promise<void>;
  /**
   * Drops every domain and sets the version to 0 in one transaction; listeners hear a deletion (version 0) per domain.
   * Used when the hub's log is behind this store (a control plane restored or replaced): the store is rebuilt from it.
   * Ordered after the batches given before it (immediate when none is being written).
   */
  reset(): Promise<void>;
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

/** Batches of at least this many bytes are written on the writer thread (about 100 ms of writing on this thread). */
const OFF_THREAD_BYTES = 1 << 20;
/** The writer thread ends after this long without a batch. */
const WRITER_IDLE_MS = 10_000;

export interface NodeStoreOptions {
  durability?: NodeStoreDurability;
  /** Batches of at least this many bytes are written on the writer thread (default 1 MiB; Infinity: never). */
  offThreadBytes?: number;
  /**
   * Keep the writer thread started: at open, and again as soon as an idle one ends (which drops the last batch's
   * heap). A large batch then does not wait for the thread's start (under tsx its loader and modules: 1–2 s of CPU
   * on a loaded machine, on the path from the entry to the zone served), at the cost of an idle thread. Default false:
   * started at the first large batch.
   */
  writerReady?: boolean;
}

/** Opens (creating if needed) the LMDB store at `path`. */
export function openNodeStore(path: string, opts: NodeStoreOptions = {}): NodeStore {
  const durability = opts.durability ?? 'data';
  const offThreadBytes = opts.offThreadBytes ?? OFF_THREAD_BYTES;
  const root: RootDatabase = open({ path, noMetaSync: durability !== 'full', noSync: durability === 'none' });
  const dbs = openDatabases(root);
  const { meta, headers, records, rules } = dbs;
  const writer = storeWriter(root, dbs, log);
  const listeners = new Set<AppliedListener>();
  const currentVersion = () => meta.get(VERSION_KEY) ?? 0;
  migrateLayout(root, meta, log, writer);

  // Batches given while an earlier one is still being written wait here, in order. A batch that fails fails those
  // given before its failure was known (their epoch is older): applied after it, they would leave a gap.
  let tail: Promise<void> = Promise.resolve();
  let queued = 0;
  let epoch = 0;
  function enqueue(run: () => void | Promise<void>): Promise<void> {
    const mine = epoch;
    queued++;
    const done = tail
      .then(async () => {
        if (mine !== epoch) throw new Error('not applied: an earlier batch failed to be written');
        try {
          await run();
        } catch (err) {
          epoch++;
          throw err;
        }
      })
      .finally(() => {
        queued--;
      });
    tail = done.catch(() => undefined);
    return done;
  }

  const thread = writerThread({ path, durability }, opts.writerReady === true);

  function heard(written: readonly WrittenEntry[], entries: readonly Uint8Array[]): void {
    // The snapshot bytes of the batch's entries by version, split only when a listener asks for an entry's records.
    let snapshots: Map<number, Uint8Array> | undefined;
    const snapshotOf = (version: number): Uint8Array => {
      if (!snapshots) {
        snapshots = new Map();
        for (const bytes of entries) {
          const e = splitConfigEntry(bytes);
          snapshots.set(e.version, e.snapshotBytes);
        }
      }
      return snapshots.get(version)!;
    };
    for (const w of written) {
      if (w.skipped) continue;
      const recordIds = w.recordIds;
      const received =
        w.kind === 'deleted' || w.recordCount === 0
          ? undefined
          : (): ReceivedRecords => ({
              records: snapshotRecords(snapshotOf(w.version)),
              removedRecordIds: w.kind === 'delta' ? recordIds.slice(w.recordCount) : [],
            });
      notify({
        version: w.version,
        domain: w.domain,
        kind: w.kind,
        deleted: w.kind === 'deleted',
        recordIds,
        ruleIds: w.ruleIds,
        recordCount: w.recordCount,
        received,
      });
    }
  }

  async function writeOffThread(entries: readonly Uint8Array[]): Promise<void> {
    const before = currentVersion();
    let written: WrittenEntry[];
    try {
      written = await thread.write(entries);
      // This thread's read snapshot may predate the writer thread's commit (lmdb-js renews it once per turn).
      root.resetReadTxn();
    } catch (err) {
      root.resetReadTxn();
      // The thread may have died between its commit and its answer: then the batch did apply (the version moved
      // with it, in one transaction), and listeners hear each of its domains as replaced whole.
      if (currentVersion() === before) throw err;
      log.error({ err }, 'node store writer thread failed after its commit; reading the domains it wrote whole');
      written = entries
        .map((bytes) => splitConfigEntry(bytes))
        .filter((e) => e.version > before)
        .map((e) => ({
          version: e.version,
          domain: e.domain,
          kind: headers.doesExist(e.domain) ? 'snapshot' : 'deleted',
          recordIds: [],
          ruleIds: [],
          recordCount: 0,
          skipped: false,
        }));
    }
    heard(written, entries);
  }

  function resetNow(): void {
    const gone = [...headers.getKeys()] as string[];
    root.transactionSync(() => {
      writer.clear();
      meta.putSync(VERSION_KEY, 0);
      meta.putSync(LAYOUT_KEY, STORE_LAYOUT);
    });
    for (const domain of gone)
      notify({ version: 0, domain, kind: 'deleted', deleted: true, recordIds: [], ruleIds: [], recordCount: 0 });
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
          for (const r of blockRecords(value)) s.zone.records.push(decodeZoneRecord(r.bytes));
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
      const block = records.get([domain, blockOf(id)]);
      const bytes = block ? findInBlock(block, id) : undefined;
      return bytes ? decodeZoneRecord(bytes) : undefined;
    },
    getRule(domain, id) {
      const bytes = rules.get([domain, id]);
      return bytes ? decodeRule(bytes) : undefined;
    },
    getRecords(domain) {
      const out: ZoneRecord[] = [];
      for (const { value } of records.getRange(idRange(domain)))
        for (const r of blockRecords(value)) out.push(decodeZoneRecord(r.bytes));
      return out;
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
        const into: ZoneRecordCore = {
          id: 0,
          name: '',
          type: '',
          destination: '',
          ttl: 0,
          mxPriority: 0,
          proxied: false,
        };
        function* decoded(): Generator<ZoneRecordCore> {
          try {
            for (const { value } of range)
              for (const r of blockRecords(value)) yield decodeZoneRecordCore(r.bytes, into);
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
      return this.applyEncoded([encodeConfigEntry(entry)]);
    },
    applyEncoded(entries) {
      let bytes = 0;
      for (const e of entries) bytes += e.byteLength;
      const small = bytes < offThreadBytes;
      if (small && queued === 0) {
        heard(writer.applyBatch(entries), entries);
        return Promise.resolve();
      }
      return enqueue(() => (small ? heard(writer.applyBatch(entries), entries) : writeOffThread(entries)));
    },
    idle() {
      return tail;
    },
    reset() {
      if (queued === 0) {
        resetNow();
        return Promise.resolve();
      }
      return enqueue(resetNow);
    },
    onApplied(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    async close() {
      await tail;
      listeners.clear();
      await thread.close();
      await root.close();
    },
  };
}

/**
 * The store's writer thread: started at a large batch, unreferenced while it has nothing to do, and ended after
 * WRITER_IDLE_MS without a batch (its heap holds the last batch's pieces until it collects them).
 */
function writerThread(
  data: WriterData,
  ready: boolean,
): {
  write(entries: readonly Uint8Array[]): Promise<WrittenEntry[]>;
  close(): Promise<void>;
} {
  let worker: Worker | undefined;
  let idleTimer: NodeJS.Timeout | undefined;
  let nextId = 0;
  let shut = false;
  const waiting = new Map<number, { resolve: (w: WrittenEntry[]) => void; reject: (err: Error) => void }>();
  const failAll = (err: Error) => {
    for (const w of waiting.values()) w.reject(err);
    waiting.clear();
  };
  function start(): Worker {
    const w = startModuleWorker(import.meta.url, 'writer-thread', { workerData: data });
    w.on('message', (msg: FromWriter) => {
      if (msg.type === 'closed') return;
      const job = waiting.get(msg.id);
      waiting.delete(msg.id);
      if (waiting.size === 0) {
        w.unref();
        clearTimeout(idleTimer);
        idleTimer = setTimeout(() => void end().then(startReady), WRITER_IDLE_MS).unref();
      }
      if (!job) return;
      if (msg.type === 'failed') job.reject(Object.assign(new Error(msg.message), { stack: msg.stack }));
      else job.resolve(msg.written.map((e) => ({ ...e, recordIds: Array.from(e.recordIds) })));
    });
    // (A thread ended for being idle is no longer `worker`: the batches waiting are a newer thread's.)
    w.on('error', (err) => {
      log.error({ err }, 'node store writer thread failed');
      if (worker === w) failAll(err);
    });
    w.on('exit', (code) => {
      if (worker !== w) return;
      worker = undefined;
      failAll(new Error(`node store writer thread exited (code ${code})`));
    });
    return w;
  }
  /** writerReady: a thread started with nothing to do, unreferenced (it does not keep the process up). */
  function startReady(): void {
    if (!ready || shut || worker) return;
    worker = start();
    worker.unref();
  }
  startReady();
  return {
    write(entries) {
      // The entries laid end to end in one buffer, handed over (not copied again) to the thread.
      let total = 0;
      for (const e of entries) total += e.byteLength;
      const buffer = new ArrayBuffer(total);
      const bytes = new Uint8Array(buffer);
      const ends: number[] = [];
      let at = 0;
      for (const e of entries) {
        bytes.set(e, at);
        at += e.byteLength;
        ends.push(at);
      }
      const id = ++nextId;
      clearTimeout(idleTimer);
      worker ??= start();
      const w = worker;
      return new Promise<WrittenEntry[]>((resolve, reject) => {
        waiting.set(id, { resolve, reject });
        w.ref(); // a write in flight keeps the process up
        w.postMessage({ type: 'apply', id, buffer, ends } satisfies ToWriter, [buffer]);
      });
    },
    close() {
      shut = true;
      return end();
    },
  };
  async function end(): Promise<void> {
    clearTimeout(idleTimer);
    const w = worker;
    if (!w || waiting.size > 0) return; // (the store's close waits for its batches first)
    worker = undefined;
    const closed = new Promise<void>((resolve) => {
      w.on('message', (msg: FromWriter) => msg.type === 'closed' && resolve());
      w.once('exit', () => resolve());
    });
    w.ref();
    w.postMessage({ type: 'close' } satisfies ToWriter);
    await closed;
    await w.terminate();
  }
}
