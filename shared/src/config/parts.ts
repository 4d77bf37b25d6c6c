// A domain snapshot taken apart for the node store: the domain's header (every field but the records and rules),
// and each record and rule as its own encoded message, so one record can be read, written or removed alone.
import protobuf from 'protobufjs';
import { PlatformError } from '../errors.js';
import { PROTO_PATH, decodeDomainSnapshot, encodeDomainSnapshot, toObject, type ConfigErrorCode } from './codec.js';
import type { DomainSnapshot, Rule, ZoneRecord } from './types.js';

const root = protobuf.loadSync(PROTO_PATH);
const ZoneRecordType = root.lookupType('platform.config.v1.ZoneRecord');
const RuleType = root.lookupType('platform.config.v1.Rule');

// Field numbers in compiled-config.proto.
const SNAPSHOT_ZONE = 6;
const SNAPSHOT_RULE_SET = 8;
const ZONE_RECORDS = 10;
const RULE_SET_RULES = 2;
const LEN = 2;

export function encodeZoneRecord(record: ZoneRecord): Uint8Array {
  return ZoneRecordType.encode(record as unknown as protobuf.Message).finish();
}

/**
 * Decodes one ZoneRecord: the same object protobufjs's decode + toObject give (every field, defaults included, in
 * field order), read by hand because a node decodes a whole zone's records at once (1,000,000 for a large import) and
 * the generic path costs several times more. Anything unusual (a field with another wire type, a group) takes the
 * generic path, so odd input decodes exactly as before; truncated input throws CFG_ERR_DECODE like it.
 */
export function decodeZoneRecord(bytes: Uint8Array): ZoneRecord {
  const r: ZoneRecord = {
    id: 0,
    name: '',
    type: '',
    destination: '',
    ttl: 0,
    mxPriority: 0,
    proxied: false,
    captcha: false,
    scheme: '',
    port: 0,
    hostHeader: '',
    hostHeaderMode: '',
    timeout: 0,
    monitor: false,
  };
  return readRecordFields(bytes, r, true) ? r : (toObject(ZoneRecordType, bytes) as unknown as ZoneRecord);
}

/** The fields of a record a DNS node's answers depend on (what its zone compile reads of each record). */
export type ZoneRecordCore = Pick<
  ZoneRecord,
  'id' | 'name' | 'type' | 'destination' | 'ttl' | 'mxPriority' | 'proxied'
>;

/** Just the core fields of a record, as a new object (a decoded record holds seven more; a large zone a million). */
export function zoneRecordCore(r: ZoneRecordCore): ZoneRecordCore {
  return {
    id: r.id,
    name: r.name,
    type: r.type,
    destination: r.destination,
    ttl: r.ttl,
    mxPriority: r.mxPriority,
    proxied: r.proxied,
  };
}

/**
 * Decodes the ZoneRecordCore fields of one ZoneRecord into `into` (every one written; the values decodeZoneRecord
 * gives) and returns it: the other fields are skipped without making their strings, and no object is made, so a
 * node reading back a million records it copies into its own tables allocates only the strings it keeps.
 */
export function decodeZoneRecordCore(bytes: Uint8Array, into: ZoneRecordCore): ZoneRecordCore {
  into.id = 0;
  into.name = '';
  into.type = '';
  into.destination = '';
  into.ttl = 0;
  into.mxPriority = 0;
  into.proxied = false;
  if (readRecordFields(bytes, into as ZoneRecord, false)) return into;
  const r = decodeZoneRecord(bytes);
  into.id = r.id;
  into.name = r.name;
  into.type = r.type;
  into.destination = r.destination;
  into.ttl = r.ttl;
  into.mxPriority = r.mxPriority;
  into.proxied = r.proxied;
  return into;
}

/**
 * Reads a ZoneRecord's fields into `r` (its defaults already set): all of them, or (`all` false) only the
 * ZoneRecordCore ones. False when the message needs the generic path (decodeZoneRecord's note); throws CFG_ERR_DECODE
 * on input protobufjs would not read.
 */
function readRecordFields(bytes: Uint8Array, r: ZoneRecord, all: boolean): boolean {
  const b = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const end = b.length;
  at = 0;
  try {
    while (at < end) {
      const tag = varint(b, end);
      const wire = tag & 7;
      const field = tag >>> 3;
      const kind = field < RECORD_WIRE.length ? RECORD_WIRE[field]! : -1;
      if (kind === -1 && (wire <= LEN || wire === 5)) {
        skip(b, end, wire);
        continue;
      }
      if (kind === -1 || wire !== (kind === STR ? LEN : 0)) return false;
      if (kind === STR) {
        const len = varint(b, end);
        if (len > end - at) throw new RangeError('index out of range');
        if (!all && field > 4) {
          at += len;
          continue;
        }
        const s = len === 0 ? '' : b.toString('utf8', at, at + len);
        at += len;
        if (field === 2) r.name = s;
        else if (field === 3) r.type = s;
        else if (field === 4) r.destination = s;
        else if (field === 9) r.scheme = s;
        else if (field === 11) r.hostHeader = s;
        else r.hostHeaderMode = s;
        continue;
      }
      const v = varint(b, end);
      if (field === 1) r.id = v;
      else if (!all && field > 7) continue;
      else if (kind === BOOL) {
        if (field === 7) r.proxied = v !== 0;
        else if (field === 8) r.captcha = v !== 0;
        else r.monitor = v !== 0;
      } else {
        const u = v > 0xffffffff ? v % 4294967296 : v; // uint32: the low 32 bits
        if (field === 5) r.ttl = u;
        else if (field === 6) r.mxPriority = u;
        else if (field === 10) r.port = u;
        else r.timeout = u;
      }
    }
  } catch (err) {
    throw new PlatformError<ConfigErrorCode>('CFG_ERR_DECODE', `invalid ZoneRecord: ${(err as Error).message}`, {
      kind: 'system',
      cause: err,
    });
  }
  return true;
}

/**
 * The id of an encoded ZoneRecord, checking that the message reads as decodeZoneRecord would read it (the same
 * errors) without making its strings: what a node store needs to key a record it keeps as received.
 */
export function zoneRecordId(bytes: Uint8Array): number {
  const b = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const end = b.length;
  let id = 0;
  at = 0;
  try {
    while (at < end) {
      const tag = varint(b, end);
      const wire = tag & 7;
      const field = tag >>> 3;
      const kind = field < RECORD_WIRE.length ? RECORD_WIRE[field]! : -1;
      if ((kind === -1 && (wire === 3 || wire === 4 || wire > 5)) || (kind !== -1 && wire !== (kind === STR ? LEN : 0)))
        return decodeZoneRecord(bytes).id;
      if (field === 1) id = varint(b, end);
      else skip(b, end, wire);
    }
  } catch (err) {
    throw new PlatformError<ConfigErrorCode>('CFG_ERR_DECODE', `invalid ZoneRecord: ${(err as Error).message}`, {
      kind: 'system',
      cause: err,
    });
  }
  return id;
}

// ZoneRecord fields by number: how each is read (compiled-config.proto).
const U64 = 0;
const STR = 1;
const U32 = 2;
const BOOL = 3;
const RECORD_WIRE = [-1, U64, STR, STR, STR, U32, U32, BOOL, BOOL, STR, U32, STR, STR, U32, BOOL];

/** Read position of varint/skip (decodeZoneRecord is synchronous and never nests). */
let at = 0;

/** An unsigned varint of up to 64 bits as a number (exact below 2^53, as protobufjs's longs: Number). */
function varint(b: Buffer, end: number): number {
  let x = 0;
  for (let shift = 0; shift < 70; shift += 7) {
    if (at >= end) throw new RangeError('index out of range');
    const c = b[at++]!;
    x += shift < 28 ? (c & 0x7f) << shift : (c & 0x7f) * 2 ** shift;
    if (c < 0x80) return x;
  }
  throw new Error('invalid varint encoding');
}

/** Skips a field of wire type 0, 1, 2 or 5 (the caller sends groups and invalid types to the generic path). */
function skip(b: Buffer, end: number, wire: number): void {
  if (wire === 0) varint(b, end);
  else if (wire === 1) at += 8;
  else if (wire === 2) {
    const len = varint(b, end); // read before `at` is: varint moves it
    at += len;
  } else at += 4;
  if (at > end) throw new RangeError('index out of range');
}

export function encodeRule(rule: Rule): Uint8Array {
  return RuleType.encode(rule as unknown as protobuf.Message).finish();
}

export function decodeRule(bytes: Uint8Array): Rule {
  return toObject(RuleType, bytes) as unknown as Rule;
}

/** The snapshot without its records and rules, encoded: what the node store keeps per domain besides them. */
export function encodeSnapshotHeader(snapshot: DomainSnapshot): Uint8Array {
  return encodeDomainSnapshot({
    ...snapshot,
    zone: { ...snapshot.zone, records: [] },
    ruleSet: { ...snapshot.ruleSet, rules: [] },
  });
}

/**
 * The encoded bytes of each record and rule of an encoded snapshot, in wire order (the order decodeDomainSnapshot
 * returns them in), sliced without re-encoding. The caller has decoded the snapshot already, which checked it.
 */
export function sliceSnapshotParts(bytes: Uint8Array): { records: Uint8Array[]; rules: Uint8Array[] } {
  const records: Uint8Array[] = [];
  const rules: Uint8Array[] = [];
  try {
    forEachField(bytes, (field, r) => {
      if (field === SNAPSHOT_ZONE) sliceRepeated(r.bytes(), ZONE_RECORDS, records);
      else if (field === SNAPSHOT_RULE_SET) sliceRepeated(r.bytes(), RULE_SET_RULES, rules);
      else return false;
      return true;
    });
  } catch (err) {
    throw new PlatformError<ConfigErrorCode>('CFG_ERR_DECODE', `invalid DomainSnapshot: ${(err as Error).message}`, {
      kind: 'system',
      cause: err,
    });
  }
  return { records, rules };
}

/**
 * An encoded snapshot taken apart without decoding its records and rules: the snapshot without them (encoded, to be
 * decoded with decodeDomainSnapshot, which is then cheap whatever the zone's size), and the bytes of each record and
 * rule in wire order. Linear in the bytes; throws CFG_ERR_DECODE on a malformed message.
 */
export function splitSnapshot(bytes: Uint8Array): { header: Uint8Array; records: Uint8Array[]; rules: Uint8Array[] } {
  const records: Uint8Array[] = [];
  const rules: Uint8Array[] = [];
  const header = walkSnapshot(
    bytes,
    (r) => records.push(r.bytes()),
    (r) => rules.push(r.bytes()),
  );
  return { header, records, rules };
}

/**
 * splitSnapshot's header, and how many records and rules the snapshot holds, without a slice per record: what a
 * reader needs before it walks a large zone's records itself (received.ts). Throws CFG_ERR_DECODE as splitSnapshot.
 */
export function outlineSnapshot(bytes: Uint8Array): { header: Uint8Array; records: number; rules: number } {
  let records = 0;
  let rules = 0;
  const header = walkSnapshot(
    bytes,
    (r) => {
      r.skipType(LEN);
      records++;
    },
    (r) => {
      r.skipType(LEN);
      rules++;
    },
  );
  return { header, records, rules };
}

/** The snapshot without its records and rules (encoded); each record and rule is handed to `record` or `rule` with
 *  the reader at its length prefix, to be read or skipped. */
function walkSnapshot(
  bytes: Uint8Array,
  record: (r: protobuf.Reader) => void,
  rule: (r: protobuf.Reader) => void,
): Uint8Array {
  const pieces: Uint8Array[] = [];
  try {
    forEachRaw(bytes, (field, wire, r, raw) => {
      if (wire === LEN && (field === SNAPSHOT_ZONE || field === SNAPSHOT_RULE_SET)) {
        const inner = field === SNAPSHOT_ZONE ? ZONE_RECORDS : RULE_SET_RULES;
        const take = field === SNAPSHOT_ZONE ? record : rule;
        const kept: Uint8Array[] = [];
        forEachRaw(r.bytes(), (f, wt, ir, innerRaw) => {
          if (f === inner && wt === LEN) take(ir);
          else {
            ir.skipType(wt);
            kept.push(innerRaw());
          }
        });
        const body = Buffer.concat(kept);
        pieces.push(
          protobuf.Writer.create()
            .uint32((field << 3) | LEN)
            .uint32(body.length)
            .finish(),
          body,
        );
      } else {
        r.skipType(wire);
        pieces.push(raw());
      }
    });
  } catch (err) {
    throw new PlatformError<ConfigErrorCode>('CFG_ERR_DECODE', `invalid DomainSnapshot: ${(err as Error).message}`, {
      kind: 'system',
      cause: err,
    });
  }
  return Buffer.concat(pieces);
}

/** Where the first top-level length-delimited field `field` lies in `bytes`: its tag, its value, its end. */
export function lengthDelimitedFieldSpan(
  bytes: Uint8Array,
  field: number,
): { tagStart: number; valueStart: number; end: number } | null {
  let span: { tagStart: number; valueStart: number; end: number } | null = null;
  const r = protobuf.Reader.create(bytes);
  while (r.pos < r.len && !span) {
    const tagStart = r.pos;
    const tag = r.uint32();
    if ((tag & 7) === LEN && tag >>> 3 === field) {
      const length = r.uint32();
      span = { tagStart, valueStart: r.pos, end: r.pos + length };
    } else r.skipType(tag & 7);
  }
  return span;
}

/**
 * Calls `visit` for each field with the reader positioned after its tag; `visit` reads or skips the field, after which
 * `raw()` gives the field's bytes, tag included.
 */
function forEachRaw(
  bytes: Uint8Array,
  visit: (field: number, wire: number, r: protobuf.Reader, raw: () => Uint8Array) => void,
): void {
  const r = protobuf.Reader.create(bytes);
  while (r.pos < r.len) {
    const start = r.pos;
    const tag = r.uint32();
    visit(tag >>> 3, tag & 7, r, () => bytes.subarray(start, r.pos));
  }
}

/** Calls `take` for each length-delimited field; fields it does not take (returns false) are skipped. */
function forEachField(bytes: Uint8Array, take: (field: number, r: protobuf.Reader) => boolean): void {
  const r = protobuf.Reader.create(bytes);
  while (r.pos < r.len) {
    const tag = r.uint32();
    if ((tag & 7) !== LEN || !take(tag >>> 3, r)) r.skipType(tag & 7);
  }
}

function sliceRepeated(message: Uint8Array, field: number, into: Uint8Array[]): void {
  forEachField(message, (f, r) => {
    if (f !== field) return false;
    into.push(r.bytes());
    return true;
  });
}

/**
 * decodeDomainSnapshot(bytes), with the records and rules decoded by the hand-written decodeZoneRecord and decodeRule
 * instead of protobufjs: the same objects, at a fraction of the cost for a large zone (the hub's squash of a
 * million-record import into a snapshot).
 */
export function decodeDomainSnapshotFast(bytes: Uint8Array): DomainSnapshot {
  const parts = splitSnapshot(bytes);
  const snapshot = decodeDomainSnapshot(parts.header);
  if (parts.records.length > 0) snapshot.zone.records = parts.records.map(decodeZoneRecord);
  if (parts.rules.length > 0) snapshot.ruleSet.rules = parts.rules.map(decodeRule);
  return snapshot;
}
