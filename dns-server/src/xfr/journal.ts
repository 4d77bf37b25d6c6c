// The differences of a zone's recent changes, kept on the node as its patches are applied (the config log's deltas,
// as compiled and signed here), so IXFR (RFC 1995) can answer a secondary a few serials behind with what changed
// instead of the whole zone. Bounded; a rebuilt zone starts an empty journal (the next IXFR is a whole transfer).
import { TYPE } from '../wire/constants.js';
import type { RRset, ZoneNode } from '../zone/model.js';
import type { SignedRRset } from '../dnssec/signer.js';
import { rdataWire } from '../dnssec/keys.js';
import type { ZoneRR } from './records.js';

/** Changes kept, and records over all of them. */
const MAX_CHANGES = 100;
const MAX_RECORDS = 200_000;

interface Change {
  from: number;
  to: number;
  oldSoa: ZoneRR;
  newSoa: ZoneRR;
  deleted: ZoneRR[];
  added: ZoneRR[];
}

/** Records of an RRset and its signature, for a diff. */
export function setRecords(owner: string, set: RRset, out: ZoneRR[]): void {
  for (const rdata of set.rdatas) out.push({ owner, type: set.type, ttl: set.ttl, rdata });
  const sig = (set as SignedRRset).sig;
  if (sig && (set as SignedRRset).signedOwner === owner)
    for (const rdata of sig.rdatas) out.push({ owner, type: TYPE.RRSIG, ttl: sig.ttl, rdata });
}

/** Records of a node (its SOA left out: the journal carries it apart). */
export function nodeRecords(node: ZoneNode | null | undefined, out: ZoneRR[]): void {
  if (!node) return;
  for (const set of node.rrsets.values()) if (set.type !== TYPE.SOA) setRecords(node.name, set, out);
}

function key(r: ZoneRR): string {
  return `${r.owner} ${r.type} ${r.ttl} ${rdataWire(r.rdata).toString('latin1')}`;
}

/** Adds to `deleted` and `added` what differs between two record lists (records in both are left out). */
export function diffRecords(before: ZoneRR[], after: ZoneRR[], deleted: ZoneRR[], added: ZoneRR[]): void {
  const old = new Map(before.map((r) => [key(r), r]));
  const now = new Set<string>();
  for (const r of after) {
    const k = key(r);
    now.add(k);
    if (!old.has(k)) added.push(r);
  }
  for (const [k, r] of old) if (!now.has(k)) deleted.push(r);
}

/** A copy of the SOA record as it is now (its RDATA is rewritten in place by a new serial). */
export function soaCopy(owner: string, set: RRset): ZoneRR {
  return { owner, type: TYPE.SOA, ttl: set.ttl, rdata: [Buffer.from(rdataWire(set.rdatas[0]))] };
}

export class Journal {
  private changes: Change[] = [];
  private records = 0;

  add(c: Change): void {
    const last = this.changes.at(-1);
    if (last && last.to !== c.from) this.clear(); // a gap: older changes no longer lead here
    this.changes.push(c);
    this.records += c.deleted.length + c.added.length;
    while (this.changes.length > MAX_CHANGES || (this.records > MAX_RECORDS && this.changes.length > 0)) {
      const gone = this.changes.shift()!;
      this.records -= gone.deleted.length + gone.added.length;
    }
  }

  clear(): void {
    this.changes = [];
    this.records = 0;
  }

  /** The IXFR body (RFC 1995 §4) from serial `from` to `to`, without the opening and closing SOA; null: not kept. */
  since(from: number, to: number): ZoneRR[] | null {
    const start = this.changes.findIndex((c) => c.from === from);
    if (start < 0) return null;
    const out: ZoneRR[] = [];
    for (let i = start; i < this.changes.length; i++) {
      const c = this.changes[i];
      out.push(c.oldSoa, ...c.deleted, c.newSoa, ...c.added);
      if (c.to === to) return out;
    }
    return null;
  }
}
