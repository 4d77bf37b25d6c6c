// The config log: an append-only, versioned list of per-domain snapshots, written in the same transaction as the change.
import { and, asc, eq, gt, inArray, lte, sql } from 'drizzle-orm';
import { encodeDomainSnapshot } from '@platform/shared/config';
import type { Db, Tx } from '../db/index.js';
import { rowsOf } from '../db/migrate.js';
import { configLog, domains } from '../db/schema.js';
import { buildDomainSnapshot } from './snapshot.js';

/**
 * Key of the transaction-scoped advisory lock that serialises appends: a version is drawn from the sequence only
 * while holding it, and it is released at commit, so versions become visible in increasing order. A reader that
 * has seen version 7 never later finds a 6 (the hub's tail relies on this).
 */
export const CONFIG_LOG_LOCK_KEY = 727_006;

/** One stored entry as the hub streams it. */
export interface StoredEntry {
  version: number;
  domainName: string;
  deleted: boolean;
  payload: Uint8Array;
}

export type NudgeListener = () => void;

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

export class ConfigLog {
  private readonly listeners = new Set<NudgeListener>();
  /**
   * Payloads this process appended, by version, kept while a hub listens so that its tail reads only the small
   * header columns: decoding a bytea of a large zone costs more than the rest of the path (bench/sync/propagation.ts).
   * An entry whose transaction rolled back is never read and is evicted with older ones.
   */
  private readonly recent = new Map<number, Uint8Array>();

  /** `nsSets`: the accepted nameserver sets (control-plane config NS_SETS), first set recommended. */
  constructor(private readonly nsSets: readonly (readonly string[])[]) {}

  /**
   * Bumps the domain's zone serial, builds its whole snapshot from the rows visible in `tx`, appends ONE entry and
   * returns its version. Call it as the LAST statement of the transaction that made the change (it holds the
   * append lock until commit), then `nudge()` after the commit.
   */
  async appendSnapshot(tx: Tx, domainId: number): Promise<number> {
    const [domain] = await tx
      .update(domains)
      .set({ zoneSerial: sql`${domains.zoneSerial} + 1` })
      .where(eq(domains.id, domainId))
      .returning();
    if (!domain) throw new Error(`config log: domain ${domainId} does not exist`);
    const payload = encodeDomainSnapshot(await buildDomainSnapshot(tx, domain, this.nsSets));
    return this.insert(tx, { domainId, domainName: domain.name, deleted: false, payload });
  }

  /**
   * Appends ONE entry for `change` to domain `domainId` and returns its version, or null for an empty change. Same
   * rules as appendSnapshot: the last statement of the change's transaction, `nudge()` after commit.
   */
  async appendChange(tx: Tx, domainId: number, change: ConfigChange): Promise<number | null> {
    if (isEmptyChange(change)) return null;
    // Deltas are the config-distribution work of issue 8 item 5; until then every change ships the whole domain.
    return this.appendSnapshot(tx, domainId);
  }

  /** Appends a tombstone: nodes drop everything held for the domain. Same rules as appendSnapshot. */
  async appendDeletion(tx: Tx, domain: { id: number; name: string }): Promise<number> {
    return this.insert(tx, { domainId: domain.id, domainName: domain.name, deleted: true, payload: new Uint8Array(0) });
  }

  /** Tells the sync hub (in this process) that entries were committed; it streams them at once. */
  nudge(): void {
    for (const l of this.listeners) l();
  }

  /** Registers a nudge listener (the hub); returns the function that removes it. */
  onNudge(listener: NudgeListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Entries with from < version <= upTo, in version order, at most `limit`. */
  async readAfter(db: Db | Tx, from: number, limit: number, upTo = Number.MAX_SAFE_INTEGER): Promise<StoredEntry[]> {
    const heads = await db
      .select({ version: configLog.version, domainName: configLog.domainName, deleted: configLog.deleted })
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
      payload: h.deleted ? new Uint8Array(0) : (this.recent.get(h.version) ?? fetched.get(h.version)!),
    }));
    // Entries read once are committed and published; later reads of them go to the database.
    const last = heads.length > 0 ? heads[heads.length - 1]!.version : 0;
    for (const v of this.recent.keys()) {
      if (v > last) break;
      this.recent.delete(v);
    }
    return out;
  }

  /**
   * Catch-up read: like readAfter, but only the latest entry of each domain within (from, upTo]. Each entry is a
   * whole snapshot or a tombstone, so applying only the latest per domain, in version order, reaches the same state;
   * a node stopped half-way resumes from the last version it applied and still receives every domain it lacks.
   */
  async readLatestAfter(db: Db | Tx, from: number, upTo: number, limit: number): Promise<StoredEntry[]> {
    const result = await db.execute(sql`
      SELECT c.version, c.domain_name AS "domainName", c.deleted, c.payload FROM config_log c
      WHERE c.version > ${from} AND c.version <= ${upTo}
        AND NOT EXISTS (SELECT 1 FROM config_log n WHERE n.domain_name = c.domain_name AND n.version > c.version AND n.version <= ${upTo})
      ORDER BY c.version LIMIT ${limit}`);
    return rowsOf<{ version: string | number; domainName: string; deleted: boolean; payload: Uint8Array }>(result).map(
      (r) => ({ version: Number(r.version), domainName: r.domainName, deleted: r.deleted, payload: r.payload }),
    );
  }

  /** The highest committed version (0 when the log is empty). */
  async head(db: Db | Tx): Promise<number> {
    const result = await db.execute(sql`SELECT COALESCE(MAX(version), 0) AS head FROM config_log`);
    return Number(rowsOf<{ head: string | number }>(result)[0]?.head ?? 0);
  }

  private async insert(tx: Tx, row: Omit<StoredEntry, 'version'> & { domainId: number }): Promise<number> {
    await tx.execute(sql`SELECT pg_advisory_xact_lock(${CONFIG_LOG_LOCK_KEY})`);
    const [inserted] = await tx.insert(configLog).values(row).returning({ version: configLog.version });
    const version = inserted!.version;
    if (this.listeners.size > 0 && !row.deleted) {
      this.recent.set(version, row.payload);
      if (this.recent.size > RECENT_PAYLOADS) this.recent.delete(this.recent.keys().next().value!);
    }
    return version;
  }
}

/** Factory used by app.ts: `createConfigLog(config)` with the control-plane config's nameserver sets. */
export function createConfigLog(config: { nsSets: readonly (readonly string[])[] }): ConfigLog {
  return new ConfigLog(config.nsSets);
}
