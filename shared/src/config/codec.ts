// Loads shared/proto/compiled-config.proto once with protobufjs and encodes/decodes its messages.
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';
import { PlatformError } from '../errors.js';
import { SCHEMA_MAJOR, type ConfigEntry, type DomainSnapshot } from './types.js';

export const PROTO_PATH = fileURLToPath(new URL('../../proto/compiled-config.proto', import.meta.url));

const root = protobuf.loadSync(PROTO_PATH);
const ConfigEntryType = root.lookupType('platform.config.v1.ConfigEntry');
const DomainSnapshotType = root.lookupType('platform.config.v1.DomainSnapshot');

// Every field present with its default, 64-bit integers as JS numbers (versions and ids stay far below 2^53),
// bytes as Uint8Array (Buffer on Node).
const TO_OBJECT: protobuf.IConversionOptions = {
  longs: Number,
  enums: String,
  defaults: true,
  arrays: true,
  objects: false,
};

export type ConfigErrorCode =
  | 'CFG_ERR_DECODE' // the bytes are not a valid message of the expected type
  | 'CFG_ERR_SCHEMA_MAJOR'; // the snapshot was written with another major schema version

/** Encodes a snapshot; the object must have the interface's shape (encode reads the fields directly, no fromObject pass). */
export function encodeDomainSnapshot(snapshot: DomainSnapshot): Uint8Array {
  return DomainSnapshotType.encode(snapshot as unknown as protobuf.Message).finish();
}

/** Decodes a snapshot; throws CFG_ERR_DECODE on garbage and CFG_ERR_SCHEMA_MAJOR on another major version. */
export function decodeDomainSnapshot(bytes: Uint8Array): DomainSnapshot {
  const snapshot = toObject(DomainSnapshotType, bytes) as unknown as DomainSnapshot;
  checkMajor(snapshot);
  return fillSnapshot(snapshot);
}

/** The header fields of an entry (everything but the snapshot), as splitConfigEntry returns them. */
export interface ConfigEntryHeader {
  version: number;
  domain: string;
  deleted: boolean;
  delta: boolean;
  removedRecordIds: number[];
  removedRuleIds: number[];
}

/** Encodes an entry; a snapshot already encoded (as stored in config_log.payload) can be passed as `snapshotBytes`. */
export function encodeConfigEntry(
  entry: ConfigEntry | (Omit<ConfigEntry, 'snapshot'> & { snapshotBytes: Uint8Array }),
): Uint8Array {
  if ('snapshotBytes' in entry) {
    // Splice the stored bytes in as field 4 without decoding them: the hub streams payloads as they are.
    const { snapshotBytes, ...header } = entry;
    const head = ConfigEntryType.encode(ConfigEntryType.fromObject(header)).finish();
    if (entry.deleted || snapshotBytes.length === 0) return head;
    const w = protobuf.Writer.create();
    w.uint32((4 << 3) | 2).bytes(snapshotBytes);
    const tail = w.finish();
    const out = new Uint8Array(head.length + tail.length);
    out.set(head, 0);
    out.set(tail, head.length);
    return out;
  }
  return ConfigEntryType.encode(ConfigEntryType.fromObject(entry)).finish();
}

/** Decodes an entry; the snapshot (when present) is checked like decodeDomainSnapshot. */
export function decodeConfigEntry(bytes: Uint8Array): ConfigEntry {
  const obj = toObject(ConfigEntryType, bytes) as unknown as Required<ConfigEntry> & {
    snapshot?: DomainSnapshot | null;
  };
  const entry: ConfigEntry = { version: obj.version, domain: obj.domain, deleted: obj.deleted };
  if (obj.delta) {
    entry.delta = true;
    entry.removedRecordIds = obj.removedRecordIds;
    entry.removedRuleIds = obj.removedRuleIds;
  }
  if (obj.snapshot && !obj.deleted) {
    checkMajor(obj.snapshot);
    entry.snapshot = fillSnapshot(obj.snapshot);
  }
  return entry;
}

/**
 * Splits an encoded entry into its header and the raw snapshot bytes, without decoding the snapshot:
 * a node stores the bytes as received and decodes only when it reads them.
 */
export function splitConfigEntry(bytes: Uint8Array): ConfigEntryHeader & { snapshotBytes: Uint8Array } {
  try {
    const r = protobuf.Reader.create(bytes);
    const out: ConfigEntryHeader & { snapshotBytes: Uint8Array } = {
      version: 0,
      domain: '',
      deleted: false,
      delta: false,
      removedRecordIds: [],
      removedRuleIds: [],
      snapshotBytes: new Uint8Array(0),
    };
    const readIds = (tag: number, into: number[]) => {
      if ((tag & 7) !== 2) {
        into.push(Number(r.uint64()));
        return;
      }
      const end = r.uint32() + r.pos; // packed (proto3's default for repeated scalars)
      while (r.pos < end) into.push(Number(r.uint64()));
    };
    while (r.pos < r.len) {
      const tag = r.uint32();
      switch (tag >>> 3) {
        case 1:
          out.version = Number(r.uint64());
          break;
        case 2:
          out.domain = r.string();
          break;
        case 3:
          out.deleted = r.bool();
          break;
        case 4:
          out.snapshotBytes = r.bytes();
          break;
        case 5:
          out.delta = r.bool();
          break;
        case 6:
          readIds(tag, out.removedRecordIds);
          break;
        case 7:
          readIds(tag, out.removedRuleIds);
          break;
        default:
          r.skipType(tag & 7);
      }
    }
    return out;
  } catch (err) {
    throw new PlatformError<ConfigErrorCode>('CFG_ERR_DECODE', `invalid ConfigEntry: ${(err as Error).message}`, {
      kind: 'system',
      cause: err,
    });
  }
}

/** Decodes `bytes` as `type` into a plain object (every field with its default); throws CFG_ERR_DECODE. */
export function toObject(type: protobuf.Type, bytes: Uint8Array): Record<string, unknown> {
  try {
    return type.toObject(type.decode(bytes), TO_OBJECT);
  } catch (err) {
    throw new PlatformError<ConfigErrorCode>('CFG_ERR_DECODE', `invalid ${type.name}: ${(err as Error).message}`, {
      kind: 'system',
      cause: err,
    });
  }
}

function checkMajor(snapshot: DomainSnapshot): void {
  if (snapshot.schemaMajor !== SCHEMA_MAJOR) {
    throw new PlatformError<ConfigErrorCode>(
      'CFG_ERR_SCHEMA_MAJOR',
      `snapshot schema major ${snapshot.schemaMajor} is not supported (expected ${SCHEMA_MAJOR})`,
      { kind: 'system' },
    );
  }
}

// toObject leaves unset sub-messages null; nodes expect every sub-message present.
function fillSnapshot(s: DomainSnapshot): DomainSnapshot {
  s.zone ??= toObject(
    root.lookupType('platform.config.v1.Zone'),
    new Uint8Array(0),
  ) as unknown as DomainSnapshot['zone'];
  s.settings ??= toObject(
    root.lookupType('platform.config.v1.DomainSettings'),
    new Uint8Array(0),
  ) as unknown as DomainSnapshot['settings'];
  s.ruleSet ??= { version: 0, rules: [] };
  return s;
}
