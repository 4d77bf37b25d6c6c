// A domain snapshot taken apart for the node store: the domain's header (every field but the records and rules),
// and each record and rule as its own encoded message, so one record can be read, written or removed alone.
import protobuf from 'protobufjs';
import { PlatformError } from '../errors.js';
import { PROTO_PATH, encodeDomainSnapshot, toObject, type ConfigErrorCode } from './codec.js';
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

export function decodeZoneRecord(bytes: Uint8Array): ZoneRecord {
  return toObject(ZoneRecordType, bytes) as unknown as ZoneRecord;
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
