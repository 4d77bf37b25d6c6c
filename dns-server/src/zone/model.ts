// In-memory shape of a compiled zone: nodes by owner name, RRsets by type, precompiled answers per node.
import type { ZoneSigner } from '../dnssec/signer.js';
import type { ZoneTransferConfig } from '../xfr/transfer.js';
import type { ZoneRR } from '../xfr/records.js';
import type { NodeMap } from './name-index.js';
import type { RRsets } from './rrsets.js';

/** A domain name inside RDATA; `compress` is false where RFC 2782/3597 forbid compression (SRV). */
export interface NameRef {
  name: string;
  compress: boolean;
}

/** One RDATA as wire pieces: raw bytes and names, written in order. */
export type Rdata = Array<Buffer | NameRef>;

export interface RRset {
  type: number;
  ttl: number;
  rdatas: Rdata[];
  /** Target names of CNAME/MX/NS/SRV rdatas (absolute, lower case), for chains and additional data. */
  targets: string[];
}

/** A precompiled response: the whole message with ID 0, the question in lower case. */
export interface Template {
  bytes: Buffer;
  /** Offset where the additional section starts (== bytes.length when it is empty). */
  additionalStart: number;
  /** The additional section holds glue a referral needs (RFC 9471): dropping it means TC. */
  glueRequired: boolean;
  /** Offset of the zone's SOA serial when the template ends with the SOA record (a negative answer after a CNAME,
   *  the apex SOA), else -1: a new serial is written there instead of recompiling the answer. */
  soaSerialAt: number;
}

/** Slot value: answer with the zone's SOA in authority, NOERROR (NODATA). */
export const NEGATIVE = 0;
/** Slot value: resolve at query time, uncached (a rare qtype at a CNAME). */
export const DYNAMIC = 1;
export type Slot = Template | typeof NEGATIVE | typeof DYNAMIC | undefined;

/** The slots of a node none of whose answers is filled yet (a large zone's plain names until their first query):
 *  shared and frozen, so that a write in place throws instead of reaching every such node. */
export const NO_SLOTS = Object.freeze([]) as unknown as Slot[];

/** The node's own slots, to be written: a node still holding NO_SLOTS gets a new array first. */
export function ownSlots(node: ZoneNode): Slot[] {
  if (node.slots === NO_SLOTS) node.slots = [];
  return node.slots;
}

export interface ZoneNode {
  /** Absolute owner name, lower case, no trailing dot. */
  name: string;
  rrsets: RRsets;
  /** The delegation point at or above this node (non-apex NS owner), or '' when none. */
  cut: string;
  /** Answers by slot (see SLOT_OF in slots.ts); filled at compile time, lazily for synthesised names and the plain
   *  names of a large zone. NO_SLOTS (shared, frozen) until the first is filled: a new array takes its place. */
  slots: Slot[];
  /** Signed answers (DO=1) by slot, filled on first query; only answers without NSEC3 records are kept here. */
  signed?: Template[];
  /** Signed answers holding NSEC3 records (NODATA, a referral, a CNAME to a name that does not exist) by slot, filled
   *  on first query: valid while the zone signer's `version` is `provedAt` (it changes with every patch). */
  proved?: Template[];
  provedAt?: number;
}

/**
 * The authority section of a negative answer, to follow any question of the zone: the negative SOA, and in a signed
 * NXDOMAIN its RRSIG and the NSEC3 records with theirs (kept per closest encloser and next-closer proof, shared by
 * every name they prove). The owners (the apex, NSEC3 owners) end in a pointer to the apex inside the question,
 * written per query at each offset of `pointers`.
 */
export interface NegativeTail {
  bytes: Buffer;
  /** Records in `bytes` (the authority count). */
  count: number;
  pointers: number[];
}

/** What resolution reads of a zone: the served zone, or the zone being patched seen through its staged changes. */
export interface ZoneView {
  apex: string;
  nodes: { get(name: string): ZoneNode | undefined };
  /** The SOA RRset with the negative TTL (RFC 2308 §3: min of SOA TTL and SOA minimum). */
  negativeSoa: RRset;
  /** Answers of names synthesised from wildcards or below a cut, filled on first query; bounded. */
  synthesised: Map<string, ZoneNode>;
}

export interface CompiledZone extends ZoneView {
  serial: number;
  /** A Map with an index by the name's bytes (name-index.ts). */
  nodes: NodeMap;
  /** The authority section of an unsigned NXDOMAIN or NODATA: the negative SOA record (its serial 20 bytes before
   *  the end, written in place by a new serial). */
  negativeTail: NegativeTail;
  /** Online signing (DNSSEC on), or null. */
  signer: ZoneSigner | null;
  /** Secondaries allowed to transfer the zone (and told of changes), or null/absent: none. */
  transfers?: ZoneTransferConfig | null;
  /** Recent changes as IXFR differences (xfr/journal.ts), when kept. */
  journal?: { since(from: number, to: number): ZoneRR[] | null };
}
