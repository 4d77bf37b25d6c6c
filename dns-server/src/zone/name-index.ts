// Finding a zone's node from the query's name bytes, without making a string of them: the parser hashes the name
// (and each suffix at a label start) while it has the bytes, and the zone's nodes are also indexed by that hash in an
// open-addressing table. A hit is checked byte for byte against the node's name; a miss (or a name that is not plain
// ASCII) falls back to the Map by string, so the index only ever makes a lookup faster, never different.
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
    if (++this.count * 2 > this.mask + 1) this.grow();
  }

  delete(name: string): void {
    const mask = this.mask;
    let i = this.slotOf(name, nameHash(name));
    if (this.used[i] === 0) return;
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

  private grow(): void {
    const { hashes, nodes, used } = this;
    const size = (this.mask + 1) * 2;
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

/** The zone's nodes by name: a Map, with every set and delete mirrored into a NameIndex. */
export class NodeMap extends Map<string, ZoneNode> {
  readonly index = new NameIndex();

  override set(name: string, node: ZoneNode): this {
    super.set(name, node);
    // The Map constructor calls set before the fields exist; NodeMap is always made empty.
    this.index.set(name, node);
    return this;
  }

  override delete(name: string): boolean {
    this.index.delete(name);
    return super.delete(name);
  }

  override clear(): void {
    this.index.clear();
    super.clear();
  }
}
