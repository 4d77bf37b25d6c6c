// The records of one zone indexed by owner name, for the rules that look across records: a CNAME owns its
// name alone (RFC 1034 §3.6.2, RFC 2181 §10.1) and identical records are refused.
import { RecordError } from './errors.js';
import { sameData } from './normalize.js';
import type { StoredRecord, RecordFields } from './types.js';

export class ZoneIndex {
  private readonly byName = new Map<string, StoredRecord[]>();
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
    const list = this.byName.get(record.name);
    if (list) list.push(record);
    else this.byName.set(record.name, [record]);
  }

  remove(id: number): void {
    const r = this.byId.get(id);
    if (!r) return;
    this.byId.delete(id);
    const list = this.byName.get(r.name)!.filter((x) => x.id !== id);
    if (list.length) this.byName.set(r.name, list);
    else this.byName.delete(r.name);
  }

  /**
   * Throws when `candidate` (a new record, or record `selfId` after an update) cannot join the zone:
   * 400 when a CNAME would share its name with another record, 409 when an identical record exists.
   */
  check(candidate: RecordFields, selfId?: number): void {
    const others = (this.byName.get(candidate.name) ?? []).filter((r) => r.id !== selfId);
    if (others.length === 0) return;
    const label = candidate.name;
    if (others.some((r) => sameData(r, candidate))) {
      throw new RecordError('CP_ERR_RECORD_DUPLICATE', 'an identical record already exists');
    }
    if (candidate.type === 'CNAME') {
      const types = [...new Set(others.map((r) => r.type))].join(', ');
      throw new RecordError(
        'CP_ERR_RECORD_CONFLICT',
        `a CNAME record cannot share its name with other records: "${label}" already has ${types} records`,
      );
    }
    if (others.some((r) => r.type === 'CNAME')) {
      throw new RecordError(
        'CP_ERR_RECORD_CONFLICT',
        `"${label}" already has a CNAME record, and a CNAME cannot share its name with other records`,
      );
    }
  }
}
