// A node's RRsets by type. Most names of a large zone hold one RRset: a Map for it costs ~170 bytes and two heap
// objects (the Map and its hash table) per name, a million of them in a million-record zone, all surviving every
// scavenge. OneRRset is the read-only map of exactly one RRset: one small object.
import type { RRset } from './model.js';

/** What a node's answers read of its RRsets (ZoneNode.rrsets): a Map, a OneRRset or NO_RRSETS. */
export type RRsets = ReadonlyMap<number, RRset>;

/** The RRsets of a node holding exactly one. */
export class OneRRset implements ReadonlyMap<number, RRset> {
  constructor(private readonly set: RRset) {}

  get size(): number {
    return 1;
  }

  get(type: number): RRset | undefined {
    return type === this.set.type ? this.set : undefined;
  }

  has(type: number): boolean {
    return type === this.set.type;
  }

  forEach(fn: (value: RRset, key: number, map: ReadonlyMap<number, RRset>) => void, thisArg?: unknown): void {
    fn.call(thisArg, this.set, this.set.type, this);
  }

  *keys(): MapIterator<number> {
    yield this.set.type;
  }

  *values(): MapIterator<RRset> {
    yield this.set;
  }

  *entries(): MapIterator<[number, RRset]> {
    yield [this.set.type, this.set];
  }

  [Symbol.iterator](): MapIterator<[number, RRset]> {
    return this.entries();
  }
}

/** The RRsets of a node holding none (an empty non-terminal): shared, never written. */
export const NO_RRSETS: RRsets = new Map<number, RRset>();

/** `sets` as compactly as it can be held: NO_RRSETS, a OneRRset, or the Map itself (two RRsets or more). */
export function compactRRsets(sets: Map<number, RRset>): RRsets {
  if (sets.size === 0) return NO_RRSETS;
  if (sets.size === 1) return new OneRRset(sets.values().next().value!);
  return sets;
}
