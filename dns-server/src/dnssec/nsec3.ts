// NSEC3 (RFC 5155) with the parameters RFC 9276 recommends: SHA-1, no extra iterations, no salt, no opt-out.
// The chain is kept sorted by hash and patched name by name; each NSEC3 RR is re-signed only when its RDATA changes.
import { createHash } from 'node:crypto';
import { TYPE } from '../wire/constants.js';
import type { Rdata, RRset } from '../zone/model.js';
import { nameWire } from './keys.js';
import { nsec3Label } from './hash-label.js';

const B32 = '0123456789abcdefghijklmnopqrstuv';

/** base32hex without padding, lower case (RFC 4648 §7): sorts like the bytes it encodes. */
export function base32hex(b: Buffer): string {
  let out = '';
  let bits = 0;
  let value = 0;
  for (const byte of b) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += B32[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += B32[(value << (5 - bits)) & 31];
  return out;
}

export function nsec3Hash(name: string): Buffer {
  return createHash('sha1').update(nameWire(name)).digest();
}

/** NSEC3PARAM RDATA: SHA-1, flags 0, 0 iterations, empty salt. */
export const NSEC3PARAM_RDATA = Buffer.from([1, 0, 0, 0, 0]);

/** Type bitmap (RFC 4034 §4.1.2) of a set of types. */
export function typeBitmap(types: Iterable<number>): Buffer {
  const sorted = [...new Set(types)].sort((a, b) => a - b);
  const out: number[] = [];
  let i = 0;
  while (i < sorted.length) {
    const window = sorted[i] >> 8;
    const bits = new Uint8Array(32);
    let len = 0;
    for (; i < sorted.length && sorted[i] >> 8 === window; i++) {
      const low = sorted[i] & 0xff;
      bits[low >> 3] |= 0x80 >> (low & 7);
      len = (low >> 3) + 1;
    }
    out.push(window, len, ...bits.subarray(0, len));
  }
  return Buffer.from(out);
}

export interface Nsec3Entry {
  /** base32hex of the hash: the first label of the NSEC3 owner. */
  label: string;
  hash: Buffer;
  /** The name it stands for. */
  name: string;
  bitmap: Buffer;
  /** The NSEC3 RRset (owner `label.apex`) and its signature, null until linked. */
  rrset: RRset | null;
  sig: RRset | null;
}

/** The chain: entries by hash label, and the labels sorted. */
export class Nsec3Chain {
  private readonly byLabel = new Map<string, Nsec3Entry>();
  private readonly labelOfName = new Map<string, string>();
  private sorted: string[] = [];
  private dirty = new Set<string>();
  private membershipChanged = false;
  private readonly gone: string[] = [];
  private lastRemoved: Array<{ owner: string; rrset: RRset; sig: RRset | null }> = [];
  /** The NSEC3 RRsets the last link() replaced or dropped, and those it made (zone transfer journal). */
  lastChange: {
    removed: Array<{ owner: string; rrset: RRset; sig: RRset | null }>;
    added: Array<{ owner: string; rrset: RRset; sig: RRset | null }>;
  } = { removed: [], added: [] };

  constructor(
    private readonly ttl: number,
    private readonly sign: (owner: string, type: number, ttl: number, rdatas: Rdata[]) => RRset,
    private readonly apex: string,
  ) {}

  get size(): number {
    return this.sorted.length;
  }

  /** Sets the types of `name` (null: the name leaves the chain). Call link() once after a batch. */
  set(name: string, types: Iterable<number> | null): void {
    const old = this.labelOfName.get(name);
    if (types === null) {
      if (old === undefined) return;
      this.labelOfName.delete(name);
      const e = this.byLabel.get(old)!;
      if (e.rrset) this.lastRemoved.push({ owner: `${old}.${this.apex}`, rrset: e.rrset, sig: e.sig });
      this.byLabel.delete(old);
      this.gone.push(old);
      this.membershipChanged = true;
      return;
    }
    const bitmap = typeBitmap(types);
    if (old !== undefined) {
      const e = this.byLabel.get(old)!;
      if (!e.bitmap.equals(bitmap)) {
        e.bitmap = bitmap;
        this.dirty.add(old);
      }
      return;
    }
    const hash = nsec3Hash(name);
    const label = base32hex(hash);
    this.labelOfName.set(name, label);
    this.byLabel.set(label, { label, hash, name, bitmap, rrset: null, sig: null });
    this.dirty.add(label);
    this.membershipChanged = true;
  }

  /** Re-links and re-signs what the changes since the last link() touched. */
  link(): void {
    const removed = this.lastRemoved;
    this.lastRemoved = [];
    this.lastChange = { removed, added: [] };
    if (this.membershipChanged) {
      this.sorted = [...this.byLabel.keys()].sort();
      // The entry before each added or removed hash points at a new next hash.
      for (const label of [...this.dirty, ...this.gone]) {
        const i = this.floor(label, this.byLabel.has(label));
        if (i >= 0) this.dirty.add(this.sorted[i]);
      }
      this.gone.length = 0;
      this.membershipChanged = false;
    }
    const n = this.sorted.length;
    for (const label of this.dirty) {
      const e = this.byLabel.get(label);
      if (!e) continue;
      const i = this.indexOf(label);
      const next = this.byLabel.get(this.sorted[(i + 1) % n])!.hash;
      const rdata = Buffer.concat([Buffer.from([1, 0, 0, 0, 0, 20]), next, e.bitmap]);
      if (e.rrset && (e.rrset.rdatas[0][0] as Buffer).equals(rdata)) continue;
      const owner = `${label}.${this.apex}`;
      if (e.rrset) this.lastChange.removed.push({ owner, rrset: e.rrset, sig: e.sig });
      e.rrset = { type: TYPE.NSEC3, ttl: this.ttl, rdatas: [[rdata]], targets: [] };
      e.sig = this.sign(owner, TYPE.NSEC3, this.ttl, e.rrset.rdatas);
      this.lastChange.added.push({ owner, rrset: e.rrset, sig: e.sig });
    }
    this.dirty = new Set();
  }

  private indexOf(label: string): number {
    let lo = 0;
    let hi = this.sorted.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const v = this.sorted[mid];
      if (v === label) return mid;
      if (v < label) lo = mid + 1;
      else hi = mid - 1;
    }
    return -1;
  }

  /** Index of the entry before `label` (strictly before when `present`), wrapping to the last. */
  private floor(label: string, present: boolean): number {
    const s = this.sorted;
    if (s.length === 0) return -1;
    let lo = 0;
    let hi = s.length; // first index with s[i] >= label
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (s[mid] < label) lo = mid + 1;
      else hi = mid;
    }
    void present;
    return (lo - 1 + s.length) % s.length;
  }

  /** The entry whose hash is `name`'s (the name is in the chain). */
  matching(name: string): Nsec3Entry | undefined {
    const label = this.labelOfName.get(name);
    return label === undefined ? undefined : this.byLabel.get(label);
  }

  /** The entry whose interval covers the hash of `name` (a name not in the chain). */
  covering(name: string): Nsec3Entry | undefined {
    const i = this.floor(nsec3Label(name), false);
    return i < 0 ? undefined : this.byLabel.get(this.sorted[i]);
  }

  /** Every entry in hash order (zone transfers, dumps). */
  *entries(): Iterable<Nsec3Entry> {
    for (const label of this.sorted) yield this.byLabel.get(label)!;
  }
}
