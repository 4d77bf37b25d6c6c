// The records of one zone indexed by owner name, for the rules that look across records: a CNAME owns its
// name alone (RFC 1034 §3.6.2, RFC 2181 §10.1) and identical records are refused. Every operation costs O(1)
// (amortised) however many records share a name, so checking a whole zone file stays linear.
import { RecordError } from './errors.js';
import type { StoredRecord, RecordFields } from './types.js';

/** The records at one owner name: by id, by data (name, type, destination, priority) and a count per type. */
interface Owner {
  byId: Map<number, StoredRecord>;
  byData: Map<string, Set<number>>;
  types: Map<string, number>;
}

/** The fields sameData() compares, as one key. */
const dataKey = (r: RecordFields): string => `${r.type}\u0000${r.destination}\u0000${r.mxPriority ?? ''}`;

export class ZoneIndex {
  private readonly byName = new Map<string, Owner>();
  private readonly byId = new Map<number, StoredRecord>();

  constructor(records: Iterable<StoredRecord> = []) {
    for (const r of records) this.add(r);
  }

  get size(): number {
    return this.byId.size;
  }

  get(id: number): StoredRecord | undefined {
    return this.byId.get(id);
  }

  add(record: StoredRecord): void {
    this.byId.set(record.id, record);
    let owner = this.byName.get(record.name);
    if (!owner) {
      owner = { byId: new Map(), byData: new Map(), types: new Map() };
      this.byName.set(record.name, owner);
    }
    owner.byId.set(record.id, record);
    const key = dataKey(record);
    const same = owner.byData.get(key);
    if (same) same.add(record.id);
    else owner.byData.set(key, new Set([record.id]));
    owner.types.set(record.type, (owner.types.get(record.type) ?? 0) + 1);
  }

  remove(id: number): void {
    const r = this.byId.get(id);
    if (!r) return;
    this.byId.delete(id);
    const owner = this.byName.get(r.name)!;
    owner.byId.delete(id);
    const key = dataKey(r);
    const same = owner.byData.get(key)!;
    same.delete(id);
    if (same.size === 0) owner.byData.delete(key);
    const n = owner.types.get(r.type)! - 1;
    if (n > 0) owner.types.set(r.type, n);
    else owner.types.delete(r.type);
    if (owner.byId.size === 0) this.byName.delete(r.name);
  }

  /**
   * Throws when `candidate` (a new record, or record `selfId` after an update) cannot join the zone:
   * 400 when a CNAME would share its name with another record, 409 when an identical record exists.
   */
  check(candidate: RecordFields, selfId?: number): void {
    const owner = this.byName.get(candidate.name);
    if (!owner) return;
    const self = selfId === undefined ? undefined : owner.byId.get(selfId);
    const others = owner.byId.size - (self ? 1 : 0);
    if (others === 0) return;
    const label = candidate.name;
    const same = owner.byData.get(dataKey(candidate));
    if (same && same.size - (self && same.has(self.id) ? 1 : 0) > 0) {
      throw new RecordError('CP_ERR_RECORD_DUPLICATE', 'an identical record already exists');
    }
    const typesOfOthers = [...owner.types].filter(([type, n]) => n - (self?.type === type ? 1 : 0) > 0);
    if (candidate.type === 'CNAME') {
      const types = typesOfOthers.map(([type]) => type).join(', ');
      throw new RecordError(
        'CP_ERR_RECORD_CONFLICT',
        `a CNAME record cannot share its name with other records: "${label}" already has ${types} records`,
      );
    }
    if (typesOfOthers.some(([type]) => type === 'CNAME')) {
      throw new RecordError(
        'CP_ERR_RECORD_CONFLICT',
        `"${label}" already has a CNAME record, and a CNAME cannot share its name with other records`,
      );
    }
  }
}
