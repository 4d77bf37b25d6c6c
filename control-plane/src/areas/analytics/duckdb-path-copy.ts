// Each domain's rows again, split by path into PATH_SHARDS tables `rz_<domain id>_<shard>` (the shard: the first byte
// of the path's MD5, modulo PATH_SHARDS), with the columns the per-domain reads of series, summary, peak and breakdown
// read. A read filtered on a path reads the one table holding that path's rows (rollup.ts byPath): about
// 1/PATH_SHARDS of the domain's rows instead of all of them, whatever else it filters on. It is a copy, not an
// aggregate: any such read over it answers what it answers over the raw rows. Kept in the batch's transaction
// (duckdb-store.ts append), trimmed at retention, dropped with the domain, built on open for a file that lacks it.
import { createHash } from 'node:crypto';
import { DuckDBTimestampTZValue, type DuckDBConnection } from '@duckdb/node-api';
import { PATH_COPY_COLUMNS } from './rollup.js';

/** Tables per domain: a path's read scans about 1/32 of the domain's rows; a batch inserts into up to 32 tables. */
export const PATH_SHARDS = 32;

const COLS = PATH_COPY_COLUMNS.join(', ');

/** The shard of a path: the first byte of its MD5 (of its UTF-8 bytes, as DuckDB's md5) modulo PATH_SHARDS. */
export const shardOf = (path: string): number => createHash('md5').update(path, 'utf8').digest()[0] % PATH_SHARDS;
/** shardOf in SQL, of the text expression `col`. */
export const shardSql = (col: string) => `CAST(('0x' || substr(md5(${col}), 1, 2)) AS INTEGER) % ${PATH_SHARDS}`;

/** The copy's table of one domain and shard. */
export function pathTable(domainId: number, shard: number): string {
  if (!Number.isSafeInteger(domainId) || domainId < 0) throw new Error(`bad domain id ${domainId}`);
  if (!Number.isInteger(shard) || shard < 0 || shard >= PATH_SHARDS) throw new Error(`bad shard ${shard}`);
  return `rz_${domainId}_${shard}`;
}
/** Every table of a domain's copy. */
export const pathTables = (domainId: number): string[] =>
  Array.from({ length: PATH_SHARDS }, (_, s) => pathTable(domainId, s));

/** True when the file has every table of the domain's copy (created and filled in one transaction: all or none). */
export const hasPathCopy = (domainId: number, tables: ReadonlySet<string>): boolean =>
  pathTables(domainId).every((t) => tables.has(t));

/** Creates the domain's (empty) copy tables, with the types of the domain's table `raw`. */
export async function createPathCopy(conn: DuckDBConnection, domainId: number, raw: string): Promise<void> {
  for (const t of pathTables(domainId))
    await conn.run(`CREATE TABLE main.${t} AS SELECT ${COLS} FROM main.${raw} LIMIT 0`);
}

/** Fills the domain's new (empty) copy from every row of `raw`, each table in time order (its zone maps skip by time). */
export async function fillPathCopy(conn: DuckDBConnection, domainId: number, raw: string): Promise<void> {
  // The shard per distinct path, once, instead of an MD5 per row and table.
  await conn.run(
    `CREATE OR REPLACE TEMP TABLE path_shard AS SELECT path, ${shardSql('path')} AS s FROM (SELECT DISTINCT path FROM main.${raw})`,
  );
  try {
    for (let s = 0; s < PATH_SHARDS; s++)
      await conn.run(
        `INSERT INTO main.${pathTable(domainId, s)} SELECT ${COLS} FROM main.${raw}
         WHERE path IN (SELECT path FROM temp.main.path_shard WHERE s = ${s}) ORDER BY time`,
      );
  } finally {
    await conn.run('DROP TABLE IF EXISTS temp.main.path_shard');
  }
}

/** Adds the rows of `source` (a batch of the domain) to its copy: each into its path's table, only the tables it has rows for. */
export async function addToPathCopy(conn: DuckDBConnection, domainId: number, source: string): Promise<void> {
  await conn.run(`CREATE OR REPLACE TEMP TABLE path_add AS SELECT ${COLS}, ${shardSql('path')} AS s FROM ${source}`);
  try {
    const shards = await conn.runAndReadAll('SELECT DISTINCT s FROM temp.main.path_add ORDER BY s');
    for (const [s] of shards.getRowsJS())
      await conn.run(
        `INSERT INTO main.${pathTable(domainId, Number(s))} SELECT ${COLS} FROM temp.main.path_add WHERE s = ${Number(s)}`,
      );
  } finally {
    await conn.run('DROP TABLE IF EXISTS temp.main.path_add');
  }
}

/** Deletes the copy's rows before `before` (ms), as the domain's. */
export async function trimPathCopy(conn: DuckDBConnection, domainId: number, before: number): Promise<void> {
  for (const t of pathTables(domainId))
    await conn.run(`DELETE FROM main.${t} WHERE time < $1`, [new DuckDBTimestampTZValue(BigInt(before) * 1000n)]);
}

/**
 * Rows of the copy that are not rows of `raw` in the copy's columns, in the table of their path, or the other way
 * round (counted with repeats: 0 when the copy holds exactly the raw rows). For the tests and for checking by hand.
 */
export async function pathCopyDrift(conn: DuckDBConnection, domainId: number, raw: string): Promise<number> {
  let drift = 0;
  for (let s = 0; s < PATH_SHARDS; s++) {
    const mine = `SELECT ${COLS} FROM main.${pathTable(domainId, s)}`;
    const theirs = `SELECT ${COLS} FROM main.${raw} WHERE ${shardSql('path')} = ${s}`;
    const r = await conn.runAndReadAll(
      `SELECT (SELECT count(*) FROM (${mine} EXCEPT ALL ${theirs})) + (SELECT count(*) FROM (${theirs} EXCEPT ALL ${mine}))`,
    );
    drift += Number(r.getRowsJS()[0][0]);
  }
  return drift;
}
