// PGlite parses and plans every query anew: its query() sends an unnamed statement each time. Planning dominates the
// short statements of an API write (the lock, the record insert, the config-log read: 0.4–0.9 ms of wasm each against
// 0.2–0.5 ms executing them, bench/RESULTS.md issue 8). This keeps each statement text parsed once, as a named
// prepared statement of PGlite's one session, and sends only Bind/Execute/Sync afterwards; Postgres keeps its plan
// (a generic one once it is no worse than the custom ones, as for any prepared statement).
// Transactions are this file's too: PGlite's own sends BEGIN and COMMIT each through its query path (its mutexes,
// two calls into the engine, a filesystem sync, a generic parse of the answer: about 0.3 ms of CPU per transaction,
// more than a short statement). Here BEGIN rides in front of the transaction's first statement and COMMIT behind a
// statement sent with `thenCommit` (compiled.ts: the config log's append, the last of every write), in the same call
// into the engine; rows are read by each statement's own column list, not by a copy of the whole parser table.
import { hasBulkParameter } from './bulk-parameters.js';
import { issued } from './pipeline.js';
import {
  parse,
  protocol,
  types,
  type PGlite,
  type QueryOptions,
  type Results,
  type Transaction,
} from '@electric-sql/pglite';

type BackendMessage = Parameters<typeof parse.parseResults>[0][number];

interface Statement {
  name: string;
  /** Parameter type oids, as Describe reported them (the values are serialised by them). */
  paramTypes: number[];
  /** The columns, as Describe's RowDescription reported them (none for NoData). */
  fields: { name: string; dataTypeID: number }[];
  /** No column is named `__proto__`: a row is built by assignment (else as Object.fromEntries builds it). */
  assignable: boolean;
  /** Each column's parser from the instance's table (or PGlite's global one), found on first use without options. */
  parsers?: (Parser | undefined)[];
}

type Parser = (value: string, typeId: number) => unknown;

/** PGlite's members this relies on (public in JavaScript; the first two are marked internal in its types). */
interface PGliteInternals {
  _checkReady(): Promise<void>;
  _runExclusiveQuery<T>(fn: () => Promise<T>): Promise<T>;
  _runExclusiveTransaction<T>(fn: () => Promise<T>): Promise<T>;
  _handleBlob(blob?: Blob): Promise<void>;
  _cleanupBlob(): Promise<void>;
  _getWrittenBlob(): Promise<Blob | undefined>;
  serializers: Record<number, (value: unknown) => string>;
  parsers: Parameters<typeof parse.parseResults>[1] & Record<number, Parser>;
}

/** What a transaction's statement may ask (compiled.ts): carry the COMMIT, or run ahead of the others. */
type StatementOptions = QueryOptions & { thenCommit?: boolean; beforeBegin?: boolean };

/** Statements kept prepared at once; the least recently used is closed beyond it. */
export const PREPARED_STATEMENTS = 500;

const { serialize } = protocol;
const BEGIN = serialize.query('BEGIN');
const COMMIT = serialize.query('COMMIT');
const ROLLBACK = serialize.query('ROLLBACK');
/** The type oid of bytea. */
const BYTEA = 17;
/** "cached plan must not change result type" (feature_not_supported): a kept plan whose table changed. */
const STALE_PLAN = '0A000';

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

function isDatabaseError(err: unknown): err is Error & { code?: string } {
  return err instanceof Error && typeof (err as { severity?: unknown }).severity === 'string';
}

/** Rows affected, from a CommandComplete tag (as PGlite's parseResults counts them). */
function affectedRows(tag: string): number {
  const words = tag.split(' ');
  switch (words[0]) {
    case 'INSERT':
      return parseInt(words[2]!, 10);
    case 'UPDATE':
    case 'DELETE':
    case 'COPY':
    case 'MERGE':
      return parseInt(words[1]!, 10);
    default:
      return 0;
  }
}

/**
 * The first result of `messages` (what PGlite's parseResults(...)[0] answers: the rows before the first
 * CommandComplete, named and parsed by the statement's columns), from `from` on (after a BEGIN sent in front).
 */
function resultOf<T>(
  statement: Statement,
  parsers: (Parser | undefined)[],
  messages: BackendMessage[],
  from: number,
  arrays: boolean,
): Results<T> {
  const { fields } = statement;
  const n = fields.length;
  const rows: unknown[] = [];
  const value = (raw: string | null, i: number) => {
    if (raw === null) return null;
    const parser = parsers[i];
    return parser ? parser(raw, fields[i]!.dataTypeID) : raw;
  };
  for (let m = from; m < messages.length; m++) {
    const message = messages[m]!;
    if (message.name === 'dataRow') {
      const raw = (message as unknown as { fields: (string | null)[] }).fields;
      if (arrays) {
        const row = new Array<unknown>(raw.length);
        for (let i = 0; i < raw.length; i++) row[i] = value(raw[i]!, i);
        rows.push(row);
      } else if (raw.length === n && statement.assignable) {
        const row: Record<string, unknown> = {};
        for (let i = 0; i < n; i++) row[fields[i]!.name] = value(raw[i]!, i);
        rows.push(row);
      } else rows.push(Object.fromEntries(raw.map((v, i) => [fields[i]!.name, value(v, i)])));
    } else if (message.name === 'commandComplete') {
      const tag = (message as unknown as { text: string }).text;
      return { rows: rows as T[], fields, affectedRows: affectedRows(tag) } as Results<T>;
    }
  }
  return { affectedRows: 0, rows: [], fields: [] } as Results<T>;
}

/** The index after the first ReadyForQuery of `messages` (the answer to a BEGIN sent in front of a statement). */
function afterFirstReady(messages: BackendMessage[]): number {
  const i = messages.findIndex((m) => m.name === 'readyForQuery');
  return i + 1;
}

/**
 * Makes `client.query` and the `query` of its transactions run every statement as a named prepared statement, parsed
 * on first use. Results, parsers, serialisers, errors and locking are PGlite's own: the same mutexes are taken, the
 * same parseResults reads the answer, a DatabaseError carries the query and params as PGlite's does.
 */
export function usePreparedStatements(client: PGlite, max = PREPARED_STATEMENTS): void {
  const pg = client as unknown as PGliteInternals;
  const statements = new Map<string, Statement>();
  let counter = 0;
  const plainQuery = client.query.bind(client);

  const exec = (message: Uint8Array, opts?: { throwOnError: boolean }) =>
    client.execProtocolStream(message, { syncToFs: false, ...opts });

  /** Parses `text` as the statement `name` ('' for the unnamed one) and reads its parameters and columns. */
  async function describe(name: string, text: string, options: QueryOptions | undefined): Promise<Statement> {
    const messages = await exec(
      concat([
        serialize.parse({ name, text, types: options?.paramTypes }),
        serialize.describe({ type: 'S', name }),
        serialize.sync(),
      ]),
    );
    const described = messages.find((m) => m.name === 'rowDescription') as
      { fields: { name: string; dataTypeID: number }[] } | undefined;
    const fields = (described?.fields ?? []).map((f) => ({ name: f.name, dataTypeID: f.dataTypeID }));
    return {
      name,
      paramTypes: parse.parseDescribeStatementResults(messages),
      fields,
      assignable: fields.every((f) => f.name !== '__proto__'),
    };
  }

  async function prepare(text: string, options: QueryOptions | undefined): Promise<Statement> {
    const known = statements.get(text);
    if (known) {
      statements.delete(text); // most recently used last
      statements.set(text, known);
      return known;
    }
    const statement = await describe(`p${++counter}`, text, options);
    statements.set(text, statement);
    if (statements.size > max) {
      const [oldText, old] = statements.entries().next().value!;
      statements.delete(oldText);
      await exec(concat([serialize.close({ type: 'S', name: old.name }), serialize.sync()]));
    }
    return statement;
  }

  /** A statement of a transaction waiting for its turn on PGlite's query mutex (runBatch). */
  interface Queued {
    text: string;
    params: unknown[] | undefined;
    options: StatementOptions | undefined;
    resolve(result: Results<unknown>): void;
    reject(err: unknown): void;
  }

  /** A transaction of this file's (client.transaction): whether its BEGIN still waits for its first statement. */
  interface Tx {
    /** BEGIN not sent yet: it goes in front of the first statement. */
    beginHeld: boolean;
    /** A statement carried the COMMIT (thenCommit): nothing may follow it. */
    committed: boolean;
  }

  /**
   * Runs `text` prepared (or, `unnamed`, parsed for this run only: a bulk parameter's statement); in a transaction
   * `tx`, with its held BEGIN in front and, `options.thenCommit`, the COMMIT behind, in the same call into the engine.
   */
  async function run<T>(
    text: string,
    params: unknown[] | undefined,
    options: StatementOptions | undefined,
    tx?: Tx,
    unnamed = false,
  ): Promise<Results<T>> {
    return pg._runExclusiveQuery(() => runOne<T>(text, params, options, tx, unnamed));
  }

  /** run's work, with PGlite's query mutex held. */
  async function runOne<T>(
    text: string,
    params: unknown[] | undefined,
    options: StatementOptions | undefined,
    tx?: Tx,
    unnamed = false,
  ): Promise<Results<T>> {
    {
      let statement: Statement | undefined;
      try {
        // A simple Query (the BEGIN) would drop an unnamed statement parsed before it: it goes first then.
        if (unnamed && tx?.beginHeld) {
          tx.beginHeld = false;
          await exec(BEGIN);
        }
        statement = unnamed ? await describe('', text, options) : await prepare(text, options);
        const values = valuesOf(statement, params, options);
        const begin = tx?.beginHeld === true;
        const commit = tx !== undefined && options?.thenCommit === true;
        const parts = [serialize.bind({ statement: statement.name, values }), serialize.execute({}), serialize.sync()];
        if (begin) {
          parts.unshift(BEGIN);
          tx.beginHeld = false;
        }
        if (commit) {
          parts.push(COMMIT);
          tx.committed = true;
        }
        if (options?.blob) await pg._handleBlob(options.blob);
        let messages: BackendMessage[];
        try {
          messages = await exec(concat(parts));
        } finally {
          if (options?.blob) await pg._cleanupBlob();
        }
        if (!tx) await client.syncToFs();
        const written = await pg._getWrittenBlob();
        const result = resultOf<T>(
          statement,
          parsersOf(statement, options),
          messages,
          begin ? afterFirstReady(messages) : 0,
          options?.rowMode === 'array',
        );
        return written ? { ...result, blob: written } : result;
      } catch (err) {
        throw await failed(err, text, params, options, unnamed ? undefined : statement);
      }
    }
  }

  /** `err` as the statement's caller gets it (PGlite's own fields); a kept plan its table outdated is dropped. */
  async function failed(
    err: unknown,
    text: string,
    params: unknown[] | undefined,
    options: QueryOptions | undefined,
    statement: Statement | undefined,
  ): Promise<unknown> {
    if (isDatabaseError(err)) {
      if (statement && err.code === STALE_PLAN && statements.get(text) === statement) {
        // A table changed under the kept plan (its columns): the statement is dropped and parsed again next time.
        statements.delete(text);
        await exec(concat([serialize.close({ type: 'S', name: statement.name }), serialize.sync()])).catch(
          () => undefined,
        );
      }
      Object.assign(err, { query: text, params, queryOptions: options });
    }
    return err;
  }

  /**
   * The values of `params`, serialised by the statement's parameter types. Bytes for a bytea parameter are bound as
   * they are (Bind's binary format, which for bytea is the bytes themselves): PGlite's own serialiser writes them as
   * hex text through an array of a string per byte, seconds of CPU and gigabytes of heap for the 60 MB config-log
   * payload of a 1,000,000-record import (bench/RESULTS.md "Large zone import: … the payload bound as bytes").
   */
  function valuesOf(
    statement: Statement,
    params: unknown[] | undefined,
    options: QueryOptions | undefined,
  ): (string | Uint8Array | null)[] {
    const types = statement.paramTypes;
    return (params ?? []).map((value, i) => {
      if (value === null || value === undefined) return null;
      const type = types[i]!;
      const serializer = options?.serializers?.[type];
      if (!serializer && type === BYTEA && value instanceof Uint8Array) return value;
      const serialize = serializer ?? pg.serializers[type];
      return serialize ? serialize(value) : String(value);
    });
  }

  /**
   * Statements of transaction `tx` queued together (pipeline.ts: the key lookup, the lock and the insert behind it,
   * issued before any answer), run in ONE call into the engine when each is already prepared: [BEGIN], then each
   * statement's Bind/Execute/Sync (each answers and fails on its own, as when sent one by one: behind a failed one,
   * the aborted transaction refuses the rest), the COMMIT behind the one that asks for it. Anything else (a statement
   * not yet parsed, one alone) runs one by one as before, in the same order.
   */
  async function runBatch(items: Queued[], tx: Tx): Promise<void> {
    const prepared = items.length > 1 ? items.map((q) => statements.get(q.text)) : [];
    if (prepared.length === 0 || prepared.some((p) => p === undefined)) {
      for (const q of items) await runOne(q.text, q.params, q.options, tx).then(q.resolve, q.reject);
      return;
    }
    const parts: Uint8Array[] = [];
    const begin = tx.beginHeld;
    if (begin) parts.push(BEGIN);
    tx.beginHeld = false;
    let after = -1; // index of the statement that carried the COMMIT
    for (let i = 0; i < items.length; i++) {
      const q = items[i]!;
      const statement = prepared[i]!;
      if (after >= 0) break;
      statements.delete(q.text); // most recently used last
      statements.set(q.text, statement);
      parts.push(serialize.bind({ statement: statement.name, values: valuesOf(statement, q.params, q.options) }));
      parts.push(serialize.execute({}), serialize.sync());
      if (q.options?.thenCommit) {
        parts.push(COMMIT);
        tx.committed = true;
        after = i;
      }
    }
    let messages: BackendMessage[];
    try {
      messages = await exec(concat(parts), { throwOnError: false });
    } catch (err) {
      for (const q of items) q.reject(err);
      return;
    }
    // One ReadyForQuery ends each part: the BEGIN's, each statement's Sync, the COMMIT's.
    let at = 0;
    const segment = () => {
      const from = at;
      while (at < messages.length && messages[at]!.name !== 'readyForQuery') at++;
      at++;
      return [from, at - 1] as const;
    };
    const errorIn = (from: number, to: number) => {
      for (let m = from; m < to; m++) {
        const message: unknown = messages[m];
        if (message instanceof Error) return message;
      }
      return undefined;
    };
    const beginError = begin ? errorIn(...segment()) : undefined;
    for (let i = 0; i < items.length; i++) {
      const q = items[i]!;
      if (after >= 0 && i > after) {
        q.reject(new Error('a statement after the one that committed the transaction'));
        continue;
      }
      const statement = prepared[i]!;
      const [from, to] = segment();
      let error = beginError ?? errorIn(from, to);
      if (i === after) error ??= errorIn(...segment()); // the COMMIT's own refusal is the statement's
      if (error) q.reject(await failed(error, q.text, q.params, q.options, statement));
      else
        q.resolve(
          resultOf(
            statement,
            parsersOf(statement, q.options),
            messages.slice(from, to),
            0,
            q.options?.rowMode === 'array',
          ),
        );
    }
  }

  /** Each column's parser: the call's own (drizzle's), else the instance's table, else PGlite's global one. */
  function parsersOf(statement: Statement, options: QueryOptions | undefined): (Parser | undefined)[] {
    const own = options?.parsers as Record<number, Parser> | undefined;
    const find = (typeId: number) =>
      own?.[typeId] ?? pg.parsers[typeId] ?? (types.parsers as Record<number, Parser>)[typeId];
    if (own) return statement.fields.map((f) => find(f.dataTypeID));
    return (statement.parsers ??= statement.fields.map((f) => find(f.dataTypeID)));
  }

  const query = async <T>(text: string, params?: unknown[], options?: QueryOptions): Promise<Results<T>> => {
    if (options?.blob || hasBulkParameter(params)) return plainQuery<T>(text, params, options);
    await pg._checkReady();
    return pg._runExclusiveTransaction(async () => {
      try {
        return await run<T>(text, params, options);
      } catch (err) {
        // Outside a transaction nothing is lost by running it again, parsed anew (inside, the transaction is aborted).
        if (isDatabaseError(err) && err.code === STALE_PLAN) return run<T>(text, params, options);
        throw err;
      }
    });
  };

  /** A simple query in transaction `tx` (its held BEGIN in front), answered as PGlite's exec answers. */
  const simple = (tx: Tx, text: string, options?: QueryOptions): Promise<Results[]> =>
    pg._runExclusiveQuery(async () => {
      const begin = tx.beginHeld;
      tx.beginHeld = false;
      try {
        const messages = await exec(concat(begin ? [BEGIN, serialize.query(text)] : [serialize.query(text)]));
        return parse.parseResults(begin ? messages.slice(afterFirstReady(messages)) : messages, pg.parsers, options);
      } catch (err) {
        if (isDatabaseError(err)) Object.assign(err, { query: text, params: undefined, queryOptions: options });
        throw err;
      }
    });

  const end = (message: Uint8Array) => pg._runExclusiveQuery(() => exec(message));
  /** COMMIT or ROLLBACK, sent when a transaction is still open once every statement queued before has run. */
  const endIfOpen = (message: Uint8Array) =>
    pg._runExclusiveQuery(async () => {
      if (client.isInTransaction()) await exec(message);
    });

  client.query = query as PGlite['query'];
  client.transaction = (async <T>(callback: (tx: Transaction) => Promise<T>): Promise<T> => {
    await pg._checkReady();
    return pg._runExclusiveTransaction(async () => {
      const state: Tx = { beginHeld: true, committed: false };
      let closed = false;
      /** Statements queued for the next turn on the query mutex (runBatch); none once that turn began. */
      let batch: Queued[] | undefined;
      const open = () => {
        if (closed) throw new Error('Transaction is closed');
        if (state.committed) throw new Error('a statement after the one that committed the transaction');
      };
      const transaction = {
        async query<R>(text: string, params?: unknown[], options?: StatementOptions): Promise<Results<R>> {
          open();
          let answer: Promise<Results<R>>;
          if (options?.blob !== undefined || hasBulkParameter(params)) {
            // COPY … FROM/TO '/dev/blob' (db/copy.ts): parsed for this run, with the blob handed to PGlite around it.
            batch = undefined;
            answer = run<R>(text, params, options, state, true);
          } else {
            // Joins the statements queued since the last turn on the mutex began (runBatch), or opens the next.
            if (!batch) {
              const items: Queued[] = [];
              batch = items;
              void pg._runExclusiveQuery(() => {
                if (batch === items) batch = undefined;
                return runBatch(items, state);
              });
            }
            const items = batch;
            answer = new Promise<Results<R>>((resolve, reject) =>
              items.push({ text, params, options, resolve: resolve as Queued['resolve'], reject }),
            );
          }
          // pipeline.ts: a statement waiting to run after this one (queued behind it on the mutex); not after a
          // statement sent ahead of the transaction's own (compiled.ts beforeBegin: here it runs first in it).
          if (!options?.beforeBegin) issued(transaction);
          return answer;
        },
        async exec(text: string, options?: QueryOptions): Promise<Results[]> {
          open();
          batch = undefined;
          return simple(state, text, options);
        },
        async sql(): Promise<never> {
          throw new Error('tx.sql is not supported; use tx.query');
        },
        async listen(): Promise<never> {
          throw new Error('LISTEN in a transaction is not supported');
        },
        async rollback(): Promise<void> {
          open();
          batch = undefined;
          if (!state.beginHeld) await end(ROLLBACK);
          closed = true;
        },
        get closed() {
          return closed;
        },
      };
      try {
        const value = await callback(transaction as unknown as Transaction);
        // Nothing sent (BEGIN still held), or committed by its last statement: nothing more to send. Decided on the
        // query mutex, behind any statement still queued.
        if (!closed) await endIfOpen(COMMIT);
        closed = true;
        return value;
      } catch (err) {
        if (!closed) await endIfOpen(ROLLBACK);
        closed = true;
        throw err;
      }
    });
  }) as PGlite['transaction'];
}
