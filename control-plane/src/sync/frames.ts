// Packs encoded ConfigEntry messages into binary frames for the wire.
import { packEntries } from '@platform/shared/config';

/** Entries are packed together up to this size; an entry larger than it goes alone in its own frame. */
export const FRAME_TARGET_BYTES = 1 << 20;

/**
 * Frames of at most FRAME_TARGET_BYTES (one entry alone may exceed it; the mirror never hands out an entry larger
 * than the nodes' frame limit), in order.
 */
export function framesOf(entries: readonly Uint8Array[]): Uint8Array[] {
  const frames: Uint8Array[] = [];
  let batch: Uint8Array[] = [];
  let size = 0;
  for (const bytes of entries) {
    if (batch.length > 0 && size + bytes.length > FRAME_TARGET_BYTES) {
      frames.push(packEntries(batch));
      batch = [];
      size = 0;
    }
    batch.push(bytes);
    size += bytes.length + 5;
  }
  if (batch.length > 0) frames.push(packEntries(batch));
  return frames;
}
