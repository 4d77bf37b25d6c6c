// Authoritative resolution inside one zone (RFC 1034 §4.3.2, RFC 4592 wildcards, RFC 2308 negative answers).
// Runs at compile time for every node and at query time only for synthesised names; the hot path reads slots.
import { TYPE, RCODE } from '../wire/constants.js';
import { encodeAnswer } from './encode.js';
import { NEGATIVE, DYNAMIC, ownSlots, type RRset, type Slot, type ZoneNode, type ZoneView } from './model.js';
import { SLOT_TYPES, SLOT_OF, OTHER } from './slots.js';

export interface Section {
  owner: string;
  rrset: RRset;
}

export interface Answer {
  rcode: number;
  aa: boolean;
  answer: Section[];
  authority: Section[];
  additional: Section[];
  glueRequired: boolean;
}

/** Longest CNAME chain followed inside a zone. */
const MAX_CHAIN = 12;
/** RFC 8482: ANY gets one RRset, the first of these present at the name. */
const ANY_ORDER = [TYPE.A, TYPE.AAAA, TYPE.MX, TYPE.TXT, TYPE.SOA, TYPE.NS, TYPE.CAA, TYPE.SRV, TYPE.PTR];

export function inZone(zone: ZoneView, name: string): boolean {
  return name === zone.apex || name.endsWith(`.${zone.apex}`);
}

/** What compiling one node's answers read of the zone: names looked up (present or not) and whether the SOA was used. */
export interface Reads {
  names: Set<string>;
  soa: boolean;
}
// Set while a node's answers are compiled (a patch recompiles the nodes whose reads changed); null at query time.
let reads: Reads | null = null;

/** Fills `node`'s slots like fillSlots and returns what its answers read, lazily filled slots included. */
export function fillSlotsReading(zone: ZoneView, node: ZoneNode): Reads {
  const r: Reads = { names: new Set(), soa: false };
  reads = r;
  try {
    fillSlots(zone, node);
    // A CNAME's other slot types are filled on first query: read them now (resolution only) so a change they
    // depend on is seen.
    if (!node.cut && node.rrsets.has(TYPE.CNAME)) for (const t of CNAME_LAZY) resolve(zone, node.name, t);
  } finally {
    reads = null;
  }
  return r;
}

function nodeAt(zone: ZoneView, name: string): ZoneNode | undefined {
  if (reads !== null) reads.names.add(name);
  return zone.nodes.get(name);
}

/**
 * The node answering for `name` (inside the zone): the name's own node, or a node synthesised from the
 * wildcard at the closest encloser (RFC 4592 §3.3.1), or one standing for a name below a delegation point.
 * Undefined means the name does not exist (NXDOMAIN).
 */
export function findNode(zone: ZoneView, name: string): ZoneNode | undefined {
  // While compiling, every name looked at is recorded, so the cache of synthesised names is not used.
  const own = nodeAt(zone, name) ?? (reads === null ? zone.synthesised.get(name) : undefined);
  if (own) return own;
  let encloser: ZoneNode | undefined;
  for (let p = name; p !== zone.apex && !encloser;) {
    const dot = p.indexOf('.');
    if (dot < 0) break;
    p = p.slice(dot + 1);
    encloser = nodeAt(zone, p);
  }
  encloser ??= nodeAt(zone, zone.apex);
  if (!encloser) return undefined;
  let node: ZoneNode;
  if (encloser.cut) node = { name, rrsets: new Map(), cut: encloser.cut, slots: [] };
  else {
    const wild = nodeAt(zone, `*.${encloser.name}`);
    if (!wild) return undefined;
    node = { name, rrsets: wild.rrsets, cut: '', slots: [] };
  }
  if (reads !== null) return node;
  if (zone.synthesised.size >= 10000) zone.synthesised.clear(); // bounded: random names cannot grow memory
  zone.synthesised.set(name, node);
  return node;
}

export function resolve(zone: ZoneView, qname: string, qtype: number): Answer {
  const a: Answer = { rcode: RCODE.NOERROR, aa: true, answer: [], authority: [], additional: [], glueRequired: false };
  let seen: Set<string> | undefined;
  let name = qname;
  for (let step = 0; step < MAX_CHAIN; step++) {
    const node = findNode(zone, name);
    if (!node) return negative(zone, a, RCODE.NXDOMAIN);
    if (node.cut) {
      if (a.answer.length > 0) return a; // the chain leaves our authority; the resolver follows it
      if (qtype === TYPE.DS && name === node.cut) return negative(zone, a, RCODE.NOERROR); // DS lives in the parent
      return referral(zone, a, node.cut);
    }
    const cname = node.rrsets.get(TYPE.CNAME);
    if (cname && qtype !== TYPE.CNAME) {
      a.answer.push({ owner: name, rrset: cname });
      const target = cname.targets[0];
      (seen ??= new Set()).add(name);
      if (qtype === TYPE.ANY || !inZone(zone, target) || seen.has(target)) return a;
      name = target;
      continue;
    }
    let rrset = node.rrsets.get(qtype);
    if (qtype === TYPE.ANY) for (const t of ANY_ORDER) if ((rrset = node.rrsets.get(t))) break;
    if (!rrset) return negative(zone, a, RCODE.NOERROR);
    if (reads !== null && rrset.type === TYPE.SOA) reads.soa = true;
    a.answer.push({ owner: name, rrset });
    if (rrset.type === TYPE.MX || rrset.type === TYPE.SRV || rrset.type === TYPE.NS)
      addAddresses(zone, a, rrset.targets);
    return a;
  }
  return a;
}

function negative(zone: ZoneView, a: Answer, rcode: number): Answer {
  if (reads !== null) reads.soa = true;
  a.rcode = rcode;
  a.authority.push({ owner: zone.apex, rrset: zone.negativeSoa });
  return a;
}

function referral(zone: ZoneView, a: Answer, cut: string): Answer {
  const ns = nodeAt(zone, cut)!.rrsets.get(TYPE.NS)!;
  a.aa = false;
  a.authority.push({ owner: cut, rrset: ns });
  addAddresses(zone, a, ns.targets);
  a.glueRequired = a.additional.length > 0;
  return a;
}

/** Addresses of in-zone targets for the additional section (RFC 1035 §3.3.9, RFC 2782). */
function addAddresses(zone: ZoneView, a: Answer, targets: string[]): void {
  const done = new Set<string>();
  for (const t of targets) {
    if (done.has(t) || !inZone(zone, t)) continue;
    done.add(t);
    const node = nodeAt(zone, t);
    if (!node) continue;
    for (const type of [TYPE.A, TYPE.AAAA]) {
      const set = node.rrsets.get(type);
      if (set && !a.answer.some((s) => s.owner === t && s.rrset === set)) a.additional.push({ owner: t, rrset: set });
    }
  }
}

/** The slot value for (name, qtype): NEGATIVE for a plain NODATA, else an encoded template. */
export function slotFor(zone: ZoneView, name: string, qtype: number): Slot {
  const a = resolve(zone, name, qtype);
  if (a.rcode === RCODE.NOERROR && a.answer.length === 0 && a.aa) return NEGATIVE;
  return encodeAnswer(name, qtype, a);
}

/** Types precompiled at a CNAME; the other slot types of a CNAME are resolved on first query (lookup.ts). */
const CNAME_EAGER = [TYPE.A, TYPE.AAAA, TYPE.CNAME, TYPE.MX, TYPE.TXT];
/** The slot types of a CNAME filled on first query (ANY at a CNAME answers the CNAME alone). */
const CNAME_LAZY = SLOT_TYPES.filter((t) => t !== TYPE.ANY && !(CNAME_EAGER as number[]).includes(t));

/** Precompiles the slots of a node (compile time). */
export function fillSlots(zone: ZoneView, node: ZoneNode): void {
  ownSlots(node);
  if (node.cut) {
    // Every type below a delegation gets the same referral (the question is patched from the query); DS is OTHER.
    const referral = slotFor(zone, node.name, TYPE.A);
    for (let i = 0; i < SLOT_TYPES.length; i++) node.slots[i] = referral;
    node.slots[OTHER] = DYNAMIC;
    return;
  }
  if (node.rrsets.has(TYPE.CNAME)) {
    for (const t of CNAME_EAGER) node.slots[SLOT_OF[t]] = slotFor(zone, node.name, t);
    node.slots[OTHER] = DYNAMIC;
    return;
  }
  for (let i = 0; i < SLOT_TYPES.length; i++) {
    const t = SLOT_TYPES[i];
    if (t !== TYPE.ANY) node.slots[i] = node.rrsets.has(t) ? slotFor(zone, node.name, t) : NEGATIVE;
  }
  // ANY at a plain name is the answer of the type it picks; the question's type is patched from the query anyway.
  const pick = ANY_ORDER.find((t) => node.rrsets.has(t));
  node.slots[SLOT_OF[TYPE.ANY]] = pick === undefined ? NEGATIVE : node.slots[SLOT_OF[pick]];
  // Types without a slot of their own (DNSKEY, CDS, NSEC3PARAM at a signed apex) are resolved per query.
  let other = false;
  for (const t of node.rrsets.keys()) if (SLOT_OF[t] === OTHER) other = true;
  node.slots[OTHER] = other ? DYNAMIC : NEGATIVE;
}
