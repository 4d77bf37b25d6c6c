// Database access of the records area; every function runs inside the caller's transaction.
import { and, asc, count, eq, inArray, sql, type SQL } from 'drizzle-orm';
import type { Db, Tx } from '../../db/index.js';
import { dnsRecords } from '../../db/schema.js';
import { compiled } from '../../db/compiled.js';
import { rowsOf } from '../../db/migrate.js';
import { copyInto, CopyRows, onPglite } from '../../db/copy.js';
import { domainConfigColumns, snapshotRecordsSql, type DomainConfigRow } from '../../config-log/snapshot.js';
import { livePlanJson, type LivePlan } from '../../plans/entitlements.js';
import type { HostHeaderMode, RecordFields, RecordType, Scheme, StoredRecord } from './types.js';

export type RecordRow = typeof dnsRecords.$inferSelect;

export function toStored(row: RecordRow): StoredRecord {
  return {
    id: row.id,
    name: row.name,
    type: row.type as RecordType,
    destination: row.destination,
    mxPriority: row.mxPriority,
    ttl: row.ttl,
    proxied: row.proxied,
    captcha: row.captcha,
    scheme: row.scheme as Scheme,
    port: row.port,
    hostHeader: row.hostHeader,
    hostHeaderMode: row.hostHeaderMode as HostHeaderMode,
    monitor: row.monitor,
    timeout: row.timeout,
    comment: row.comment,
  };
}

export async function listRecords(db: Db | Tx, domainId: number, names?: string[]): Promise<RecordRow[]> {
  const where = names
    ? and(eq(dnsRecords.domainId, domainId), inArray(dnsRecords.name, names))
    : eq(dnsRecords.domainId, domainId);
  return db.select().from(dnsRecords).where(where).orderBy(asc(dnsRecords.id));
}

/** A record in the API's form: snake_case, UTC timestamps, unset mx_priority / host_header / comment absent. */
export interface ApiRecord {
  id: number;
  name: string;
  type: RecordType;
  destination: string;
  mx_priority?: number;
  ttl: number;
  proxied: boolean;
  captcha: boolean;
  scheme: Scheme;
  port: number;
  host_header?: string;
  host_header_mode: HostHeaderMode;
  monitor: boolean;
  timeout: number;
  comment?: string;
  created_at: string;
  updated_at: string;
}

const utc = (col: string) => sql.raw(`to_char(${col} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`);

/**
 * Every record of a domain in API form, ordered by id. The database builds ONE JSON text and JSON.parse reads
 * it: on PGlite this is about 2.5x faster than decoding 10,000 rows column by column (bench/control-plane/records.bench.ts).
 */
export async function listApiRecords(db: Db | Tx, domainId: number): Promise<ApiRecord[]> {
  return JSON.parse(await listRecordsJson(db, domainId)) as ApiRecord[];
}

const jsonBool = (col: string) => sql.raw(`CASE WHEN ${col} THEN 'true' ELSE 'false' END`);

/**
 * One record as the JSON text the response schema would serialise (as fast-json-stringify orders them: the required
 * fields in the DnsRecord schema's order, then the optional ones set, unset mx_priority / host_header / comment
 * absent; no whitespace). The database concatenates it, strings escaped by to_json: on PGlite a third of the cost of
 * json_build_object + json_strip_nulls, and the route sends it without parsing and serialising the objects again.
 * type, scheme and host_header_mode are quoted without to_json (to_json is most of the expression's cost): every
 * writer stores them from a fixed set of words of letters (types.ts), which need no escaping.
 */
const RECORD_JSON = sql`'{"id":' || id || ',"name":' || to_json(name) || ',"type":"' || type
      || '","destination":' || to_json(destination) || ',"ttl":' || ttl || ',"proxied":' || ${jsonBool('proxied')}
      || ',"captcha":' || ${jsonBool('captcha')} || ',"scheme":"' || scheme || '","port":' || port
      || ',"host_header_mode":"' || host_header_mode || '","monitor":' || ${jsonBool('monitor')}
      || ',"timeout":' || timeout || ',"created_at":"' || ${utc('created_at')} || '","updated_at":"' || ${utc('updated_at')}
      || '"' || coalesce(',"mx_priority":' || mx_priority, '') || coalesce(',"host_header":' || to_json(host_header), '')
      || coalesce(',"comment":' || to_json(comment), '') || '}'`;

/** The GET answer itself: every record of a domain as one JSON array text, ordered by id. */
export async function listRecordsJson(db: Db | Tx, domainId: number): Promise<string> {
  const result = await db.execute(sql`
    SELECT '[' || coalesce(string_agg(${RECORD_JSON}, ',' ORDER BY id), '') || ']' AS records
    FROM dns_records WHERE domain_id = ${domainId}`);
  return rowsOf<{ records: string }>(result)[0]!.records;
}

/** A page of listRecordsPage. */
export interface RecordsPage {
  /** The page's records as JSON objects joined by commas, without the brackets ('' for none). */
  items: string;
  /** The id of the page's last record, or null for an empty page. */
  last: number | null;
  /** Whether records with a larger id (up to `upTo`) follow. */
  more: boolean;
  /** The largest record id of the domain when the page was read (bounds a listing that takes several pages). */
  top: number | null;
}

/**
 * At most `limit` records of a domain with `after` < id <= `upTo`, ordered by id (keyset paging on the
 * (domain_id, id) index of migration 0037: each page costs its own size, whatever the zone's).
 */
export async function listRecordsPage(
  db: Db | Tx,
  domainId: number,
  after: number,
  limit: number,
  upTo = 2_147_483_647,
): Promise<RecordsPage> {
  const result = await db.execute(sql`
    WITH p AS (SELECT * FROM dns_records WHERE domain_id = ${domainId} AND id > ${after} AND id <= ${upTo}
      ORDER BY id LIMIT ${limit})
    SELECT coalesce((SELECT string_agg(${RECORD_JSON}, ',' ORDER BY id) FROM p), '') AS items,
      (SELECT max(id) FROM p) AS last,
      EXISTS (SELECT 1 FROM dns_records WHERE domain_id = ${domainId} AND id > (SELECT max(id) FROM p)
        AND id <= ${upTo}) AS more,
      (SELECT max(id) FROM dns_records WHERE domain_id = ${domainId}) AS top`);
  const row = rowsOf<{ items: string; last: number | null; more: boolean; top: number | null }>(result)[0]!;
  return {
    items: row.items,
    last: row.last === null ? null : Number(row.last),
    more: row.more,
    top: row.top === null ? null : Number(row.top),
  };
}

type StoredTuple = [
  number,
  string,
  string,
  string,
  number | null,
  number,
  boolean,
  boolean,
  string,
  number,
  string | null,
  string,
  boolean,
  number,
  string | null,
];

/** A record as a StoredTuple, inside json_agg. */
const STORED_TUPLE = sql.raw(`json_build_array(id, name, type, destination, mx_priority, ttl, proxied, captcha, scheme,
  port, host_header, host_header_mode, monitor, timeout, comment)`);

/**
 * A single create in ONE statement: inserts `record`, reads what its checks need as the zone was before it (the
 * live plan, the record count, the records at its name: the statement's other parts do not see its own insert), and
 * bumps the zone serial reading the domain's config with the new record (snapshot.ts domainConfigColumns; its size
 * is the stored one plus the record's, as the insert's trigger adds it after the statement), which the config log
 * appends without reading it again. The caller checks and throws to refuse, which rolls it all back with the
 * transaction. Compiled once (db/compiled.ts): drizzle does not rebuild its text on each create.
 */
export async function createWithContext(
  tx: Tx,
  zone: string,
  record: RecordFields,
): Promise<{ plan: LivePlan | null; count: number; atName: StoredRecord[]; row: RecordRow; config: DomainConfigRow }> {
  const [row] = await createStatement<
    DomainConfigRow & {
      domain_id: number;
      plan: LivePlan | null;
      n: string | number;
      at_name: string;
      inserted: string;
    }
  >(tx, { zone, records: recordsJson([record]), name: record.name });
  // No row: no such domain (the caller's lock has refused already; a failed insert throws instead).
  if (!row) throw new Error(`records: no domain ${zone}`);
  return {
    plan: row.plan,
    count: Number(row.n),
    atName: (JSON.parse(row.at_name) as StoredTuple[]).map(tupleToStored),
    row: insertedRows(row.domain_id, row.inserted)[0]!,
    config: row,
  };
}

/**
 * The domain is named, not given by id: the statement is sent right behind the lock statement, before its answer
 * (service.ts createRecord), and runs after it on the server, so it reads the row the lock holds. For a name that
 * is no domain it inserts nothing and answers no row, without an error: the lock's refusal (which may read more
 * in the same transaction) is what the caller reports.
 */
const createStatement = compiled<'zone' | 'records' | 'name'>((p) => {
  const domainId = sql`(SELECT id FROM d)` as unknown as number;
  return sql`
    WITH d AS (SELECT id FROM domains WHERE name = ${p('zone')}),
    ${insertedCteSql(domainId, p('records'), sql` WHERE EXISTS (SELECT 1 FROM d)`)},
    bumped AS (UPDATE domains SET zone_serial = zone_serial + 1 WHERE id = ${domainId}
      RETURNING ${domainConfigColumns(
        domainId,
        snapshotRecordsSql(sql`inserted`),
        sql`'[]'::json`,
        sql`config_bytes + (SELECT coalesce(sum(dns_record_config_bytes(name, type, destination, scheme, host_header_mode,
          host_header)), 0) FROM inserted)`,
      )})
    SELECT ${livePlanJson(domainId)} AS plan, (SELECT count(*) FROM dns_records WHERE domain_id = ${domainId}) AS n,
      (SELECT coalesce(json_agg(${STORED_TUPLE} ORDER BY id), '[]')::text FROM dns_records
        WHERE domain_id = ${domainId} AND name = ${p('name')}) AS at_name,
      (${insertedJson}) AS inserted, ${domainId} AS domain_id, bumped.*
    FROM bumped`;
});

/**
 * The records of a domain that a write's zone checks need: those with one of `ids`, those at one of `names`, and
 * every record sharing an owner name with one of `ids` (the checks of zone-index.ts look at one owner name only);
 * `names` null: every record of the domain. One statement, read as one JSON text (cheaper on PGlite than decoding rows column by column).
 */
export async function listRecordsAround(
  tx: Tx,
  domainId: number,
  ids: readonly number[],
  names: readonly string[] | null,
): Promise<StoredRecord[]> {
  if (names !== null && ids.length === 0 && names.length === 0) return [];
  const idArray = `{${ids.join(',')}}`;
  const result = await tx.execute(sql`
    SELECT coalesce(json_agg(${STORED_TUPLE} ORDER BY id), '[]')::text AS records
    FROM dns_records
    WHERE domain_id = ${domainId}${
      names === null
        ? sql``
        : sql` AND (id = ANY(${idArray}::int[]) OR name IN (SELECT json_array_elements_text(${JSON.stringify(names)}::json))
      OR name IN (SELECT name FROM dns_records WHERE domain_id = ${domainId} AND id = ANY(${idArray}::int[])))`
    }`);
  return (JSON.parse(rowsOf<{ records: string }>(result)[0]!.records) as StoredTuple[]).map(tupleToStored);
}

function tupleToStored(t: StoredTuple): StoredRecord {
  return {
    id: t[0],
    name: t[1],
    type: t[2] as RecordType,
    destination: t[3],
    mxPriority: t[4],
    ttl: t[5],
    proxied: t[6],
    captcha: t[7],
    scheme: t[8] as Scheme,
    port: t[9],
    hostHeader: t[10],
    hostHeaderMode: t[11] as HostHeaderMode,
    monitor: t[12],
    timeout: t[13],
    comment: t[14],
  };
}

export function apiToStored(r: ApiRecord): StoredRecord {
  return {
    id: r.id,
    name: r.name,
    type: r.type,
    destination: r.destination,
    mxPriority: r.mx_priority ?? null,
    ttl: r.ttl,
    proxied: r.proxied,
    captcha: r.captcha,
    scheme: r.scheme,
    port: r.port,
    hostHeader: r.host_header ?? null,
    hostHeaderMode: r.host_header_mode,
    monitor: r.monitor,
    timeout: r.timeout,
    comment: r.comment ?? null,
  };
}

export async function getRecord(db: Db | Tx, domainId: number, id: number): Promise<RecordRow | undefined> {
  const [row] = await db
    .select()
    .from(dnsRecords)
    .where(and(eq(dnsRecords.domainId, domainId), eq(dnsRecords.id, id)));
  return row;
}

export async function countRecords(tx: Tx, domainId: number): Promise<number> {
  const [row] = await tx.select({ n: count() }).from(dnsRecords).where(eq(dnsRecords.domainId, domainId));
  return Number(row?.n ?? 0);
}

/**
 * Inserts the records in ONE statement whatever their number (one JSON parameter, not 15 per record: binding 15,000
 * parameters cost more than the insert itself) and returns the rows in input order, read back as one JSON text.
 */
export async function insertRecords(tx: Tx, domainId: number, records: RecordFields[]): Promise<RecordRow[]> {
  if (records.length === 0) return [];
  const result = await tx.execute(
    sql`WITH ${insertedCteSql(domainId, recordsJson(records))} SELECT (${insertedJson}) AS records`,
  );
  return insertedRows(domainId, rowsOf<{ records: string }>(result)[0]!.records);
}

const COPY_TARGET = `dns_records (id, domain_id, name, type, destination, mx_priority, ttl, proxied, captcha, scheme,
  port, host_header, host_header_mode, monitor, timeout, comment)`;

/**
 * Inserts the records with ONE COPY and returns their ids in input order (ascending: the list's id order is the
 * file's), for an import too large to list its rows. The ids are drawn from the table's sequence first (one
 * statement), so nothing is read back; the statement trigger keeping domains.config_bytes runs as for an INSERT.
 */
export async function copyRecords(tx: Tx, domainId: number, records: readonly RecordFields[]): Promise<number[]> {
  if (records.length === 0) return [];
  const ids = await allocateRecordIds(tx, records.length);
  const rows = new CopyRows(records.length * 64);
  for (let i = 0; i < records.length; i++) {
    const r = records[i]!;
    rows.int(ids[i]!).int(domainId).text(r.name).text(r.type).text(r.destination).int(r.mxPriority).int(r.ttl);
    rows.bool(r.proxied).bool(r.captcha).text(r.scheme).int(r.port).text(r.hostHeader).text(r.hostHeaderMode);
    rows.bool(r.monitor).int(r.timeout).text(r.comment).end();
  }
  const copied = await copyInto(tx, COPY_TARGET, rows.bytes());
  if (copied !== records.length) throw new Error(`records: COPY wrote ${copied} rows of ${records.length}`);
  return ids;
}

/**
 * `n` new ids from dns_records' sequence, ascending. Usually one run (first..last, nothing else to read); when
 * other writers drew ids meanwhile, the values themselves, read only then. The sequence is looked up once (`q`):
 * `nextval(pg_get_serial_sequence(…))` per row looked it up in the catalogs for every id, 9/10 of the statement's
 * cost (300,000 ids: 1.2 s against 0.14 s on Postgres, bench/RESULTS.md "Large zone import: the ids …").
 */
async function allocateRecordIds(tx: Tx, n: number): Promise<number[]> {
  if (onPglite(tx)) {
    // PGlite's one session draws every id of the process: no other nextval can come between these two calls, so the
    // run is taken in one step (a million nextval cost PGlite about 1.3 s of CPU).
    const taken = await tx.execute(sql`
      WITH q AS (SELECT pg_get_serial_sequence('dns_records', 'id')::regclass AS seq)
      SELECT (setval((SELECT seq FROM q), nextval((SELECT seq FROM q)) + ${n - 1}::bigint) - ${n - 1}::bigint)::text AS lo`);
    const lo = Number(rowsOf<{ lo: string }>(taken)[0]!.lo);
    return Array.from({ length: n }, (_, i) => lo + i);
  }
  const result = await tx.execute(sql`
    WITH q AS (SELECT pg_get_serial_sequence('dns_records', 'id')::regclass AS seq),
      s AS MATERIALIZED (SELECT nextval((SELECT seq FROM q)) AS v FROM generate_series(1, ${n}::int)),
      r AS (SELECT min(v) AS lo, max(v) AS hi, count(*) AS n FROM s)
    SELECT lo::text AS lo, CASE WHEN hi - lo + 1 = n THEN NULL ELSE (SELECT array_agg(v ORDER BY v) FROM s)::text END AS ids
    FROM r`);
  const row = rowsOf<{ lo: string; ids: string | null }>(result)[0]!;
  if (row.ids !== null) return row.ids.slice(1, -1).split(',').map(Number);
  const lo = Number(row.lo);
  return Array.from({ length: n }, (_, i) => lo + i);
}

/** The records as insertedCteSql's one JSON parameter. */
function recordsJson(records: RecordFields[]): string {
  return JSON.stringify(
    records.map((r, i) => ({
      i,
      name: r.name,
      type: r.type,
      destination: r.destination,
      mx_priority: r.mxPriority,
      ttl: r.ttl,
      proxied: r.proxied,
      captcha: r.captcha,
      scheme: r.scheme,
      port: r.port,
      host_header: r.hostHeader,
      host_header_mode: r.hostHeaderMode,
      monitor: r.monitor,
      timeout: r.timeout,
      comment: r.comment,
    })),
  );
}

/** `inserted AS (INSERT … RETURNING *)`: the records in ONE statement, from one JSON parameter, ids in input order. */
function insertedCteSql(domainId: number, json: unknown, where: SQL = sql``) {
  // Ids come from the sequence in the SELECT's order, so ORDER BY id is the input order.
  return sql`inserted AS (
      INSERT INTO dns_records (domain_id, name, type, destination, mx_priority, ttl, proxied, captcha, scheme, port,
        host_header, host_header_mode, monitor, timeout, comment)
      SELECT ${domainId}, v.name, v.type, v.destination, v.mx_priority, v.ttl, v.proxied, v.captcha, v.scheme, v.port,
        v.host_header, v.host_header_mode, v.monitor, v.timeout, v.comment
      FROM json_to_recordset(${json}::json) AS v(i integer, name text, type text, destination text, mx_priority integer,
        ttl integer, proxied boolean, captcha boolean, scheme text, port integer, host_header text, host_header_mode text,
        monitor boolean, timeout integer, comment text)${where}
      ORDER BY v.i
      RETURNING *)`;
}

/** The rows of the `inserted` CTE as one JSON text, in input order. */
const insertedJson = sql`SELECT json_agg(json_build_array(id, name, type, destination, mx_priority, ttl, proxied, captcha,
      scheme, port, host_header, host_header_mode, monitor, timeout, comment, ${utc('created_at')}, ${utc('updated_at')})
      ORDER BY id)::text FROM inserted`;

function insertedRows(domainId: number, json: string): RecordRow[] {
  const tuples = JSON.parse(json) as [...StoredTuple, string, string][];
  return tuples.map((t) => ({
    ...tupleToStored(t as unknown as StoredTuple),
    domainId,
    createdAt: new Date(t[15]),
    updatedAt: new Date(t[16]),
  }));
}

/** Writes the full new state of each record in ONE statement (a 1000-item batch is one round trip). */
export async function updateRecords(tx: Tx, domainId: number, records: StoredRecord[]): Promise<void> {
  if (records.length === 0) return;
  const json = JSON.stringify(
    records.map((r) => ({
      id: r.id,
      name: r.name,
      destination: r.destination,
      mx_priority: r.mxPriority,
      ttl: r.ttl,
      proxied: r.proxied,
      captcha: r.captcha,
      scheme: r.scheme,
      port: r.port,
      host_header: r.hostHeader,
      host_header_mode: r.hostHeaderMode,
      monitor: r.monitor,
      timeout: r.timeout,
      comment: r.comment,
    })),
  );
  await tx.execute(sql`
    UPDATE dns_records AS r SET name = v.name, destination = v.destination, mx_priority = v.mx_priority, ttl = v.ttl,
      proxied = v.proxied, captcha = v.captcha, scheme = v.scheme, port = v.port, host_header = v.host_header,
      host_header_mode = v.host_header_mode, monitor = v.monitor, timeout = v.timeout, comment = v.comment, updated_at = now()
    FROM jsonb_to_recordset(${json}::jsonb) AS v(id integer, name text, destination text, mx_priority integer, ttl integer,
      proxied boolean, captcha boolean, scheme text, port integer, host_header text, host_header_mode text, monitor boolean,
      timeout integer, comment text)
    WHERE r.id = v.id AND r.domain_id = ${domainId}`);
}

export async function deleteRecords(tx: Tx, domainId: number, ids: number[]): Promise<number[]> {
  if (ids.length === 0) return [];
  const rows = await tx
    .delete(dnsRecords)
    .where(and(eq(dnsRecords.domainId, domainId), inArray(dnsRecords.id, ids)))
    .returning({ id: dnsRecords.id });
  return rows.map((r) => r.id);
}
