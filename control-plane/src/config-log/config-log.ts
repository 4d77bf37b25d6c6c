// The config log: an append-only, versioned list of per-domain changes (deltas, whole snapshots, tombstones), written
// in the same transaction as the change, compacted by the sync hub.
import { and, asc, eq, gt, inArray, lt, lte, sql } from 'drizzle-orm';
import { encodeDomainSnapshotFast } from '@platform/shared/config';
import type { Db, Tx } from '../db/index.js';
import { compiled } from '../db/compiled.js';
import { rowsOf } from '../db/migrate.js';
import { configLog, configLogHorizon } from '../db/schema.js';
import { ApiError } from '../errors.js';
import { WHOLE_DELTA, type Compacted } from './compacted.js';
import { configFromRow, readDomainConfig, type DomainConfigRow } from './snapshot.js';
import { keyVault, type KeyVault } from '../areas/ssl/key-vault.js';

/**
 * Key of the transaction-scoped advisory lock that serialises appends: a version is drawn from the sequence only
 * while holding it, and it is released at commit, so versions become visible in increasing order. A reader that
 * has seen version 7 never later finds a 6 (the hub's tail relies on this).
 */
export const CONFIG_LOG_LOCK_KEY = 727_006;

/**
 * Default per-domain limit of the compiled config (records and rules as nodes receive them), checked at write time.
 * A 10,000-record zone is about 0.6 MB; the sync frame limit (MAX_SYNC_FRAME_BYTES, 256 MiB) leaves room above it.
 */
export const DOMAIN_CONFIG_MAX_BYTES = 16 * 1024 * 1024;

/** One stored entry as the hub streams it. */
export interface StoredEntry {
  version: number;
  domainName: string;
  deleted: boolean;
  /** True when `payload` holds only the records and rules the change wrote (with the domain-level fields whole). */
  delta: boolean;
  removedRecordIds: number[];
  removedRuleIds: number[];
  /** Encoded DomainSnapshot (empty for a tombstone). */
  payload: Uint8Array;
}

export type NudgeListener = () => void;

export interface AppendOptions {
  /**
   * The append ends the transaction: it is committed with the append's own statement (on Postgres one round trip
   * for both, db/pg-prepared.ts), and nothing may run in the transaction after it (the write path's last step,
   * change-domain.ts). The caller's transaction() then commits nothing more.
   */
  commit?: boolean;
}

/**
 * What one write changed of what nodes serve. The config log turns it into ONE entry: a delta carrying the named
 * records and rules (read back inside the transaction) with the domain-level fields whole, or a whole snapshot.
 * An empty change appends nothing.
 */
export interface ConfigChange {
  /** Records inserted or updated, by id. */
  upsertedRecords?: readonly number[];
  /** Records deleted, by id. */
  removedRecords?: readonly number[];
  /** Rules inserted or updated, by id. */
  upsertedRules?: readonly number[];
  /** Rules deleted, by id. */
  removedRules?: readonly number[];
  /** A domain-level field nodes read changed (state, dns_mode, settings, developer mode, cache purges, plan). */
  domain?: boolean;
  /** Send the domain whole (creation, a plan change, anything not expressible as the above). */
  whole?: boolean;
  /**
   * The domain's config as the change's own statement read it while bumping the zone serial (snapshot.ts
   * domainConfigColumns, under the domain's lock, after the change), with exactly the records of `upsertedRecords`
   * and the rules of `upsertedRules`: the entry is built from it and nothing is read again (a single record create
   * is one statement fewer). Ignored for `whole`.
   */
  read?: DomainConfigRow;
}

/** True when the change touches nothing nodes serve. */
export function isEmptyChange(c: ConfigChange): boolean {
  return (
    !c.whole &&
    !c.domain &&
    !c.upsertedRecords?.length &&
    !c.removedRecords?.length &&
    !c.upsertedRules?.length &&
    !c.removedRules?.length
  );
}

/** Payloads kept in memory for the in-process hub, at most this many (older ones are read from the database). */
const RECENT_PAYLOADS = 1024;

export interface ConfigLogOptions {
  /** Per-domain compiled-config limit in bytes (DOMAIN_CONFIG_MAX_BYTES). */
  maxDomainConfigBytes?: number;
  /** Opens stored certificate keys and seals them for nodes; absent: snapshots carry no certificates. */
  vault?: KeyVault;
}

export class ConfigLog {
  private readonly listeners = new Set<NudgeListener>();
  /**
   * Payloads this process appended, by version, kept while a hub listens so that its tail reads only the small
   * header columns: decoding a bytea of a large zone costs more than the rest of the path (bench/sync/propagation.ts).
   * An entry whose transaction rolled back is never read and is evicted with older ones.
   */
  private readonly recent = new Map<number, Uint8Array>();
  /**
   * Entries this process appended whose transaction committed (the writer passed their version to `nudge`), by
   * version: readAfter hands a run of them that starts right after `from` without reading the database (a write's
   * nudge costs no query). Each is dropped once read, or once a database read goes past it.
   */
  private readonly committed = new Map<number, StoredEntry>();
  private readonly headers = new Map<number, Omit<StoredEntry, 'payload'>>();
  readonly maxDomainConfigBytes: number;
  readonly vault: KeyVault | undefined;

  /** `nsSets`: the accepted nameserver sets (control-plane config NS_SETS), first set recommended. */
  constructor(
    private readonly nsSets: readonly (readonly string[])[],
    opts: ConfigLogOptions = {},
  ) {
    this.maxDomainConfigBytes = opts.maxDomainConfigBytes ?? DOMAIN_CONFIG_MAX_BYTES;
    this.vault = opts.vault;
  }

  /**
   * Bumps the domain's zone serial, appends ONE entry with its whole snapshot and returns its version. Call it as the
   * LAST statement of the transaction that made the change (it holds the append lock until commit), then `nudge()`
   * after the commit.
   */
  async appendSnapshot(tx: Tx, domainId: number): Promise<number> {
    return (await this.appendChange(tx, domainId, { whole: true }))!;
  }

  /**
   * Appends ONE entry for `change` to domain `domainId` and returns its version, or null for an empty change: a delta
   * that reads only the records and rules the change names, or a whole snapshot for `whole`. Same rules as
   * appendSnapshot: the last statement of the change's transaction, `nudge()` after commit. A change that writes
   * records or rules and leaves the domain's compiled config above the limit throws a 400 ApiError (the caller's
   * transaction rolls back; removals are always accepted, so a domain above a lowered limit can shrink).
   */
  async appendChange(tx: Tx, domainId: number, change: ConfigChange, opts?: AppendOptions): Promise<number | null> {
    if (isEmptyChange(change)) return null;
    const whole = change.whole === true;
    const removedRecords = new Set(change.removedRecords ?? []);
    const removedRules = new Set(change.removedRules ?? []);
    const records = whole ? 'all' : unique(change.upsertedRecords ?? [], removedRecords);
    const rules = whole ? 'all' : unique(change.upsertedRules ?? [], removedRules);
    const config =
      change.read && !whole
        ? configFromRow(domainId, change.read, this.nsSets, records, rules, { vault: this.vault })
        : await readDomainConfig(tx, domainId, this.nsSets, records, rules, { vault: this.vault });
    if (!config) throw new Error(`config log: domain ${domainId} does not exist`);
    if (
      (change.upsertedRecords?.length || change.upsertedRules?.length) &&
      config.configBytes > this.maxDomainConfigBytes
    )
      throw new ApiError(
        'CP_ERR_CONFIG_TOO_LARGE',
        `the domain's configuration would be ${config.configBytes} bytes, above the limit of ${this.maxDomainConfigBytes} bytes per domain; nothing was changed`,
      );
    const payload = encodeDomainSnapshotFast(config.snapshot, config.recordsInHand);
    if (whole) return this.insert(tx, entryRow(domainId, config.snapshot.name, payload), opts);
    // An id written then deleted within the change is a removal.
    for (const id of config.missingRecordIds) removedRecords.add(id);
    for (const id of config.missingRuleIds) removedRules.add(id);
    return this.insert(
      tx,
      {
        ...entryRow(domainId, config.snapshot.name, payload),
        delta: true,
        removedRecordIds: [...removedRecords],
        removedRuleIds: [...removedRules],
      },
      opts,
    );
  }

  /** Appends a tombstone: nodes drop everything held for the domain. Same rules as appendSnapshot. */
  async appendDeletion(tx: Tx, domain: { id: number; name: string }, opts?: AppendOptions): Promise<number> {
    return this.insert(tx, { ...entryRow(domain.id, domain.name, new Uint8Array(0)), deleted: true }, opts);
  }

  /**
   * Tells the sync hub (in this process) that entries were committed; it streams them at once. `committed`: the
   * versions this process appended in the transaction that just committed (readAfter then hands them from memory).
   */
  nudge(...committed: number[]): void {
    for (const v of committed) {
      const head = this.headers.get(v);
      const payload = this.recent.get(v);
      if (head && payload) this.committed.set(v, { ...head, payload });
    }
    for (const l of this.listeners) l();
  }

  /** Registers a nudge listener (the hub); returns the function that removes it. */
  onNudge(listener: NudgeListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Entries with from < version <= upTo, in version order, at most `limit`. */
  async readAfter(db: Db | Tx, from: number, limit: number, upTo = Number.MAX_SAFE_INTEGER): Promise<StoredEntry[]> {
    // Committed entries of this process that follow `from` without a gap: no version below theirs can commit later
    // (appends hold the advisory lock until commit), so the database holds nothing else in that range.
    const local: StoredEntry[] = [];
    for (let v = from + 1; v <= upTo && local.length < limit; v++) {
      const e = this.committed.get(v);
      if (!e) break;
      local.push(e);
    }
    if (local.length > 0) {
      this.forget(local[local.length - 1]!.version);
      return local;
    }
    const heads = await db
      .select({
        version: configLog.version,
        domainName: configLog.domainName,
        deleted: configLog.deleted,
        delta: configLog.delta,
        removedRecordIds: configLog.removedRecordIds,
        removedRuleIds: configLog.removedRuleIds,
      })
      .from(configLog)
      .where(and(gt(configLog.version, from), lte(configLog.version, upTo)))
      .orderBy(asc(configLog.version))
      .limit(limit);
    const missing = heads.filter((h) => !h.deleted && !this.recent.has(h.version)).map((h) => h.version);
    const fetched = new Map<number, Uint8Array>();
    if (missing.length > 0) {
      const rows = await db
        .select({ version: configLog.version, payload: configLog.payload })
        .from(configLog)
        .where(inArray(configLog.version, missing));
      for (const r of rows) fetched.set(r.version, r.payload);
    }
    const out = heads.map((h) => ({
      ...h,
      // node-postgres returns bigint[] elements as strings.
      removedRecordIds: h.removedRecordIds.map(Number),
      removedRuleIds: h.removedRuleIds.map(Number),
      payload: h.deleted ? new Uint8Array(0) : (this.recent.get(h.version) ?? fetched.get(h.version)!),
    }));
    // Entries read once are committed and published; later reads of them go to the database.
    if (heads.length > 0) this.forget(heads[heads.length - 1]!.version);
    return out;
  }

  /** Drops what this process keeps of the entries up to `last` (read once, published). */
  private forget(last: number): void {
    for (const map of [this.recent, this.headers]) {
      for (const v of map.keys()) {
        if (v > last) break;
        map.delete(v);
      }
    }
    // Nudged in commit order, which two connections may not keep in version order: looked at whole (it is short).
    for (const v of this.committed.keys()) if (v <= last) this.committed.delete(v);
  }

  /** The highest committed version (0 when the log is empty). */
  async head(db: Db | Tx): Promise<number> {
    const result = await db.execute(sql`SELECT COALESCE(MAX(version), 0) AS head FROM config_log`);
    return Number(rowsOf<{ head: string | number }>(result)[0]?.head ?? 0);
  }

  /** The highest tombstone version deleted after its retention (0 when none was): nodes below it rebuild. */
  async horizon(db: Db | Tx): Promise<number> {
    const [row] = await db.select({ version: configLogHorizon.version }).from(configLogHorizon);
    return Number(row?.version ?? 0);
  }

  /**
   * Compaction of one domain up to `version`, its latest entry the caller has seen: the entry at `version` becomes the
   * whole snapshot `payload` (the domain's state at that version, squashed from its entries; omitted for a tombstone,
   * which stays as it is), and every older entry of the domain is deleted. Entries appended meanwhile are newer and
   * untouched. WHOLE_DELTA: the entry at `version` is a delta whose payload is already the whole state (an import onto
   * an empty zone): it becomes a snapshot without its payload written again (60 MB for a million records). Returns
   * false when the entry at `version` is gone (another process compacted further).
   */
  async compact(db: Db, domainName: string, version: number, payload?: Compacted): Promise<boolean> {
    return db.transaction(async (tx) => {
      const where = and(eq(configLog.version, version), eq(configLog.domainName, domainName));
      const kept = payload
        ? await tx
            .update(configLog)
            .set({
              ...(payload === WHOLE_DELTA ? {} : { payload }),
              delta: false,
              removedRecordIds: [],
              removedRuleIds: [],
            })
            .where(and(where, eq(configLog.deleted, false)))
            .returning({ version: configLog.version })
        : await tx.select({ version: configLog.version }).from(configLog).where(where);
      if (kept.length === 0) return false;
      await tx.delete(configLog).where(and(eq(configLog.domainName, domainName), lt(configLog.version, version)));
      return true;
    });
  }

  /**
   * Deletes tombstones older than `retentionMs` (by commit time) that are still the latest entry of their domain...
   * and raises the horizon to the highest one deleted. Returns the horizon.
   */
  async pruneTombstones(db: Db, retentionMs: number, now = Date.now()): Promise<number> {
    return db.transaction(async (tx) => {
      const cutoff = new Date(now - retentionMs);
      const result = await tx.execute(sql`
        WITH gone AS (DELETE FROM config_log WHERE deleted AND created_at < ${cutoff.toISOString()}::timestamptz RETURNING version)
        UPDATE config_log_horizon SET version = GREATEST(version, (SELECT COALESCE(MAX(version), 0) FROM gone))
        RETURNING version`);
      return Number(rowsOf<{ version: string | number }>(result)[0]?.version ?? 0);
    });
  }

  private async insert(tx: Tx, row: typeof configLog.$inferInsert, opts?: AppendOptions): Promise<number> {
    const [inserted] = await insertEntry<{ version: string | number }>(
      tx,
      {
        domainId: row.domainId,
        domainName: row.domainName,
        deleted: row.deleted ?? false,
        payload: row.payload,
        delta: row.delta ?? false,
        removedRecordIds: idArray(row.removedRecordIds),
        removedRuleIds: idArray(row.removedRuleIds),
      },
      { thenCommit: opts?.commit === true },
    );
    const version = Number(inserted!.version);
    if (this.listeners.size > 0) {
      this.recent.set(version, row.deleted ? new Uint8Array(0) : row.payload);
      this.headers.set(version, {
        version,
        domainName: row.domainName,
        deleted: row.deleted ?? false,
        delta: row.delta ?? false,
        removedRecordIds: [...(row.removedRecordIds ?? [])],
        removedRuleIds: [...(row.removedRuleIds ?? [])],
      });
      for (const map of [this.recent, this.headers]) {
        if (map.size > RECENT_PAYLOADS) map.delete(map.keys().next().value!);
      }
      if (this.committed.size > RECENT_PAYLOADS) this.committed.delete(this.committed.keys().next().value!);
    }
    return version;
  }
}

/** One statement: the lock is taken before the row (and its version) is produced. Compiled once (every write runs it). */
const insertEntry = compiled<
  'domainId' | 'domainName' | 'deleted' | 'payload' | 'delta' | 'removedRecordIds' | 'removedRuleIds'
>(
  (p) => sql`
      WITH locked AS (SELECT pg_advisory_xact_lock(${CONFIG_LOG_LOCK_KEY}))
      INSERT INTO config_log (domain_id, domain_name, deleted, payload, delta, removed_record_ids, removed_rule_ids)
      SELECT ${p('domainId')}, ${p('domainName')}, ${p('deleted')}, ${p('payload')}::bytea, ${p('delta')},
        ${p('removedRecordIds')}::bigint[], ${p('removedRuleIds')}::bigint[] FROM locked
      RETURNING version`,
);

function entryRow(domainId: number, domainName: string, payload: Uint8Array) {
  return { domainId, domainName, payload, deleted: false, delta: false };
}

function idArray(ids: readonly number[] | undefined): string {
  return `{${(ids ?? []).join(',')}}`;
}

/** `ids` without duplicates and without those in `removed`, linear time (ascending ids and no removal: `ids` itself). */
function unique(ids: readonly number[], removed: ReadonlySet<number>): readonly number[] {
  if (removed.size === 0 && ascending(ids)) return ids;
  return [...new Set(ids)].filter((id) => !removed.has(id));
}

function ascending(ids: readonly number[]): boolean {
  for (let i = 1; i < ids.length; i++) if (ids[i]! <= ids[i - 1]!) return false;
  return true;
}

/** Factory used by app.ts: `createConfigLog(config)` with the control-plane config's nameserver sets and limit. */
export function createConfigLog(config: {
  nsSets: readonly (readonly string[])[];
  domainConfigMaxBytes?: number;
  dataDir?: string;
  nodeToken?: string;
  certificateKey?: string;
}): ConfigLog {
  return new ConfigLog(config.nsSets, {
    maxDomainConfigBytes: config.domainConfigMaxBytes,
    vault: config.dataDir !== undefined ? keyVault({ ...config, dataDir: config.dataDir }) : undefined,
  });
}
