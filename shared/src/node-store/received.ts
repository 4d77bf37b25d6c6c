// The records of an entry as the node received it, read from its bytes in hand instead of back from LMDB: a listener
// compiling a large zone (a DNS node's import of a million records) skips reading back what the store just wrote.
import { decodeZoneRecordCore, type ZoneRecordCore } from '../config/index.js';

// Field numbers in compiled-config.proto: DomainSnapshot.zone, Zone.records.
const SNAPSHOT_ZONE = 6;
const ZONE_RECORDS = 10;

/**
 * The ZoneRecords of an encoded DomainSnapshot, in wire order, each decoded (its ZoneRecordCore fields only) into the
 * SAME object, overwritten by the next. The bytes were checked when the store wrote them (writer.ts splits the
 * snapshot and reads every record's id); a malformed message still throws rather than yielding garbage.
 */
export function* snapshotRecords(bytes: Uint8Array): Generator<ZoneRecordCore> {
  const into: ZoneRecordCore = { id: 0, name: '', type: '', destination: '', ttl: 0, mxPriority: 0, proxied: false };
  const b = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const cursor = { at: 0 };
  while (cursor.at < b.length) {
    const tag = varint(b, cursor, b.length);
    if (tag >>> 3 !== SNAPSHOT_ZONE || (tag & 7) !== 2) {
      skip(b, cursor, b.length, tag & 7);
      continue;
    }
    const zoneEnd = lengthEnd(b, cursor, b.length);
    while (cursor.at < zoneEnd) {
      const inner = varint(b, cursor, zoneEnd);
      if (inner >>> 3 !== ZONE_RECORDS || (inner & 7) !== 2) {
        skip(b, cursor, zoneEnd, inner & 7);
        continue;
      }
      const end = lengthEnd(b, cursor, zoneEnd);
      const start = cursor.at;
      cursor.at = end;
      // (A generator's caller may read other messages between two records: the position is ours, not shared.)
      yield decodeZoneRecordCore(b.subarray(start, end), into);
    }
  }
}

function varint(b: Buffer, c: { at: number }, end: number): number {
  let x = 0;
  for (let shift = 0; shift < 70; shift += 7) {
    if (c.at >= end) throw new RangeError('snapshot truncated');
    const byte = b[c.at++]!;
    x += shift < 28 ? (byte & 0x7f) << shift : (byte & 0x7f) * 2 ** shift;
    if (byte < 0x80) return x;
  }
  throw new Error('invalid varint encoding');
}

/** Reads a length prefix; returns where the field's value ends (the cursor is at its start). */
function lengthEnd(b: Buffer, c: { at: number }, end: number): number {
  const len = varint(b, c, end);
  if (len > end - c.at) throw new RangeError('snapshot truncated');
  return c.at + len;
}

function skip(b: Buffer, c: { at: number }, end: number, wire: number): void {
  if (wire === 0) varint(b, c, end);
  else if (wire === 1) c.at += 8;
  else if (wire === 2) c.at = lengthEnd(b, c, end);
  else if (wire === 5) c.at += 4;
  else throw new Error(`unexpected wire type ${wire} in a snapshot`);
  if (c.at > end) throw new RangeError('snapshot truncated');
}
