// A node's RRsets by type. Most names of a large zone hold one RRset: a Map for it costs ~170 bytes and two heap
// objects (the Map and its hash table) per name, a million of them in a million-record zone, all surviving every
// scavenge. OneRRset is the read-only map of exactly one RRset: one small object; OneAddress holds one A record's
// TTL and address until the RRset is first read.
import type { RRset } from './model.js';
import { TYPE } from '../wire/constants.js';

/** What a node's answers read of its RRsets (ZoneNode.rrsets): a Map, a OneRRset or NO_RRSETS. */
export type RRsets = ReadonlyMap<number, RRset>;

/** The RRsets of a node holding exactly one: OneRRset, or OneAddress (its RRset made on first read). */
export abstract class SingleRRset implements ReadonlyMap<number, RRset> {
  /** The type of the one RRset. */
  abstract get type(): number;
  /** The one RRset. */
  protected abstract rrset(): RRset;

  get size(): number {
    return 1;
  }

  get(type: number): RRset | undefined {
    return type === this.type ? this.rrset() : undefined;
  }

  has(type: number): boolean {
    return type === this.type;
  }

  forEach(fn: (value: RRset, key: number, map: ReadonlyMap<number, RRset>) => void, thisArg?: unknown): void {
    fn.call(thisArg, this.rrset(), this.type, this);
  }

  *keys(): MapIterator<number> {
    yield this.type;
  }

  *values(): MapIterator<RRset> {
    yield this.rrset();
  }

  *entries(): MapIterator<[number, RRset]> {
    yield [this.type, this.rrset()];
  }

  [Symbol.iterator](): MapIterator<[number, RRset]> {
    return this.entries();
  }
}

/** The RRsets of a node holding exactly one, as an RRset object. */
export class OneRRset extends SingleRRset {
  constructor(private readonly set: RRset) {
    super();
  }

  get type(): number {
    return this.set.type;
  }

  protected rrset(): RRset {
    return this.set;
  }
}

/** The targets of an RRset whose type has none: shared, frozen. */
const NO_TARGETS = Object.freeze([]) as unknown as string[];

/**
 * The RRsets of a node holding one A record, as its TTL and address: most names of a large zone. The RRset object
 * (with its RDATA array and 4-byte Buffer: four heap objects) is made on its first read, which for a plain name of a
 * large zone is its first query (its answers are compiled then), and kept from then on (signatures and the zone
 * transfer journal are attached to that object).
 */
export class OneAddress extends SingleRRset {
  private made: RRset | undefined = undefined;

  constructor(
    private readonly ttl: number,
    /** The IPv4 address as a 32-bit number, first octet highest (signed: a small integer, not a boxed double). */
    private readonly address: number,
  ) {
    super();
  }

  get type(): number {
    return TYPE.A;
  }

  protected rrset(): RRset {
    if (this.made !== undefined) return this.made;
    const bytes = Buffer.allocUnsafe(4);
    bytes.writeInt32BE(this.address | 0, 0);
    return (this.made = { type: TYPE.A, ttl: this.ttl, rdatas: [[bytes]], targets: NO_TARGETS });
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
