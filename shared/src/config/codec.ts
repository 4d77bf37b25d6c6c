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

/** Encodes an entry; a snapshot already encoded (as stored in config_log.payload) can be passed as `snapshotBytes`. */
export function encodeConfigEntry(
  entry: ConfigEntry | (Omit<ConfigEntry, 'snapshot'> & { snapshotBytes: Uint8Array }),
): Uint8Array {
  if ('snapshotBytes' in entry) {
    // Splice the stored bytes in as field 4 without decoding them: the hub streams payloads as they are.
    const head = ConfigEntryType.encode({
      version: entry.version,
      domain: entry.domain,
      deleted: entry.deleted,
    }).finish();
    if (entry.deleted || entry.snapshotBytes.length === 0) return head;
    const w = protobuf.Writer.create();
    w.uint32((4 << 3) | 2).bytes(entry.snapshotBytes);
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
  const obj = toObject(ConfigEntryType, bytes) as unknown as ConfigEntry & { snapshot?: DomainSnapshot | null };
  const entry: ConfigEntry = { version: obj.version, domain: obj.domain, deleted: obj.deleted };
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
export function splitConfigEntry(bytes: Uint8Array): {
  version: number;
  domain: string;
  deleted: boolean;
  snapshotBytes: Uint8Array;
} {
  try {
    const r = protobuf.Reader.create(bytes);
    let version = 0;
    let domain = '';
    let deleted = false;
    let snapshotBytes: Uint8Array = new Uint8Array(0);
    while (r.pos < r.len) {
      const tag = r.uint32();
      switch (tag >>> 3) {
        case 1:
          version = Number(r.uint64());
          break;
        case 2:
          domain = r.string();
          break;
        case 3:
          deleted = r.bool();
          break;
        case 4:
          snapshotBytes = r.bytes();
          break;
        default:
          r.skipType(tag & 7);
      }
    }
    return { version, domain, deleted, snapshotBytes };
  } catch (err) {
    throw new PlatformError<ConfigErrorCode>('CFG_ERR_DECODE', `invalid ConfigEntry: ${(err as Error).message}`, {
      kind: 'system',
      cause: err,
    });
  }
}

function toObject(type: protobuf.Type, bytes: Uint8Array): Record<string, unknown> {
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
