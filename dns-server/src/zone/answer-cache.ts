// Flat answers by query: the whole response message (ID 0, RD and CD clear, no OPT) of each (lower-case wire name,
// qtype, DO bit) answered, kept in one byte arena beside the key's bytes, and found by one probe of an open-addressing table of
// typed arrays. A hit is a copy of contiguous bytes and a patch of the ID, flags, question and OPT: no zone lookup, no
// node, slot or template objects to walk (the zone's object graph costs five or six dependent cache misses per query).
// Filled on a query's first answer through the zone (so importing a zone does no extra work and the memory is bounded
// whatever the zone's size), emptied whole (one counter) whenever the table or any zone in it changes, and when the
// arena is full. An answer follows from the name, the qtype and the DO bit alone (a DO=1 answer from a signed zone
// holds the RRSIGs and NSEC3 proofs kept per RRset, which change only with the zone); the size the query allows is
// checked on every hit (the whole answer is kept, never a truncated one; one that does not fit goes through the zone).
import { keyBytes, type ParsedQuery } from '../wire/query.js';

/** Entry slots (a power of two); at most about half is used before the arena fills with answers of ~100 bytes. */
const SLOTS = 1 << 17;
/**
 * Arena bytes: the keys and answers of every entry, appended; full → everything is dropped (gen++). Signed answers
 * (RRSIGs, NSEC3 proofs) are ~320 bytes on average in bench/dns-server/zone-gen.ts's zone against ~100 unsigned: its
 * 10,000 names signed take 3.5 MiB.
 */
const ARENA = 8 << 20;
/** Slots looked at from an entry's home slot (an insert that finds all of them in use replaces the home one). */
const PROBES = 8;
/** Largest answer kept (a bigger one is answered through the zone each time). */
export const MAX_CACHED = 1232;
/** Bytes before an entry's key in the arena: the DO bit, the qtype (2), the key's length. */
const KEY_HEADER = 4;
/** Per-entry fields in `entries`: hash, generation, arena offset of the key, answer length. */
const F = 4;

export class AnswerCache {
  private readonly entries = new Int32Array(SLOTS * F);
  /** RRL bookkeeping per entry: class (rrl.ts RRL_CLASS); and the name its bucket is keyed by. */
  readonly kinds = new Uint8Array(SLOTS);
  readonly names: string[] = new Array<string>(SLOTS).fill('');
  readonly arena = Buffer.allocUnsafeSlow(ARENA);
  private gen = 1;
  private used = 0;

  /** Hashes of questions seen once (one per slot, the last one wins): see admit. */
  private readonly seen = new Int32Array(SLOTS);

  /**
   * Whether an answer to a name anyone can make up (a name that does not exist, one synthesised from a wildcard) is
   * worth keeping: only when the same question was asked before (a flood of random names then costs one store per
   * query, instead of a copy that pushes the answers worth keeping out of the arena and the zone out of the CPU's
   * caches). Names of the zone are kept on first answer; there are only as many of them as the zone holds.
   */
  admit(q: ParsedQuery): boolean {
    const h = AnswerCache.hashOf(q);
    const i = (h ^ (h >>> 16)) & (SLOTS - 1);
    if (this.seen[i] === h) return true;
    this.seen[i] = h;
    return false;
  }

  /** Forgets every entry (a zone changed, or the table). */
  clear(): void {
    this.gen = (this.gen + 1) | 0;
    if (this.gen === 0) {
      this.entries.fill(0);
      this.gen = 1;
    }
    this.used = 0;
  }

  private static hashOf(q: ParsedQuery): number {
    return (q.labelCount === 0 ? 0 : q.suffixHashes[0]) ^ Math.imul(q.qtype + (q.ednsDo ? 0x10001 : 1), 0x9e3779b1);
  }

  /** The entry answering `q` (its name in keyBytes), or -1. */
  find(q: ParsedQuery): number {
    const h = AnswerCache.hashOf(q);
    const e = this.entries;
    const gen = this.gen;
    const arena = this.arena;
    const len = q.keyLength;
    const qtype = q.qtype;
    const dnssecOk = q.ednsDo ? 1 : 0;
    for (let n = 0, i = h & (SLOTS - 1); n < PROBES; n++, i = (i + 1) & (SLOTS - 1)) {
      const b = i * F;
      if (e[b + 1] !== gen) return -1;
      if (e[b] !== h) continue;
      let p = e[b + 2];
      if (
        arena[p] !== dnssecOk ||
        arena[p + 1] !== qtype >>> 8 ||
        arena[p + 2] !== (qtype & 0xff) ||
        arena[p + 3] !== len
      )
        continue;
      p += KEY_HEADER;
      let k = 0;
      while (k < len && arena[p + k] === keyBytes[k]) k++;
      if (k === len) return i;
    }
    return -1;
  }

  /** Arena offset of entry `i`'s answer. */
  answerAt(i: number): number {
    const p = this.entries[i * F + 2];
    return p + KEY_HEADER + this.arena[p + 3];
  }

  /** Length of entry `i`'s answer. */
  answerLength(i: number): number {
    return this.entries[i * F + 3];
  }

  /**
   * Room for an answer of `size` bytes to `q`: writes the key, claims a slot and returns the arena offset where the
   * caller writes the answer (then it must call commit), or -1 when it is not kept.
   */
  reserve(q: ParsedQuery, size: number, kind: number, name: string): number {
    if (size > MAX_CACHED || size < 12) return -1;
    const len = q.keyLength;
    const need = KEY_HEADER + len + size;
    if (this.used + need > ARENA) this.clear();
    const h = AnswerCache.hashOf(q);
    const e = this.entries;
    const gen = this.gen;
    let slot = h & (SLOTS - 1);
    for (let n = 0, i = slot; n < PROBES; n++, i = (i + 1) & (SLOTS - 1)) {
      if (e[i * F + 1] !== gen) {
        slot = i;
        break;
      }
    }
    const p = this.used;
    const arena = this.arena;
    arena[p] = q.ednsDo ? 1 : 0;
    arena[p + 1] = q.qtype >>> 8;
    arena[p + 2] = q.qtype & 0xff;
    arena[p + 3] = len;
    for (let k = 0; k < len; k++) arena[p + KEY_HEADER + k] = keyBytes[k];
    this.used = p + need;
    const b = slot * F;
    e[b] = h;
    e[b + 1] = gen;
    e[b + 2] = p;
    e[b + 3] = size;
    this.kinds[slot] = kind;
    this.names[slot] = name;
    return p + KEY_HEADER + len;
  }
}
