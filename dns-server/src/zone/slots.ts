// Query types with a precompiled answer per node; every other type shares the OTHER slot.
import { TYPE } from '../wire/constants.js';

export const SLOT_TYPES: readonly number[] = [
  TYPE.A,
  TYPE.NS,
  TYPE.CNAME,
  TYPE.SOA,
  TYPE.PTR,
  TYPE.MX,
  TYPE.TXT,
  TYPE.AAAA,
  TYPE.SRV,
  TYPE.CAA,
  TYPE.ANY,
];
export const OTHER = SLOT_TYPES.length;
export const SLOT_COUNT = SLOT_TYPES.length + 1;

/** qtype → slot index, one byte per possible qtype. */
export const SLOT_OF = new Uint8Array(65536).fill(OTHER);
SLOT_TYPES.forEach((t, i) => {
  SLOT_OF[t] = i;
});
