// GET records/ without parameters: every record of the domain. A zone that fits one page is one JSON text from one
// statement; a larger one is streamed page by page (keyset on id), so neither the database's answer nor the
// response is ever one string of the whole zone, and the first bytes leave after the first page.
import { Readable } from 'node:stream';
import type { Db } from '../../db/index.js';
import { listRecordsPage } from './store.js';

/** Records per statement of the streamed list (about 2.7 MB of JSON for A records). */
export const STREAM_PAGE = 10_000;

const MAX_ID = 2_147_483_647;

/** The record id a `cursor` parameter names (digits only, by the schema); beyond the id range, past every record. */
export function cursorId(cursor: string | undefined): number {
  return cursor === undefined ? 0 : Math.min(Number(cursor), MAX_ID);
}

/**
 * The whole list as a JSON array: a string for a zone of at most STREAM_PAGE records, otherwise a stream. The
 * stream lists the records that existed when it started (ids up to the largest then), each page as committed when
 * it is read; a record deleted meanwhile may be absent, one created meanwhile is not listed.
 */
export async function listAllRecords(db: Db, domainId: number, pageSize = STREAM_PAGE): Promise<string | Readable> {
  const first = await listRecordsPage(db, domainId, 0, pageSize);
  if (!first.more) return `[${first.items}]`;
  const upTo = first.top ?? MAX_ID;
  async function* pages(): AsyncGenerator<string> {
    yield `[${first.items}`;
    let last = first.last!;
    for (;;) {
      const page = await listRecordsPage(db, domainId, last, pageSize, upTo);
      if (page.items) yield `,${page.items}`;
      if (!page.more || page.last === null) break;
      last = page.last;
    }
    yield ']';
  }
  return Readable.from(pages(), { objectMode: false });
}
