// Wire frames of the sync protocol: a binary frame holds one or more length-delimited ConfigEntry messages;
// a text frame is a JSON control message.
import protobuf from 'protobufjs';
import { PlatformError } from '../errors.js';

/**
 * The largest frame a node accepts (its WebSocket maxPayload). The hub never sends a larger one: a domain whose whole
 * config does not fit is withheld (nodes keep what they had of it) until it fits again. 256 MiB: a zone of
 * 1,000,000 A records is about 60 MB encoded (DOMAIN_CONFIG_MAX_BYTES lets an operator allow it; 16 MiB by default).
 */
export const MAX_SYNC_FRAME_BYTES = 256 * 1024 * 1024;

/** Control messages sent by the hub as text frames. */
export type HubControl =
  /** Everything up to `version` (the hub's head when the node connected, or later) has been sent. */
  | { type: 'caught-up'; version: number }
  /** The node's version is above the log's head (the control plane's database was restored or replaced): the node
   *  drops its store and applies the catch-up that follows, which starts from version 0. */
  | { type: 'reset'; version: number };

/** Packs already-encoded ConfigEntry messages into one binary frame (each prefixed by its varint length). */
export function packEntries(entries: readonly Uint8Array[]): Uint8Array {
  const w = protobuf.Writer.create();
  for (const e of entries) w.bytes(e);
  return w.finish();
}

/** Splits a binary frame into its encoded ConfigEntry messages. */
export function unpackEntries(frame: Uint8Array): Uint8Array[] {
  try {
    const r = protobuf.Reader.create(frame);
    const out: Uint8Array[] = [];
    while (r.pos < r.len) out.push(r.bytes());
    return out;
  } catch (err) {
    throw new PlatformError('CFG_ERR_DECODE', `invalid sync frame: ${(err as Error).message}`, {
      kind: 'system',
      cause: err,
    });
  }
}
