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
