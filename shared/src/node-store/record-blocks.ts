// A domain's zone records in the node store, in blocks: one LMDB value per run of RECORD_BLOCK ids (layout 3), not one
// per record. A million-record import is then about 16,000 puts instead of 1,000,000 (lmdb-js's per-put work, the key's
// encoding and the native call, was most of the writer thread's time), and a one-record delta rewrites one block.
//
// A block's value: for each record, in increasing id order and each id once, its id (float64 LE), the length of its
// encoded ZoneRecord (uint32 LE), then those bytes.

/** Ids per block: block b of a domain holds the records whose id is in [b * RECORD_BLOCK, (b + 1) * RECORD_BLOCK). */
export const RECORD_BLOCK = 64;

const HEAD = 12;

/** The block number of a record id. */
export function blockOf(id: number): number {
  return Math.floor(id / RECORD_BLOCK);
}

/** A record's id with its encoded bytes. */
export interface RecordPart {
  id: number;
  bytes: Uint8Array;
}

/** One block's value from its records, which must be in increasing id order, each id once. */
export function encodeBlock(parts: readonly RecordPart[]): Buffer {
  let size = 0;
  for (const p of parts) size += HEAD + p.bytes.byteLength;
  const out = Buffer.allocUnsafe(size);
  let at = 0;
  for (const p of parts) {
    out.writeDoubleLE(p.id, at);
    out.writeUInt32LE(p.bytes.byteLength, at + 8);
    out.set(p.bytes, at + HEAD);
    at += HEAD + p.bytes.byteLength;
  }
  return out;
}

/** The records of a block's value, in id order (the bytes are views of `value`). */
export function* blockRecords(value: Uint8Array): Generator<RecordPart> {
  const b = asBuffer(value);
  for (let at = 0; at < b.length;) {
    const { id, start, end } = entryAt(b, at);
    yield { id, bytes: b.subarray(start, end) };
    at = end;
  }
}

/** The encoded record of `id` in a block's value, or undefined. */
export function findInBlock(value: Uint8Array, id: number): Uint8Array | undefined {
  const b = asBuffer(value);
  for (let at = 0; at < b.length;) {
    const e = entryAt(b, at);
    if (e.id === id) return b.subarray(e.start, e.end);
    if (e.id > id) return undefined;
    at = e.end;
  }
  return undefined;
}

/**
 * Records grouped by block, each block's in increasing id order; an id given more than once keeps its last record
 * (as puts of the same key did). Records given in increasing id order (the hub's) are grouped without sorting.
 */
export function groupByBlock(parts: readonly RecordPart[]): Map<number, RecordPart[]> {
  const blocks = new Map<number, RecordPart[]>();
  let sorted = true;
  let last = -Infinity;
  for (const p of parts) {
    if (p.id <= last) sorted = false;
    last = p.id;
    const b = blockOf(p.id);
    const list = blocks.get(b);
    if (list) list.push(p);
    else blocks.set(b, [p]);
  }
  if (!sorted) for (const [b, list] of blocks) blocks.set(b, changedBlock(undefined, NO_IDS, list));
  return blocks;
}

/** No ids (changedBlock's `removed` when nothing is removed). */
export const NO_IDS: ReadonlySet<number> = new Set();

/** A block's records after removing `removed` ids and then writing `written` (so an id in both ends up written). */
export function changedBlock(
  value: Uint8Array | undefined,
  removed: ReadonlySet<number>,
  written: readonly RecordPart[],
): RecordPart[] {
  const byId = new Map<number, RecordPart>();
  if (value) for (const p of blockRecords(value)) if (!removed.has(p.id)) byId.set(p.id, p);
  for (const p of written) byId.set(p.id, p);
  return [...byId.values()].sort((a, b) => a.id - b.id);
}

function entryAt(b: Buffer, at: number): { id: number; start: number; end: number } {
  if (at + HEAD > b.length) throw new RangeError('record block truncated');
  const id = b.readDoubleLE(at);
  const start = at + HEAD;
  const end = start + b.readUInt32LE(at + 8);
  if (end > b.length) throw new RangeError('record block truncated');
  return { id, start, end };
}

function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}
