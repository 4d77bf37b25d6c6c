// PGlite parses and plans every query anew: its query() sends an unnamed statement each time. Planning dominates the
// short statements of an API write (the lock, the record insert, the config-log read: 0.4–0.9 ms of wasm each against
// 0.2–0.5 ms executing them, bench/RESULTS.md issue 8). This keeps each statement text parsed once, as a named
// prepared statement of PGlite's one session, and sends only Bind/Execute/Sync afterwards; Postgres keeps its plan
// (a generic one once it is no worse than the custom ones, as for any prepared statement).
import { hasBulkParameter } from './bulk-parameters.js';
import { issued } from './pipeline.js';
import { parse, protocol, type PGlite, type QueryOptions, type Results, type Transaction } from '@electric-sql/pglite';

type BackendMessage = Parameters<typeof parse.parseResults>[0][number];

interface Statement {
  name: string;
  /** Parameter type oids, as Describe reported them (the values are serialised by them). */
  paramTypes: number[];
  /** RowDescription (or NoData) from Describe: what parseResults needs to name and parse the columns. */
  described: BackendMessage[];
}

/** PGlite's members this relies on (public in JavaScript; the first two are marked internal in its types). */
interface PGliteInternals {
  _checkReady(): Promise<void>;
  _runExclusiveQuery<T>(fn: () => Promise<T>): Promise<T>;
  _runExclusiveTransaction<T>(fn: () => Promise<T>): Promise<T>;
  serializers: Record<number, (value: unknown) => string>;
  parsers: Parameters<typeof parse.parseResults>[1];
}

/** Statements kept prepared at once; the least recently used is closed beyond it. */
export const PREPARED_STATEMENTS = 500;

const { serialize } = protocol;
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
  const plainTransaction = client.transaction.bind(client);

  const exec = (message: Uint8Array) => client.execProtocolStream(message, { syncToFs: false });

  async function prepare(text: string, options: QueryOptions | undefined): Promise<Statement> {
    const known = statements.get(text);
    if (known) {
      statements.delete(text); // most recently used last
      statements.set(text, known);
      return known;
    }
    const name = `p${++counter}`;
    const messages = await exec(
      concat([
        serialize.parse({ name, text, types: options?.paramTypes }),
        serialize.describe({ type: 'S', name }),
        serialize.sync(),
      ]),
    );
    const statement: Statement = {
      name,
      paramTypes: parse.parseDescribeStatementResults(messages),
      described: messages.filter((m) => m.name === 'rowDescription' || m.name === 'noData'),
    };
    statements.set(text, statement);
    if (statements.size > max) {
      const [oldText, old] = statements.entries().next().value!;
      statements.delete(oldText);
      await exec(concat([serialize.close({ type: 'S', name: old.name }), serialize.sync()]));
    }
    return statement;
  }

  async function run<T>(
    text: string,
    params: unknown[] | undefined,
    options: QueryOptions | undefined,
    inTransaction: boolean,
  ): Promise<Results<T>> {
    return pg._runExclusiveQuery(async () => {
      let statement: Statement | undefined;
      try {
        statement = await prepare(text, options);
        const values = (params ?? []).map((value, i) => {
          if (value === null || value === undefined) return null;
          const serializer =
            options?.serializers?.[statement!.paramTypes[i]!] ?? pg.serializers[statement!.paramTypes[i]!];
          return serializer ? serializer(value) : String(value);
        });
        const messages = await exec(
          concat([serialize.bind({ statement: statement.name, values }), serialize.execute({}), serialize.sync()]),
        );
        if (!inTransaction) await client.syncToFs();
        return parse.parseResults([...statement.described, ...messages], pg.parsers, options)[0] as Results<T>;
      } catch (err) {
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
        throw err;
      }
    });
  }

  const query = async <T>(text: string, params?: unknown[], options?: QueryOptions): Promise<Results<T>> => {
    if (options?.blob || hasBulkParameter(params)) return plainQuery<T>(text, params, options);
    await pg._checkReady();
    return pg._runExclusiveTransaction(async () => {
      try {
        return await run<T>(text, params, options, false);
      } catch (err) {
        // Outside a transaction nothing is lost by running it again, parsed anew (inside, the transaction is aborted).
        if (isDatabaseError(err) && err.code === STALE_PLAN) return run<T>(text, params, options, false);
        throw err;
      }
    });
  };

  client.query = query as PGlite['query'];
  client.transaction = (<T>(callback: (tx: Transaction) => Promise<T>) =>
    plainTransaction((tx) => {
      const txQuery = async <R>(text: string, params?: unknown[], options?: QueryOptions): Promise<Results<R>> => {
        if (tx.closed) throw new Error('Transaction is closed');
        const answer =
          options?.blob || hasBulkParameter(params)
            ? tx.query<R>(text, params, options)
            : run<R>(text, params, options, true);
        // pipeline.ts: a statement waiting to run after this one (queued behind it on the mutex); not after a
        // statement sent ahead of the transaction's own (compiled.ts beforeBegin: in PGlite's transaction it runs first).
        if (!(options as { beforeBegin?: boolean } | undefined)?.beforeBegin) issued(proxy);
        return answer;
      };
      const proxy = new Proxy(tx, {
        get: (target, key, receiver) => (key === 'query' ? txQuery : Reflect.get(target, key, receiver)),
      });
      return callback(proxy);
    })) as PGlite['transaction'];
}
