// The sync hub's squash of a domain's entries into one snapshot without decoding its records, for the common large
// case: deltas that only add records, each id above every id before it (an import, creates). The records' bytes are
// copied as they are, in the order applyDeltas would sort them; only the snapshot's head and its rules are decoded.
// Anything else (a removed record, a rewritten one, ids out of order) is left to the mirror's decoding path.
import {
  decodeDomainSnapshot,
  decodeRule,
  encodeDomainSnapshot,
  lengthDelimitedFieldSpan,
  splitSnapshot,
  type Rule,
} from '@platform/shared/config';

/** One delta as the mirror holds it. */
export interface SquashDelta {
  payload: Uint8Array;
  removedRecordIds: readonly number[];
  removedRuleIds: readonly number[];
}

// Field numbers in compiled-config.proto (DomainSnapshot.zone, Zone.records) and the wire type of both.
const SNAPSHOT_ZONE = 6;
const ZONE_RECORDS = 10;
const LEN = 2;

/**
 * The bytes of encodeDomainSnapshotFast(applyDeltas(base, deltas)) (`base` the encoded whole snapshot, or undefined for
 * none: the state starts from nothing), when no delta removes a record and the records of the base and then of each
 * delta come in strictly increasing id order (so none replaces another and their order is already applyDeltas'
 * sort); undefined otherwise. One delta onto a base without records or rules is its own squash: its payload is
 * answered as it is (the same state; its bytes may differ from a re-encoding in fields written at their default).
 * Throws CFG_ERR_DECODE on a malformed payload, as decoding would.
 */
export function squashAppended(base: Uint8Array | undefined, deltas: readonly SquashDelta[]): Uint8Array | undefined {
  if (deltas.length === 0 || deltas.some((d) => d.removedRecordIds.length > 0)) return undefined;
  const parts = [...(base ? [base] : []), ...deltas.map((d) => d.payload)].map(splitSnapshot);
  let prev = -1;
  let recordBytes = 0;
  for (const p of parts) {
    for (const r of p.records) {
      const id = leadingId(r);
      if (id <= prev) return undefined;
      prev = id;
      recordBytes += 1 + varintLength(r.length) + r.length;
    }
  }
  // The rules as applyDeltas merges them: by id, the removed ones out, sorted by priority then id.
  const rules = new Map<number, Rule>();
  const first = base ? 1 : 0;
  if (base) for (const b of parts[0]!.rules) setRule(rules, decodeRule(b));
  deltas.forEach((d, k) => {
    for (const id of d.removedRuleIds) rules.delete(id);
    for (const b of parts[first + k]!.rules) setRule(rules, decodeRule(b));
  });
  const sorted = [...rules.values()].sort((a, b) => a.priority - b.priority || a.id - b.id);
  // One delta onto a snapshot with no records and no rules (an import onto an empty zone): the delta is the state.
  const lastRules = parts[parts.length - 1]!.rules;
  if (
    deltas.length === 1 &&
    (!base || (parts[0]!.records.length === 0 && parts[0]!.rules.length === 0)) &&
    sorted.length === lastRules.length &&
    sorted.every((r, k) => r.id === ruleId(lastRules[k]!))
  )
    return deltas[0]!.payload;
  const last = decodeDomainSnapshot(parts[parts.length - 1]!.header);
  const head = encodeDomainSnapshot({
    ...last,
    zone: { ...last.zone, records: [] },
    ruleSet: { ...last.ruleSet, rules: sorted },
  });
  if (recordBytes === 0) return head;
  const zone = lengthDelimitedFieldSpan(head, SNAPSHOT_ZONE);
  if (!zone) return undefined;
  // The zone's own fields, then every record (Zone.records is its last field, as encodeDomainSnapshotFast writes it).
  const zoneLength = zone.end - zone.valueStart + recordBytes;
  const tag = (SNAPSHOT_ZONE << 3) | LEN;
  const out = new Uint8Array(
    head.length - (zone.end - zone.tagStart) + varintLength(tag) + varintLength(zoneLength) + zoneLength,
  );
  out.set(head.subarray(0, zone.tagStart));
  let at = writeVarint(out, zone.tagStart, tag);
  at = writeVarint(out, at, zoneLength);
  out.set(head.subarray(zone.valueStart, zone.end), at);
  at += zone.end - zone.valueStart;
  const recordTag = (ZONE_RECORDS << 3) | LEN;
  for (const p of parts) {
    for (const r of p.records) {
      out[at++] = recordTag;
      at = writeVarint(out, at, r.length);
      out.set(r, at);
      at += r.length;
    }
  }
  out.set(head.subarray(zone.end), at);
  return out;
}

/** The id of an encoded rule (its first field, as decodeRule reads it). */
function ruleId(bytes: Uint8Array): number {
  return decodeRule(bytes).id;
}

function setRule(rules: Map<number, Rule>, r: Rule): void {
  rules.set(r.id, r);
}

/** The id of an encoded ZoneRecord when it is its first field (as every encoder here writes it), else -1. */
function leadingId(r: Uint8Array): number {
  if (r[0] !== 0x08) return -1;
  let id = 0;
  let shift = 1;
  for (let i = 1; i < r.length && i < 9; i++) {
    const b = r[i]!;
    id += (b & 0x7f) * shift;
    if (b < 0x80) return id;
    shift *= 128;
  }
  return -1;
}

function varintLength(n: number): number {
  let len = 1;
  while (n >= 0x80) {
    n = Math.floor(n / 128);
    len++;
  }
  return len;
}

function writeVarint(out: Uint8Array, at: number, n: number): number {
  while (n >= 0x80) {
    out[at++] = (n % 128) | 0x80;
    n = Math.floor(n / 128);
  }
  out[at++] = n;
  return at;
}
