// Column stores (the edge's request log, the DNS node's flat records) grow their typed arrays the same way.

type GrowableArray = Int32Array | Uint32Array | Uint8Array | Float64Array;

/** A new array of `length` of the same type, holding `old`'s values at the start (`length` ≥ old.length). */
export function grown<T extends GrowableArray>(old: T, length: number): T {
  const made = new (old.constructor as new (length: number) => T)(length);
  made.set(old);
  return made;
}
