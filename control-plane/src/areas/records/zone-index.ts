// The records of one zone indexed by owner name, for the rules that look across records: a CNAME owns its
// name alone (RFC 1034 §3.6.2, RFC 2181 §10.1) and identical records are refused. Every operation costs O(1)
// (amortised) however many records share a name, so checking a whole zone file stays linear.
import { RecordError } from './errors.js';
import type { StoredRecord, RecordFields } from './types.js';

/** The records at one owner name (two or more): the records, by data (name, type, destination, priority), a count per type. */
interface Owner {
  records: Set<RecordFields>;
  byData: Map<string, Set<RecordFields>>;
  types: Map<string, number>;
}

/** The fields sameData() compares, as one key. */
const dataKey = (r: RecordFields): string => `${r.type}\u0000${r.destination}\u0000${r.mxPriority ?? ''}`;

const sameData = (a: RecordFields, b: RecordFields): boolean =>
  a.type === b.type && a.destination === b.destination && (a.mxPriority ?? null) === (b.mxPriority ?? null);

const isOwner = (entry: RecordFields | Owner): entry is Owner => 'byData' in entry;

export class ZoneIndex {
  /**
   * Per owner name: the record itself while the name holds one (most names of a large zone: no maps for them, a
   * 1,000,000-record file checks in a fraction of the time and memory), the Owner maps from the second on.
   */
  private readonly byName = new Map<string, RecordFields | Owner>();
  private readonly byId = new Map<number, StoredRecord>();
  private count = 0;

  constructor(records: Iterable<StoredRecord> = []) {
    for (const r of records) this.add(r);
  }

  /** The records indexed, stored or not. */
  get size(): number {
    return this.count;
  }

  get(id: number): StoredRecord | undefined {
    return this.byId.get(id);
  }

  /** Adds a stored record, or a record not stored yet (no id: found by its name only, never by get or remove). */
  add(record: StoredRecord | RecordFields): void {
    if ('id' in record) this.byId.set(record.id, record);
    this.count++;
    const entry = this.byName.get(record.name);
    if (!entry) {
      this.byName.set(record.name, record);
      return;
    }
    let owner: Owner;
    if (isOwner(entry)) owner = entry;
    else {
      owner = { records: new Set(), byData: new Map(), types: new Map() };
      this.byName.set(record.name, owner);
      addTo(owner, entry);
    }
    addTo(owner, record);
  }

  remove(id: number): void {
    const r = this.byId.get(id);
    if (!r) return;
    this.byId.delete(id);
    this.count--;
    const entry = this.byName.get(r.name)!;
    if (!isOwner(entry)) {
      this.byName.delete(r.name);
      return;
    }
    const owner = entry;
    owner.records.delete(r);
    const key = dataKey(r);
    const same = owner.byData.get(key)!;
    same.delete(r);
    if (same.size === 0) owner.byData.delete(key);
    const n = owner.types.get(r.type)! - 1;
    if (n > 0) owner.types.set(r.type, n);
    else owner.types.delete(r.type);
    if (owner.records.size === 1) this.byName.set(r.name, owner.records.values().next().value!);
  }

  /**
   * Throws when `candidate` (a new record, or record `selfId` after an update) cannot join the zone:
   * 400 when a CNAME would share its name with another record, 409 when an identical record exists.
   */
  check(candidate: RecordFields, selfId?: number): void {
    const entry = this.byName.get(candidate.name);
    if (!entry) return;
    const self = selfId === undefined ? undefined : this.byId.get(selfId);
    if (!isOwner(entry)) {
      // One record at the name: it is the only other one, unless it is the candidate itself.
      if (entry === self) return;
      if (sameData(entry, candidate)) throw duplicate();
      conflict(candidate, [entry.type]);
      return;
    }
    const owner = entry;
    const mine = self !== undefined && owner.records.has(self) ? self : undefined;
    if (owner.records.size - (mine ? 1 : 0) === 0) return;
    const same = owner.byData.get(dataKey(candidate));
    if (same && same.size - (mine && same.has(mine) ? 1 : 0) > 0) throw duplicate();
    const typesOfOthers = [...owner.types].filter(([type, n]) => n - (mine?.type === type ? 1 : 0) > 0);
    conflict(
      candidate,
      typesOfOthers.map(([type]) => type),
    );
  }
}

function addTo(owner: Owner, record: RecordFields): void {
  owner.records.add(record);
  const key = dataKey(record);
  const same = owner.byData.get(key);
  if (same) same.add(record);
  else owner.byData.set(key, new Set([record]));
  owner.types.set(record.type, (owner.types.get(record.type) ?? 0) + 1);
}

const duplicate = () => new RecordError('CP_ERR_RECORD_DUPLICATE', 'an identical record already exists');

/** Throws when `candidate` and the other records at its name (their types, in the order met) break CNAME's rule. */
function conflict(candidate: RecordFields, typesOfOthers: readonly string[]): void {
  const label = candidate.name;
  if (candidate.type === 'CNAME') {
    throw new RecordError(
      'CP_ERR_RECORD_CONFLICT',
      `a CNAME record cannot share its name with other records: "${label}" already has ${typesOfOthers.join(', ')} records`,
    );
  }
  if (typesOfOthers.includes('CNAME')) {
    throw new RecordError(
      'CP_ERR_RECORD_CONFLICT',
      `"${label}" already has a CNAME record, and a CNAME cannot share its name with other records`,
    );
  }
}
