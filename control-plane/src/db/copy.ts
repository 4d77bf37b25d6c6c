// COPY … FROM for bulk writes, inside the caller's transaction, on either driver: PGlite reads the data from its
// /dev/blob device (the query's `blob` option), node-postgres sends it as CopyData right after the server's
// CopyInResponse. A 1,000,000-row COPY costs a fraction of the same INSERT … SELECT FROM json_to_recordset
// (bench/RESULTS.md, "Large zone import": no JSON text to build, bind and parse).
import type { Tx } from './index.js';

interface PgliteClient {
  exec: unknown;
  query(text: string, params: unknown[], opts: { blob: Blob }): Promise<{ affectedRows?: number }>;
}

interface PgConnection {
  sendCopyFromChunk(chunk: Uint8Array): void;
  endCopyFrom(): void;
}

type PgClient = { query(q: unknown): unknown };

/** The driver's client of `tx` (drizzle's session holds it: a PGlite transaction or a node-postgres PoolClient). */
function clientOf(tx: Tx): PgliteClient | PgClient {
  return (tx._.session as unknown as { client: PgliteClient | PgClient }).client;
}

const isPglite = (c: PgliteClient | PgClient): c is PgliteClient => typeof (c as PgliteClient).exec === 'function';

/** True when `tx` runs on PGlite: one session in this process, so nothing else runs between two of its statements. */
export const onPglite = (tx: Tx): boolean => isPglite(clientOf(tx));

/** Bytes handed to the socket per CopyData message (the server accepts larger, but a message is copied whole). */
const COPY_CHUNK = 1 << 20;

/**
 * Runs `COPY <target> FROM …` in `tx` with `data` (COPY's text format, rows ending in '\n') and returns the number of
 * rows copied. `target` is SQL text of ours (a table and its column list), never input. A failing row throws the
 * database's error and, as any failed statement, aborts the transaction.
 */
export async function copyInto(tx: Tx, target: string, data: Uint8Array): Promise<number> {
  const client = clientOf(tx);
  if (isPglite(client)) {
    const result = await client.query(`COPY ${target} FROM '/dev/blob'`, [], { blob: new Blob([data]) });
    return result.affectedRows ?? 0;
  }
  const { default: pg } = await import('pg');
  // A Query of node-postgres' own class (the pool runs in pipeline mode, which refuses other submittables); its
  // simple-protocol text starts the copy, and the copy-in handler sends the data and its end.
  const Query = pg.Query as unknown as new (text: string, values: undefined, callback: CopyCallback) => object;
  class CopyIn extends Query {
    handleCopyInResponse(connection: PgConnection): void {
      for (let at = 0; at < data.length; at += COPY_CHUNK)
        connection.sendCopyFromChunk(data.subarray(at, Math.min(at + COPY_CHUNK, data.length)));
      connection.endCopyFrom();
    }
  }
  return new Promise<number>((resolve, reject) => {
    client.query(
      new CopyIn(`COPY ${target} FROM STDIN`, undefined, (err, result) =>
        err ? reject(err) : resolve(result?.rowCount ?? 0),
      ),
    );
  });
}

type CopyCallback = (err: Error | null, result?: { rowCount: number | null }) => void;

/**
 * Rows in COPY's text format, written straight into one growing buffer (a template string per row builds a rope of
 * its parts, and a million rows of them cost seconds and a gigabyte before they are joined). Each field is followed
 * by a tab, or by a newline for the row's last (`end`).
 */
export class CopyRows {
  private buf: Buffer;
  private pos = 0;

  constructor(sizeHint = 1 << 16) {
    this.buf = Buffer.allocUnsafe(Math.max(sizeHint, 1024));
  }

  private room(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    const grown = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.pos + n));
    this.buf.copy(grown, 0, 0, this.pos);
    this.buf = grown;
  }

  /** A text field (null: NULL), escaped. */
  text(value: string | null): this {
    if (value === null) return this.nullField();
    this.room(value.length * 3 + 1);
    const buf = this.buf;
    let pos = this.pos;
    for (let i = 0; i < value.length; i++) {
      const c = value.charCodeAt(i);
      if (c >= 0x80) {
        // Beyond ASCII: the rest of the string escaped as text and encoded by Buffer (at most 3 bytes a unit).
        pos += buf.write(copyText(value.slice(i)), pos, 'utf8');
        break;
      }
      const escape = c === 0x5c ? 0x5c : c === 0x0a ? 0x6e : c === 0x0d ? 0x72 : c === 0x09 ? 0x74 : 0;
      if (escape !== 0) {
        buf[pos++] = 0x5c;
        buf[pos++] = escape;
      } else buf[pos++] = c;
    }
    buf[pos++] = 0x09;
    this.pos = pos;
    return this;
  }

  /** A non-negative integer field (null: NULL). */
  int(value: number | null): this {
    if (value === null) return this.nullField();
    if (!Number.isInteger(value) || value < 0) return this.text(String(value));
    this.room(17);
    const buf = this.buf;
    let digits = 1;
    for (let v = value; v >= 10; v = Math.floor(v / 10)) digits++;
    let v = value;
    for (let k = this.pos + digits - 1; k >= this.pos; k--) {
      buf[k] = 0x30 + (v % 10);
      v = Math.floor(v / 10);
    }
    this.pos += digits;
    buf[this.pos++] = 0x09;
    return this;
  }

  bool(value: boolean): this {
    this.room(2);
    this.buf[this.pos++] = value ? 0x74 : 0x66;
    this.buf[this.pos++] = 0x09;
    return this;
  }

  private nullField(): this {
    this.room(3);
    this.buf[this.pos++] = 0x5c;
    this.buf[this.pos++] = 0x4e;
    this.buf[this.pos++] = 0x09;
    return this;
  }

  /** Ends the row: its last field's tab becomes the newline. */
  end(): void {
    this.buf[this.pos - 1] = 0x0a;
  }

  /** The rows written so far. */
  bytes(): Buffer {
    return this.buf.subarray(0, this.pos);
  }
}

/** COPY's text format of one field: NULL as \N, backslash, newline, carriage return and tab escaped. */
function copyText(value: string | number | boolean | null): string {
  if (value === null) return '\\N';
  if (typeof value === 'boolean') return value ? 't' : 'f';
  if (typeof value === 'number') return String(value);
  return COPY_SPECIAL.test(value) ? value.replace(COPY_ESCAPE, (c) => COPY_ESCAPES[c]!) : value;
}

const COPY_SPECIAL = /[\\\n\r\t]/;
const COPY_ESCAPE = /[\\\n\r\t]/g;
const COPY_ESCAPES: Record<string, string> = { '\\': '\\\\', '\n': '\\n', '\r': '\\r', '\t': '\\t' };
