// A statement sent with its transaction's BEGIN before it, or its COMMIT after it, in ONE round trip to Postgres.
// node-postgres waits for each answer before it sends the next statement, so a transaction of n statements costs
// n + 2 round trips; a single record create was 6 (bench/RESULTS.md, issue 8). Sent as one extended-protocol batch
// with one Sync at its end, the server runs the parts in order and stops at the first error: a statement whose BEGIN
// failed never runs outside a transaction, and a COMMIT after a statement that failed never runs (the transaction
// stays aborted until the caller's ROLLBACK). pg-prepared.ts decides when to send one (deferred BEGIN, thenCommit).
import pg from 'pg';

/** The parts of node-postgres's Connection a query writes to (lib/connection.js). */
interface Connection {
  parse(msg: { text: string; name?: string; types?: unknown }): void;
  bind(msg: { portal?: string; statement?: string; values?: unknown[]; binary?: boolean; valueMapper?: unknown }): void;
  describe(msg: { type: 'P' | 'S'; name?: string }): void;
  execute(msg: { portal?: string; rows?: number }): void;
  close(msg: { type: 'P' | 'S'; name?: string }): void;
  sync(): void;
  parsedStatements: Record<string, string>;
  submittedNamedStatements: Record<string, string>;
}

/** What pg's Query keeps that this extends (lib/query.js); not in @types/pg. */
interface QueryInternals {
  text: string;
  name?: string;
  types?: unknown;
  values?: unknown[];
  binary?: boolean;
  portal: string;
  rows?: number;
  handleCommandComplete(msg: { command: string }, connection: Connection): void;
  handleError(err: unknown, connection: Connection): void;
  hasBeenParsed(connection: Connection): boolean;
}

/** pg's own conversion of values to their text form (dates, arrays, buffers, JSON), as its Query binds them. */
const prepareValue = (pg as unknown as { utils?: { prepareValue?: unknown } }).utils?.prepareValue;
if (typeof prepareValue !== 'function') throw new Error('node-postgres no longer exposes utils.prepareValue');

export interface Pipelined {
  /** Send BEGIN before the statement. */
  begin?: boolean;
  /** Send COMMIT after the statement (the statement is the transaction's last). */
  commit?: boolean;
}

const BaseQuery = pg.Query as unknown as new (config: unknown, values?: unknown, callback?: unknown) => QueryInternals;

/** One statement with BEGIN before it and/or COMMIT after it; answers as the statement alone (its rows, its errors). */
export class PipelinedQuery extends BaseQuery {
  /** CommandComplete messages still to come that are not the statement's: BEGIN's, then COMMIT's. */
  private beginPending: boolean;
  private statementDone = false;

  constructor(
    config: unknown,
    values: unknown[] | undefined,
    callback: (err: Error | null, result: unknown) => void,
    private readonly pipelined: Pipelined,
  ) {
    super(config, values, callback);
    this.beginPending = pipelined.begin === true;
  }

  /** Always the extended protocol (the parts share one Sync). */
  requiresPreparation(): boolean {
    return true;
  }

  override handleCommandComplete(msg: { command: string }, connection: Connection): void {
    if (this.beginPending) {
      this.beginPending = false; // BEGIN's
      return;
    }
    if (this.statementDone) return; // COMMIT's
    this.statementDone = true;
    super.handleCommandComplete(msg, connection);
  }

  prepare(connection: Connection): void {
    const named = typeof this.name === 'string' && this.name !== '';
    // A named statement's Parse goes first: the client records a statement as parsed on any ParseComplete of this
    // query, so BEGIN's must not come before the statement's own (which may fail). An unnamed statement shares the
    // unnamed slot with BEGIN, so BEGIN is parsed, bound and run before it is parsed.
    if (named && !this.hasBeenParsed(connection)) {
      connection.parse({ text: this.text, name: this.name, types: this.types });
      connection.submittedNamedStatements[this.name!] = this.text;
    }
    if (this.pipelined.begin) run(connection, 'BEGIN');
    if (!named) connection.parse({ text: this.text, name: '', types: this.types });
    try {
      connection.bind({
        portal: this.portal,
        statement: this.name ?? '',
        values: this.values,
        binary: this.binary,
        valueMapper: prepareValue,
      });
    } catch (err) {
      // As pg's own Query: a value that cannot be serialised ends the batch before the statement runs.
      if (named) connection.close({ type: 'S', name: this.name });
      connection.sync();
      this.handleError(err, connection);
      return;
    }
    connection.describe({ type: 'P', name: this.portal || '' });
    connection.execute({ portal: this.portal });
    if (this.pipelined.commit) run(connection, 'COMMIT');
    connection.sync();
  }
}

/** Parse, Bind and Execute of a parameterless statement in the unnamed slots (its answer: no rows). */
function run(connection: Connection, text: string): void {
  connection.parse({ text, name: '' });
  connection.bind({ portal: '', statement: '', values: [] });
  connection.execute({ portal: '' });
}
