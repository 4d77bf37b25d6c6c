// The hot-path lookup: (zone, lower-case name, qtype) → precompiled template, NODATA or NXDOMAIN.
import {
  NEGATIVE,
  DYNAMIC,
  ownSlots,
  type CompiledZone,
  type NegativeTail,
  type Template,
  type ZoneNode,
} from './model.js';
import { findNode, resolve, slotFor } from './resolve.js';
import { SLOT_OF, OTHER } from './slots.js';
import { TYPE } from '../wire/constants.js';
import { encodeAnswer } from './encode.js';
import type { ZoneSigner } from '../dnssec/signer.js';

/** Lookup result: the name does not exist; answer NXDOMAIN with the SOA in authority. */
export const NXDOMAIN = 2;
export type LookupResult = Template | typeof NEGATIVE | typeof NXDOMAIN;

/** Set by each lookup: the answer came from a name synthesised from a wildcard or below a delegation (rrl.ts keys
 *  those by zone, not by the random names an attacker can make up). */
export const lastLookup = { synthesised: false };

/**
 * Answers (name, qtype) from the zone. Names present in the zone are one map read and one array read;
 * names synthesised from a wildcard or below a delegation are resolved on first use and kept (bounded).
 */
export function lookup(zone: CompiledZone, name: string, qtype: number): LookupResult {
  let node = zone.nodes.get(name);
  lastLookup.synthesised = node === undefined;
  if (node === undefined) {
    node = findNode(zone, name);
    if (node === undefined) return NXDOMAIN;
  }
  return lookupAt(zone, node, name, qtype);
}

/** lookup() once the node answering for `name` is known (a node of the zone, or one synthesised for the name). */
export function lookupAt(zone: CompiledZone, node: ZoneNode, name: string, qtype: number): LookupResult {
  const s = SLOT_OF[qtype];
  let v = node.slots[s];
  if (v === undefined) {
    if (s === OTHER) v = node.cut || node.rrsets.has(TYPE.CNAME) ? DYNAMIC : NEGATIVE;
    else v = slotFor(zone, name, qtype);
    ownSlots(node)[s] = v;
  }
  if (v === DYNAMIC) return slotFor(zone, name, qtype) as Template | typeof NEGATIVE;
  return v as Template | typeof NEGATIVE;
}

/**
 * A DO=1 answer from a signed zone: a template (negative answers carry their NSEC3 proof), or for a name that does not
 * exist the kept authority section of its NXDOMAIN (the handler writes the question before it). Answers at names
 * present in the zone are built on first query and kept on the node (those holding NSEC3 records until the zone next
 * changes); an NXDOMAIN's proof is kept per closest encloser and next-closer NSEC3 (ZoneSigner.nxdomainTail);
 * wildcard expansions and names below a delegation are kept on their synthesised node until the zone next changes.
 */
export function lookupSigned(
  zone: CompiledZone,
  signer: ZoneSigner,
  name: string,
  qtype: number,
): Template | NegativeTail {
  let node = zone.nodes.get(name);
  lastLookup.synthesised = node === undefined;
  const s = SLOT_OF[qtype];
  if (node === undefined) {
    node = findNode(zone, name);
    if (node === undefined) {
      const tail = signer.nxdomainTail(zone, name);
      if (tail !== null) return tail;
    }
  }
  if (node !== undefined && s !== OTHER) {
    const kept = node.signed?.[s];
    if (kept !== undefined) return kept;
    if (node.provedAt === signer.version) {
      const proved = node.proved![s];
      if (proved !== undefined) return proved;
    }
  }
  const { answer, cacheable } = signer.augment(zone, name, qtype, resolve(zone, name, qtype));
  const t = encodeAnswer(name, qtype, answer);
  if (node !== undefined && s !== OTHER) {
    if (cacheable && !lastLookup.synthesised) (node.signed ??= [])[s] = t;
    else {
      if (node.provedAt !== signer.version) {
        node.proved = [];
        node.provedAt = signer.version;
      }
      node.proved![s] = t;
    }
  }
  return t;
}
