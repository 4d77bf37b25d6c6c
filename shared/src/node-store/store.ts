// The node-side config store: per-domain snapshot bytes in LMDB, each entry applied in one transaction with its version.
import { open, type Database, type RootDatabase } from 'lmdb';
import { componentLogger } from '../logger.js';
import {
  decodeDomainSnapshot,
  splitConfigEntry,
  encodeDomainSnapshot,
  type ConfigEntry,
  type DomainSnapshot,
} from '../config/index.js';

/** What a listener learns after an entry is committed. `snapshot` is the decoded snapshot (absent for tombstones). */
export interface AppliedEvent {
  version: number;
  domain: string;
  deleted: boolean;
  snapshot?: DomainSnapshot;
}

export type AppliedListener = (e: AppliedEvent) => void;

export interface NodeStore {
  /** The last version applied (0 for an empty store). Read from LMDB, so other processes on the same path see it too. */
  readonly version: number;
  getSnapshot(domain: string): DomainSnapshot | undefined;
  /** The stored (encoded) snapshot bytes, as received from the hub. */
  getSnapshotBytes(domain: string): Uint8Array | undefined;
  domains(): string[];
  /** Applies one entry in one LMDB transaction together with its version; entries with version <= current are ignored. */
  apply(entry: ConfigEntry): void;
  /** Applies encoded ConfigEntry messages (as the hub sends them) in ONE transaction; older versions are skipped. */
  applyEncoded(entries: readonly Uint8Array[]): void;
  /**
   * Drops every snapshot and sets the version to 0 in one transaction; listeners hear a deletion (version 0) per domain.
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

const VERSION_KEY = 'version';
const log = componentLogger('node-store');

/** Opens (creating if needed) the LMDB store at `path`. */
export function openNodeStore(path: string, opts: { durability?: NodeStoreDurability } = {}): NodeStore {
  const durability = opts.durability ?? 'data';
  const root: RootDatabase = open({ path, noMetaSync: durability !== 'full', noSync: durability === 'none' });
  const snapshots: Database<Buffer, string> = root.openDB({ name: 'snapshots', encoding: 'binary' });
  const meta: Database<number, string> = root.openDB({ name: 'meta' });
  const listeners = new Set<AppliedListener>();
  const currentVersion = () => meta.get(VERSION_KEY) ?? 0;

  type Pending = { version: number; domain: string; deleted: boolean; bytes?: Uint8Array; snapshot?: DomainSnapshot };

  function commit(batch: Pending[]): void {
    if (batch.length === 0) return;
    root.transactionSync(() => {
      for (const p of batch) {
        if (p.deleted) snapshots.removeSync(p.domain);
        else if (p.bytes)
          snapshots.putSync(p.domain, Buffer.from(p.bytes.buffer, p.bytes.byteOffset, p.bytes.byteLength));
      }
      meta.putSync(VERSION_KEY, batch[batch.length - 1]!.version);
    });
    for (const p of batch) {
      const event: AppliedEvent = { version: p.version, domain: p.domain, deleted: p.deleted };
      if (p.snapshot) event.snapshot = p.snapshot;
      for (const l of listeners) {
        try {
          l(event);
        } catch (err) {
          log.error({ err, version: p.version, domain: p.domain }, 'onApplied listener failed');
        }
      }
    }
  }

  return {
    get version() {
      return currentVersion();
    },
    getSnapshot(domain) {
      const bytes = snapshots.get(domain);
      return bytes ? decodeDomainSnapshot(bytes) : undefined;
    },
    getSnapshotBytes(domain) {
      return snapshots.get(domain);
    },
    domains() {
      return [...snapshots.getKeys()] as string[];
    },
    apply(entry) {
      if (entry.version <= currentVersion()) return;
      const p: Pending = { version: entry.version, domain: entry.domain, deleted: entry.deleted };
      if (!entry.deleted && entry.snapshot) {
        p.snapshot = entry.snapshot;
        p.bytes = encodeDomainSnapshot(entry.snapshot);
      }
      commit([p]);
    },
    applyEncoded(entries) {
      let last = currentVersion();
      const batch: Pending[] = [];
      for (const bytes of entries) {
        const e = splitConfigEntry(bytes);
        if (e.version <= last) continue;
        last = e.version;
        const p: Pending = { version: e.version, domain: e.domain, deleted: e.deleted };
        if (!e.deleted) {
          try {
            p.snapshot = decodeDomainSnapshot(e.snapshotBytes);
            p.bytes = e.snapshotBytes;
          } catch (err) {
            // A snapshot this node cannot read: keep serving the previous one, but move past the version (STYLE.md §5).
            log.error(
              { err, version: e.version, domain: e.domain },
              'unreadable snapshot skipped; keeping the previous one',
            );
          }
        }
        batch.push(p);
      }
      commit(batch);
    },
    reset() {
      const gone = [...snapshots.getKeys()] as string[];
      root.transactionSync(() => {
        snapshots.clearSync();
        meta.putSync(VERSION_KEY, 0);
      });
      for (const domain of gone) {
        for (const l of listeners) {
          try {
            l({ version: 0, domain, deleted: true });
          } catch (err) {
            log.error({ err, domain }, 'onApplied listener failed');
          }
        }
      }
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
