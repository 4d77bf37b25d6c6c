// Slots of small direct-mapped memos keyed by a request's strings (its Host, its path). uWS gives each request new
// strings, and a Map or Set lookup by one hashes the whole string (V8 keeps the hash on the string object, so a new
// one is hashed again), and a key built from several is flattened first. A memo finds its slot from at most 32 of the
// characters and confirms it by comparing the strings it kept (the same object, or equal characters).

/** The slot of `s` in a table of `mask + 1` slots (a power of two): its length and up to its first and last 16 chars. */
export function stringSlot(s: string, mask: number): number {
  const n = s.length;
  let x = Math.imul(n, 0x9e3779b1);
  if (n <= 32) for (let i = 0; i < n; i++) x = Math.imul(x ^ s.charCodeAt(i), 0x01000193);
  else {
    for (let i = 0; i < 16; i++) x = Math.imul(x ^ s.charCodeAt(i), 0x01000193);
    for (let i = n - 16; i < n; i++) x = Math.imul(x ^ s.charCodeAt(i), 0x01000193);
  }
  return (x ^ (x >>> 16)) & mask;
}

/**
 * A direct-mapped memo of `compute(key)` for `slots` keys (a power of two) by stringSlot: a key whose slot holds it
 * gets the value kept (undefined too), confirmed by one comparison; another takes the slot over.
 */
export class StringSlotMemo<V> {
  private readonly keys: (string | undefined)[];
  private readonly values: V[];
  private readonly mask: number;

  constructor(
    slots: number,
    private readonly compute: (key: string) => V,
    private readonly empty: V,
  ) {
    this.mask = slots - 1;
    this.keys = new Array<string | undefined>(slots).fill(undefined);
    this.values = new Array<V>(slots).fill(empty);
  }

  get(key: string): V {
    const slot = stringSlot(key, this.mask);
    if (this.keys[slot] === key) return this.values[slot] as V;
    const value = this.compute(key);
    this.keys[slot] = key;
    this.values[slot] = value;
    return value;
  }

  /** Forgets every key (and lets go of the values). */
  clear(): void {
    this.keys.fill(undefined);
    this.values.fill(this.empty);
  }
}
