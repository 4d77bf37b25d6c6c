// A zone builder's records by id, most of them flat: a large zone holds a million, and an object per record (with its
// name and destination strings: three heap objects, ~140 bytes) survives every scavenge of the import for nothing but
// the rare recompile of its owner.
import { ipv4Number, ipv4Text } from '../wire/rdata.js';
import { zoneRecordCore } from '@platform/shared/config';
import { oneAddressContent, type OwnerContent, type OwnerRecord } from './owner.js';

/**
 * Records by id. A record of type "A", not proxied, whose name is the relative lower-case name of its owner and whose
 * destination is an IPv4 address in its usual form is kept flat: its owner name (the string the zone's node holds
 * anyway), address, TTL and MX priority in arrays, read back as an equal OwnerRecord. Any other record is kept as
 * its OwnerRecord object.
 */
export class RecordTable {
  /** A record object, or the index of a flat record. */
  private readonly byId = new Map<number, OwnerRecord | number>();
  private owners: string[] = [];
  private addresses = new Int32Array(64);
  private ttls = new Uint32Array(64);
  private priorities = new Uint32Array(64);
  /** Indexes of flat records removed, for reuse. */
  private readonly free: number[] = [];

  constructor(private readonly apex: string) {}

  get size(): number {
    return this.byId.size;
  }

  has(id: number): boolean {
    return this.byId.has(id);
  }

  keys(): IterableIterator<number> {
    return this.byId.keys();
  }

  /** Keeps `r` (replacing any record of its id), given its owner as ownerOf computes it (null: invalid name);
   *  `unheld`: no record of its id is held (the caller knows it), so none is looked up. */
  set(r: OwnerRecord, owner: string | null, unheld = false): void {
    const address = owner !== null ? this.flatAddress(r, owner) : null;
    if (address === null) {
      const kept = unheld ? undefined : this.byId.get(r.id);
      if (typeof kept === 'number') this.release(kept);
      this.byId.set(r.id, zoneRecordCore(r));
      return;
    }
    let i = unheld ? undefined : this.byId.get(r.id);
    if (typeof i !== 'number') i = this.free.pop() ?? this.owners.length;
    if (i >= this.addresses.length) this.grow();
    this.owners[i] = owner!;
    this.addresses[i] = address;
    this.ttls[i] = r.ttl;
    this.priorities[i] = r.mxPriority;
    this.byId.set(r.id, i);
  }

  /** The record of `id`, equal to the one given to set(). */
  get(id: number): OwnerRecord | undefined {
    const kept = this.byId.get(id);
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
    const kept = this.byId.get(id);
    if (typeof kept !== 'number') return undefined;
    return oneAddressContent(this.ttls[kept]!, this.addresses[kept]!);
  }

  /** Forgets `id`; returns its record's owner name (null: the name was invalid), or undefined when not held. */
  delete(id: number, ownerOf: (r: OwnerRecord) => string | null): string | null | undefined {
    const kept = this.byId.get(id);
    if (kept === undefined) return undefined;
    this.byId.delete(id);
    if (typeof kept !== 'number') return ownerOf(kept);
    const owner = this.owners[kept]!;
    this.release(kept);
    return owner;
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
    const addresses = new Int32Array(size);
    addresses.set(this.addresses);
    this.addresses = addresses;
    const ttls = new Uint32Array(size);
    ttls.set(this.ttls);
    this.ttls = ttls;
    const priorities = new Uint32Array(size);
    priorities.set(this.priorities);
    this.priorities = priorities;
  }
}
