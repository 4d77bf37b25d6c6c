// What a compaction stores at the domain's entry it keeps (config-log.ts compact; the sync hub's mirror asks for it).

/** The entry kept is a delta whose payload is already the domain's whole state: it becomes a snapshot as it is. */
export const WHOLE_DELTA = 'whole-delta';

/** The squashed snapshot's bytes, or WHOLE_DELTA. */
export type Compacted = Uint8Array | typeof WHOLE_DELTA;
