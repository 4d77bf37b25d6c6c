// The node store's on-disk layout version, and the move from an older layout when a node is upgraded.
import type { Database, RootDatabase } from 'lmdb';
import type { Logger } from '../logger.js';
import { decodeDomainSnapshot, type DomainSnapshot } from '../config/index.js';

export const VERSION_KEY = 'version';
export const LAYOUT_KEY = 'layout';
/**
 * 1 (no layout key): one encoded snapshot per domain in the `snapshots` database.
 * 2: per domain a header in `domains`, each record in `records` and each rule in `rules`, keyed [domain, id].
 * 3: as 2, but the records in blocks of ids in `record-blocks`, keyed [domain, block] (record-blocks.ts).
 */
export const STORE_LAYOUT = 3;

export interface LayoutOps {
  /** Empties the databases of the current layout (inside a transaction). */
  clear(): void;
  /** Writes one domain whole in the current layout (inside a transaction). */
  writeSnapshot(domain: string, snapshot: DomainSnapshot, bytes: Uint8Array): void;
  /** Moves layout 2's records into blocks (inside a transaction); returns how many. */
  blocksFromLayout2(): number;
}

/**
 * Brings the store to STORE_LAYOUT in one transaction. A layout-1 store is converted in place and keeps its
 * version (the node serves what it held and resumes from it); a store it cannot convert, or one written by a newer
 * release with a layout this one does not know, is emptied with version 0, so the hub sends everything again.
 */
export function migrateLayout(root: RootDatabase, meta: Database<number, string>, log: Logger, ops: LayoutOps): void {
  const layout = meta.get(LAYOUT_KEY);
  if (layout === STORE_LAYOUT) return;
  if (layout === 2) {
    // Converted in place, keeping the version: the node serves what it held and resumes from it.
    let moved = 0;
    root.transactionSync(() => {
      if (meta.get(LAYOUT_KEY) !== 2) return; // (another process on the same path converted it meanwhile)
      moved = ops.blocksFromLayout2();
      meta.putSync(LAYOUT_KEY, STORE_LAYOUT);
    });
    log.info({ records: moved }, 'node store converted to layout 3 (records in blocks)');
    return;
  }
  if (layout !== undefined) {
    root.transactionSync(() => {
      ops.clear();
      meta.putSync(VERSION_KEY, 0);
      meta.putSync(LAYOUT_KEY, STORE_LAYOUT);
    });
    log.warn({ found: layout, expected: STORE_LAYOUT }, 'node store has an unknown layout; rebuilding it from the hub');
    return;
  }
  const old: Database<Buffer, string> = root.openDB({ name: 'snapshots', encoding: 'binary' });
  let domains = 0;
  let failed: unknown;
  root.transactionSync(() => {
    try {
      for (const { key, value } of old.getRange()) {
        ops.writeSnapshot(key, decodeDomainSnapshot(value), value);
        domains++;
      }
    } catch (err) {
      failed = err;
      ops.clear();
      meta.putSync(VERSION_KEY, 0);
    }
    old.dropSync();
    meta.putSync(LAYOUT_KEY, STORE_LAYOUT);
  });
  if (failed) log.warn({ err: failed }, 'node store of layout 1 could not be converted; rebuilding it from the hub');
  else if (domains > 0) log.info({ domains }, `node store converted to layout ${STORE_LAYOUT}`);
}
