// Finding a zone's node from the query's name bytes, without making a string of them: the parser hashes the name
// (and each suffix at a label start) while it has the bytes, and the zone's nodes are also indexed by that hash in an
// open-addressing table. A hit is checked byte for byte against the node's name; a miss (or a name that is not plain
// ASCII) falls back to the lookup by string (NodeMap.get, the same table), so the index never answers differently.
import type { ZoneNode } from './model.js';

const FNV_OFFSET = 0x811c9dc5 | 0;
const FNV_PRIME = 0x01000193;

/** One step of the hash, fed the name's characters from the last to the first (so a suffix's hash comes for free). */
export function hashStep(h: number, c: number): number {
  return Math.imul(h ^ c, FNV_PRIME);
}

export const HASH_START = FNV_OFFSET;

/** The hash's last mix (murmur3's finaliser): every input bit moves the low bits the table is indexed by. */
export function hashFinish(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return h ^ (h >>> 16);
}

/** The hash of a name string (lower case, labels separated by '.'), as the parser computes it from the bytes. */
export function nameHash(name: string): number {
  let h = HASH_START;
  for (let i = name.length - 1; i >= 0; i--) h = hashStep(h, name.charCodeAt(i));
  return hashFinish(h);
}

/** True when `name` is the `len` bytes of `bytes` from `start`. */
export function nameEquals(name: string, bytes: Uint8Array, start: number, len: number): boolean {
  if (name.length !== len) return false;
  for (let i = 0; i < len; i++) if (name.charCodeAt(i) !== bytes[start + i]) return false;
  return true;
}

/** Nodes by name hash: linear probing, deletions by backward shift, at most half full. */
export class NameIndex {
  private hashes = new Int32Array(16);
  private nodes: Array<ZoneNode | undefined> = new Array<ZoneNode | undefined>(16).fill(undefined);
  private used = new Uint8Array(16);
  private mask = 15;
  private count = 0;

  /** The node named by `bytes[start, start + len)` whose hash is `hash`, if indexed. */
  find(bytes: Uint8Array, start: number, len: number, hash: number): ZoneNode | undefined {
    const mask = this.mask;
    for (let i = hash & mask; this.used[i] !== 0; i = (i + 1) & mask) {
      if (this.hashes[i] === hash) {
        const node = this.nodes[i]!;
        if (nameEquals(node.name, bytes, start, len)) return node;
      }
    }
    return undefined;
  }

  /** Nodes indexed. */
  get size(): number {
    return this.count;
  }

  /** The node named `name`, if indexed. */
  get(name: string): ZoneNode | undefined {
    const i = this.slotOf(name, nameHash(name));
    return this.used[i] !== 0 ? this.nodes[i] : undefined;
  }

  /** The nodes indexed, in table order (stable while none is added or removed). */
  *values(): Generator<ZoneNode> {
    const { nodes, used } = this;
    for (let i = 0; i < used.length; i++) if (used[i] !== 0) yield nodes[i]!;
  }

  /** Indexes `node` under `name`, which must be `node.name` (the table compares the names of the nodes it holds). */
  set(name: string, node: ZoneNode): void {
    const hash = nameHash(name);
    const i = this.slotOf(name, hash);
    if (this.used[i] !== 0) {
      this.nodes[i] = node;
      return;
    }
    this.used[i] = 1;
    this.hashes[i] = hash;
    this.nodes[i] = node;
    if (++this.count * 2 > this.mask + 1) this.grow((this.mask + 1) * 2);
  }

  /** Makes room for `n` nodes in all, so that indexing them grows the table at most once (a large zone compiled
   *  whole: a million nodes otherwise rehash all those indexed before them 17 times over). */
  reserve(n: number): void {
    let size = this.mask + 1;
    while (n * 2 > size) size *= 2;
    if (size > this.mask + 1) this.grow(size);
  }

  /** Forgets `name`; false when it was not indexed. */
  delete(name: string): boolean {
    const mask = this.mask;
    let i = this.slotOf(name, nameHash(name));
    if (this.used[i] === 0) return false;
    this.count--;
    // Backward shift: move later entries of the run into the hole when their home slot allows it.
    for (let j = (i + 1) & mask; this.used[j] !== 0; j = (j + 1) & mask) {
      const home = this.hashes[j] & mask;
      const between = i <= j ? home > i && home <= j : home > i || home <= j;
      if (between) continue;
      this.hashes[i] = this.hashes[j];
      this.nodes[i] = this.nodes[j];
      i = j;
    }
    this.used[i] = 0;
    this.nodes[i] = undefined;
    return true;
  }

  clear(): void {
    this.used.fill(0);
    this.nodes.fill(undefined);
    this.count = 0;
  }

  /** The slot holding `name`, or the empty slot where it would go. */
  private slotOf(name: string, hash: number): number {
    const mask = this.mask;
    let i = hash & mask;
    while (this.used[i] !== 0 && !(this.hashes[i] === hash && this.nodes[i]!.name === name)) i = (i + 1) & mask;
    return i;
  }

  private grow(size: number): void {
    const { hashes, nodes, used } = this;
    this.hashes = new Int32Array(size);
    this.nodes = new Array<ZoneNode | undefined>(size).fill(undefined);
    this.used = new Uint8Array(size);
    this.mask = size - 1;
    for (let k = 0; k < used.length; k++) {
      if (used[k] === 0) continue;
      let i = hashes[k] & this.mask;
      while (this.used[i] !== 0) i = (i + 1) & this.mask;
      this.used[i] = 1;
      this.hashes[i] = hashes[k];
      this.nodes[i] = nodes[k];
    }
  }
}

/**
 * The zone's nodes by name, held in the NameIndex alone (a Map beside it cost a large zone a million more entries,
 * and its compile a million more Map writes): a Map's reads and writes, iterated in table order (not insertion order:
 * nothing that reads a zone's nodes depends on their order; zone transfers send the SOA first themselves). A node is
 * always kept under its own name.
 */
export class NodeMap {
  readonly index = new NameIndex();

  get size(): number {
    return this.index.size;
  }

  get(name: string): ZoneNode | undefined {
    return this.index.get(name);
  }

  has(name: string): boolean {
    return this.index.get(name) !== undefined;
  }

  set(name: string, node: ZoneNode): this {
    this.index.set(name, node);
    return this;
  }

  /** Makes room for `n` nodes in all (NameIndex.reserve). */
  reserve(n: number): void {
    this.index.reserve(n);
  }

  delete(name: string): boolean {
    return this.index.delete(name);
  }

  clear(): void {
    this.index.clear();
  }

  values(): IterableIterator<ZoneNode> {
    return this.index.values();
  }

  *keys(): Generator<string> {
    for (const node of this.index.values()) yield node.name;
  }

  *entries(): Generator<[string, ZoneNode]> {
    for (const node of this.index.values()) yield [node.name, node];
  }

  [Symbol.iterator](): Generator<[string, ZoneNode]> {
    return this.entries();
  }
}
