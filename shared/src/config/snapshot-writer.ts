// encodeDomainSnapshot for large zones: protobufjs encodes the snapshot without its zone records; the records are
// written here straight into one buffer and spliced in as the zone's last field. The bytes are exactly protobufjs' own
// (it writes every field set, in field-number order, records last in Zone), at a fraction of the cost for a large
// zone: protobufjs queues an operation object per field, 30 million for a 1,000,000-record import, most of whose
// encoding time went to collecting them.
import { encodeDomainSnapshot } from './codec.js';
import { lengthDelimitedFieldSpan } from './parts.js';
import type { DomainSnapshot, ZoneRecord } from './types.js';

// Field numbers in compiled-config.proto.
const SNAPSHOT_ZONE = 6;
const ZONE_RECORDS = 10;
const LEN = 2;

/** A record's fields as the encoder reads them: a ZoneRecord's, or a stored record's, whose null is written as 0 or ''. */
export type RecordSourceFields = Omit<ZoneRecord, 'id' | 'mxPriority' | 'hostHeader'> & {
  mxPriority: number | null;
  hostHeader: string | null;
};

/**
 * Zone records given apart from the snapshot, by a writer that holds its records in another form (the control plane's
 * stored fields, ids apart): `records[i]` is written as the ZoneRecord of id `ids[i]`, as if it were in
 * `zone.records` after those there, with no ZoneRecord object made for it.
 */
export interface RecordSource {
  ids: readonly number[];
  records: readonly RecordSourceFields[];
}

/**
 * encodeDomainSnapshot(snapshot), byte for byte, in time and garbage linear in the records' bytes; with `more`, of
 * the snapshot whose zone.records are followed by those of `more`.
 */
export function encodeDomainSnapshotFast(snapshot: DomainSnapshot, more?: RecordSource): Uint8Array {
  const records = snapshot.zone.records;
  const extra = more?.records.length ?? 0;
  if (more && more.ids.length !== extra) throw new Error(`${more.ids.length} ids for ${extra} records`);
  if (records.length + extra === 0) return encodeDomainSnapshot(snapshot);
  const head = encodeDomainSnapshot({ ...snapshot, zone: { ...snapshot.zone, records: [] } });
  const zone = lengthDelimitedFieldSpan(head, SNAPSHOT_ZONE);
  if (!zone) throw new Error('the encoded snapshot has no zone');
  const body = new ProtoWriter((records.length + extra) * 64);
  for (const r of records) writeRecord(body, r.id, r);
  for (let i = 0; i < extra; i++) writeRecord(body, more!.ids[i]!, more!.records[i]!);
  const recordBytes = body.bytes();
  const zoneValue = head.subarray(zone.valueStart, zone.end);
  const zoneLength = zoneValue.length + recordBytes.length;
  const tag = new ProtoWriter(16);
  tag.varint((SNAPSHOT_ZONE << 3) | LEN).varint(zoneLength);
  const tagBytes = tag.bytes();
  const out = new Uint8Array(head.length - (zone.end - zone.tagStart) + tagBytes.length + zoneLength);
  let at = 0;
  for (const part of [head.subarray(0, zone.tagStart), tagBytes, zoneValue, recordBytes, head.subarray(zone.end)]) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

/** One record as a Zone `records` field: every field written, in field-number order, as protobufjs does. */
function writeRecord(w: ProtoWriter, id: number, r: RecordSourceFields): void {
  const start = w.open((ZONE_RECORDS << 3) | LEN);
  w.varint(0x08).varint(id);
  w.varint(0x12).string(r.name);
  w.varint(0x1a).string(r.type);
  w.varint(0x22).string(r.destination);
  w.varint(0x28).varint(r.ttl);
  w.varint(0x30).varint(r.mxPriority ?? 0);
  w.varint(0x38).varint(r.proxied ? 1 : 0);
  w.varint(0x40).varint(r.captcha ? 1 : 0);
  w.varint(0x4a).string(r.scheme);
  w.varint(0x50).varint(r.port);
  w.varint(0x5a).string(r.hostHeader ?? '');
  w.varint(0x62).string(r.hostHeaderMode);
  w.varint(0x68).varint(r.timeout);
  w.varint(0x70).varint(r.monitor ? 1 : 0);
  w.close(start);
}

/** Protobuf wire values written into one growing buffer. */
class ProtoWriter {
  private buf: Buffer;
  private pos = 0;

  constructor(sizeHint: number) {
    this.buf = Buffer.allocUnsafe(Math.max(sizeHint, 64));
  }

  private room(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    const grown = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.pos + n));
    this.buf.copy(grown, 0, 0, this.pos);
    this.buf = grown;
  }

  /** A non-negative integer (ids, counts, booleans as 0/1) as a varint. */
  varint(value: number): this {
    this.room(10);
    const buf = this.buf;
    let v = value;
    while (v >= 0x80) {
      buf[this.pos++] = (v % 0x80) | 0x80;
      v = Math.floor(v / 0x80);
    }
    buf[this.pos++] = v;
    return this;
  }

  /** A string as UTF-8 with its length first. */
  string(value: string): this {
    this.room(value.length * 3 + 5);
    const start = this.pos++;
    const buf = this.buf;
    let pos = this.pos;
    for (let i = 0; i < value.length; i++) {
      const c = value.charCodeAt(i);
      if (c >= 0x80) {
        pos += buf.write(value.slice(i), pos, 'utf8');
        break;
      }
      buf[pos++] = c;
    }
    this.pos = pos;
    this.closeAt(start);
    return this;
  }

  /** Writes `tag` and keeps one byte for the length of what follows (close). */
  open(tag: number): number {
    this.varint(tag);
    this.room(1);
    return this.pos++;
  }

  close(lengthAt: number): void {
    this.closeAt(lengthAt);
  }

  /** Fills the length byte kept at `at` with the bytes written after it, widening it when the length needs more. */
  private closeAt(at: number): void {
    const length = this.pos - at - 1;
    if (length < 0x80) {
      this.buf[at] = length;
      return;
    }
    let extra = 0;
    for (let v = length; v >= 0x80; v = Math.floor(v / 0x80)) extra++;
    this.room(extra);
    this.buf.copyWithin(at + 1 + extra, at + 1, this.pos);
    this.pos += extra;
    let v = length;
    let k = at;
    while (v >= 0x80) {
      this.buf[k++] = (v % 0x80) | 0x80;
      v = Math.floor(v / 0x80);
    }
    this.buf[k] = v;
  }

  bytes(): Buffer {
    return this.buf.subarray(0, this.pos);
  }
}
