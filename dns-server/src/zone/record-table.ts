// A zone builder's records by id, most of them flat: a large zone holds a million, and an object per record (with its
// name and destination strings: three heap objects, ~140 bytes) survives every scavenge of the import for nothing but
// the rare recompile of its owner.
import { ipv4Number, ipv4Text } from '../wire/rdata.js';
import { grown } from '@platform/shared';
import { zoneRecordCore } from '@platform/shared/config';
import { oneAddressContent, type OwnerContent, type OwnerRecord } from './owner.js';

/**
 * Records by id. A record of type "A", not proxied, whose name is the relative lower-case name of its owner and whose
 * destination is an IPv4 address in its usual form is kept flat: its owner name (the string the zone's node holds
 * anyway), address, TTL and MX priority in arrays, read back as an equal OwnerRecord. Any other record is kept as
 * its OwnerRecord object.
 */
export class RecordTable {
  /** A record object, or the index of a flat record whose id is not in `dense`. */
  private readonly byId = new Map<number, OwnerRecord | number>();
  /**
   * Flat records by id - denseBase: their index + 1 (0: none there, see byId). A zone given in increasing id order
   * (an import, a snapshot: the hub's ids) fills it instead of byId, whose million-entry hash table was a fifth of a
   * large zone's compile; ids far above it (under a quarter of its places used) go to byId.
   */
  private dense = new Int32Array(0);
  private denseBase = 0;
  private denseCount = 0;
  private owners: string[] = [];
  private addresses = new Int32Array(64);
  private ttls = new Uint32Array(64);
  private priorities = new Uint32Array(64);
  /** Indexes of flat records removed, for reuse. */
  private readonly free: number[] = [];

  constructor(private readonly apex: string) {}

  get size(): number {
    return this.byId.size + this.denseCount;
  }

  has(id: number): boolean {
    return this.denseAt(id) > 0 || this.byId.has(id);
  }

  *keys(): IterableIterator<number> {
    const dense = this.dense;
    for (let k = 0; k < dense.length; k++) if (dense[k]! > 0) yield this.denseBase + k;
    yield* this.byId.keys();
  }

  /** Keeps `r` (replacing any record of its id), given its owner as ownerOf computes it (null: invalid name);
   *  `unheld`: no record of its id is held (the caller knows it), so none is looked up. */
  set(r: OwnerRecord, owner: string | null, unheld = false): void {
    const address = owner !== null ? this.flatAddress(r, owner) : null;
    const kept = unheld ? undefined : this.kept(r.id);
    if (address === null) {
      if (typeof kept === 'number') this.forget(r.id, kept);
      this.byId.set(r.id, zoneRecordCore(r));
      return;
    }
    let i: number;
    if (typeof kept === 'number') i = kept;
    else {
      if (kept !== undefined) this.byId.delete(r.id);
      i = this.free.pop() ?? this.owners.length;
      if (i >= this.addresses.length) this.grow();
      this.place(r.id, i);
    }
    this.owners[i] = owner!;
    this.addresses[i] = address;
    this.ttls[i] = r.ttl;
    this.priorities[i] = r.mxPriority;
  }

  /** The record of `id`, equal to the one given to set(). */
  get(id: number): OwnerRecord | undefined {
    const kept = this.kept(id);
    if (typeof kept !== 'number') return kept;
    const owner = this.owners[kept]!;
    return {
      id,
      name: owner.slice(0, owner.length - this.apex.length - 1),
      type: 'A',
      destination: ipv4Text(this.addresses[kept]!),
      ttl: this.ttls[kept]!,
      mxPriority: this.priorities[kept]!,
      proxied: false,
    };
  }

  /** What compileOwner makes of the record of `id` alone when it is kept flat (without reading it back), else
   *  undefined. */
  flatContent(id: number): OwnerContent | undefined {
    const kept = this.kept(id);
    if (typeof kept !== 'number') return undefined;
    return oneAddressContent(this.ttls[kept]!, this.addresses[kept]!);
  }

  /** Forgets `id`; returns its record's owner name (null: the name was invalid), or undefined when not held. */
  delete(id: number, ownerOf: (r: OwnerRecord) => string | null): string | null | undefined {
    const kept = this.kept(id);
    if (kept === undefined) return undefined;
    if (typeof kept !== 'number') {
      this.byId.delete(id);
      return ownerOf(kept);
    }
    const owner = this.owners[kept]!;
    this.forget(id, kept);
    return owner;
  }

  /** The record object or flat index of `id`, or undefined. */
  private kept(id: number): OwnerRecord | number | undefined {
    const at = this.denseAt(id);
    return at > 0 ? at - 1 : this.byId.get(id);
  }

  /** dense's value for `id` (index + 1), 0 when it holds none. */
  private denseAt(id: number): number {
    const k = id - this.denseBase;
    return k >= 0 && k < this.dense.length ? this.dense[k]! : 0;
  }

  /** Keeps flat index `i` for `id`, which holds nothing: in dense when it falls in or near it, else in byId. */
  private place(id: number, i: number): void {
    if (this.size === 0) {
      this.denseBase = id;
      if (this.dense.length > 0) this.dense.fill(0);
    }
    const k = id - this.denseBase;
    if (k >= 0 && k < this.dense.length) {
      this.dense[k] = i + 1;
      this.denseCount++;
      return;
    }
    // Grown (doubled at least) only while at least a quarter of its places would be used.
    if (Number.isInteger(k) && k >= this.dense.length && k < 4 * (this.denseCount + 1024)) {
      this.dense = grown(this.dense, Math.max(this.dense.length * 2, k + 1, 1024));
      this.dense[k] = i + 1;
      this.denseCount++;
      return;
    }
    this.byId.set(id, i);
  }

  /** Forgets flat index `i` of `id` (wherever it is kept) and frees it. */
  private forget(id: number, i: number): void {
    if (this.denseAt(id) > 0) {
      this.dense[id - this.denseBase] = 0;
      this.denseCount--;
    } else this.byId.delete(id);
    this.release(i);
  }

  /** The address of a record kept flat, or null when it is kept as an object. */
  private flatAddress(r: OwnerRecord, owner: string): number | null {
    if (r.type !== 'A' || r.proxied) return null;
    if (r.ttl >>> 0 !== r.ttl || r.mxPriority >>> 0 !== r.mxPriority) return null;
    // The name read back is the owner without ".apex": exactly the name given, or the record is kept whole.
    if (owner.length !== r.name.length + 1 + this.apex.length || !owner.startsWith(r.name)) return null;
    return ipv4Number(r.destination);
  }

  private release(i: number): void {
    this.owners[i] = '';
    this.free.push(i);
  }

  private grow(): void {
    const size = this.addresses.length * 2;
    this.addresses = grown(this.addresses, size);
    this.ttls = grown(this.ttls, size);
    this.priorities = grown(this.priorities, size);
  }
}
