// Online signing of one zone: the keys, each RRset's RRSIG (made when the RRset is compiled, kept on it until it
// changes), the NSEC3 chain, and the answers to DO=1 queries built from them. Nothing is signed per query.
import { openDnssecKey, type Dnssec } from '@platform/shared/config';
import { RCODE, TYPE } from '../wire/constants.js';
import type { Rdata, RRset, NegativeTail, ZoneNode, ZoneView } from '../zone/model.js';
import type { Answer, Section } from '../zone/resolve.js';
import { negativeTailOf } from '../zone/encode.js';
import { dsRdata, FLAGS_KSK, signRRset, zoneKey, type Validity, type ZoneKey } from './keys.js';
import { Nsec3Chain, NSEC3PARAM_RDATA, type Nsec3Entry } from './nsec3.js';

/** Signatures are valid from an hour back (clock skew) for 14 days, and made again when 7 days are left. */
export const SIGNATURE_DAYS = 14;
export const RESIGN_DAYS_LEFT = 7;

/** An RRset with the signature the node made for it and the owner it was signed under (`*.x` for a wildcard). */
export interface SignedRRset extends RRset {
  sig?: RRset;
  signedOwner?: string;
}

/** NXDOMAIN authority sections kept per zone (a random-name flood makes at most this many before they are dropped). */
const MAX_KEPT_TAILS = 10_000;

/** The kept NXDOMAIN proofs below one closest encloser: its NSEC3, the one covering its wildcard, tails by the NSEC3
 *  covering the next closer name. */
interface EncloserProofs {
  encloser: Nsec3Entry;
  wildcard: Nsec3Entry;
  tails: Map<Nsec3Entry, NegativeTail>;
}

export class ZoneSigner {
  readonly keys: ZoneKey[];
  readonly validity: Validity;
  readonly chain: Nsec3Chain;
  private readonly zsk: ZoneKey;
  private readonly ksks: ZoneKey[];

  constructor(
    readonly apex: string,
    config: Dnssec,
    nodeToken: () => string,
    negativeTtl: number,
    now = Date.now(),
  ) {
    this.keys = config.keys.map((k) => {
      const sealed = k.privateKeySealed?.length ? k.privateKeySealed : null;
      const der = k.privateKeyDer?.length
        ? Buffer.from(k.privateKeyDer)
        : sealed && k.signing
          ? openDnssecKey(nodeToken(), apex, k.publicKey, sealed)
          : null;
      return zoneKey(k, der);
    });
    const zsk = this.keys.find((k) => k.flags !== FLAGS_KSK && k.signing && k.privateKey);
    this.ksks = this.keys.filter((k) => k.flags === FLAGS_KSK && k.signing && k.privateKey);
    if (!zsk || this.ksks.length === 0) throw new Error('DNSSEC: the zone has no signing ZSK and KSK');
    this.zsk = zsk;
    const t = Math.floor(now / 1000);
    this.validity = { inception: t - 3600, expiration: t + SIGNATURE_DAYS * 86400 };
    this.chain = new Nsec3Chain(negativeTtl, (o, type, ttl, r) => this.sigSet(o, type, ttl, r), apex);
  }

  /** Changes whenever a kept answer holding NSEC3 records or the negative SOA may be stale (see forgetNegatives). */
  version = 0;
  private negatives = new Map<string, EncloserProofs>();
  private keptTails = 0;

  /** Re-links the NSEC3 chain after a batch of chainNode() calls; kept negative answers are dropped. */
  link(): void {
    this.chain.link();
    this.forgetNegatives();
  }

  /** Kept answers holding NSEC3 records or the negative SOA are made again on their next query (a patch, a serial). */
  forgetNegatives(): void {
    this.version++;
    this.negatives = new Map();
    this.keptTails = 0;
  }

  /**
   * The authority section of an NXDOMAIN for `name`, which does not exist and which no wildcard or delegation covers
   * (findNode gave nothing): the negative SOA and the closest encloser proof (RFC 5155 §7.2.2) with their RRSIGs, as
   * augment() makes them. Kept per closest encloser and next-closer NSEC3: one SHA-1 per query. Null when the chain
   * cannot prove it (augment's path answers then).
   */
  nxdomainTail(zone: ZoneView, name: string): NegativeTail | null {
    const ce = this.closestEncloser(zone, name);
    let proofs = this.negatives.get(ce);
    if (proofs === undefined) {
      const encloser = this.chain.matching(ce);
      const wildcard = this.chain.covering(`*.${ce}`);
      if (!encloser || !wildcard) return null;
      proofs = { encloser, wildcard, tails: new Map() };
      this.negatives.set(ce, proofs);
    }
    const nextCloser = name.slice(0, name.length - ce.length - 1);
    const nc = this.chain.covering(`${nextCloser.slice(nextCloser.lastIndexOf('.') + 1)}.${ce}`);
    if (!nc) return null;
    let tail = proofs.tails.get(nc);
    if (tail === undefined) {
      const made = this.negativeTail(zone.negativeSoa as SignedRRset, [proofs.encloser, nc, proofs.wildcard]);
      if (made === null) return null;
      if (this.keptTails >= MAX_KEPT_TAILS) {
        this.negatives = new Map([[ce, proofs]]);
        proofs.tails = new Map();
        this.keptTails = 0;
      }
      proofs.tails.set(nc, made);
      this.keptTails++;
      tail = made;
    }
    return tail;
  }

  /** The SOA with its RRSIG, then each distinct entry's NSEC3 with its RRSIG, in augment()'s order. */
  private negativeTail(soa: SignedRRset, entries: Nsec3Entry[]): NegativeTail | null {
    if (!soa.sig) return null;
    const sections: Section[] = [
      { owner: this.apex, rrset: soa },
      { owner: this.apex, rrset: soa.sig },
    ];
    const seen = new Set<Nsec3Entry>();
    for (const e of entries) {
      if (seen.has(e)) continue;
      seen.add(e);
      if (!e.rrset || !e.sig) return null;
      const owner = `${e.label}.${this.apex}`;
      sections.push({ owner, rrset: e.rrset }, { owner, rrset: e.sig });
    }
    return negativeTailOf(this.apex, sections, true);
  }

  /** True when the signatures should be made again (fewer than RESIGN_DAYS_LEFT days left). */
  due(now = Date.now()): boolean {
    return this.validity.expiration - now / 1000 < RESIGN_DAYS_LEFT * 86400;
  }

  /** The apex RRsets DNSSEC adds: DNSKEY, CDS and CDNSKEY (the KSKs the parent should hold), NSEC3PARAM. */
  apexSets(ttl: number): RRset[] {
    const dnskey = this.keys.filter((k) => k.published);
    const cds = this.keys.filter((k) => k.flags === FLAGS_KSK && k.cds && k.published);
    const sets: RRset[] = [
      { type: TYPE.DNSKEY, ttl, rdatas: dnskey.map((k) => [k.rdata]), targets: [] },
      { type: TYPE.NSEC3PARAM, ttl: 0, rdatas: [[NSEC3PARAM_RDATA]], targets: [] },
    ];
    if (cds.length > 0) {
      sets.push({ type: TYPE.CDS, ttl, rdatas: cds.map((k) => [dsRdata(this.apex, k)]), targets: [] });
      sets.push({ type: TYPE.CDNSKEY, ttl, rdatas: cds.map((k) => [k.rdata]), targets: [] });
    }
    return sets;
  }

  /** The RRSIG RRset of (owner, type): the KSKs sign the key sets, the ZSK everything else. */
  sigSet(owner: string, type: number, ttl: number, rdatas: readonly Rdata[]): RRset {
    const byKsk = type === TYPE.DNSKEY || type === TYPE.CDS || type === TYPE.CDNSKEY;
    const keys = byKsk ? this.ksks : [this.zsk];
    return {
      type: TYPE.RRSIG,
      ttl,
      rdatas: keys.map((k) => signRRset(this.apex, owner, type, ttl, rdatas, k, this.validity)),
      targets: [],
    };
  }

  /** Signs the RRsets of a node the zone is authoritative for (not below a cut; at a cut nothing but the NSEC3). */
  signNode(node: ZoneNode): void {
    if (node.cut) return;
    for (const set of node.rrsets.values()) this.signSet(node.name, set as SignedRRset);
  }

  signSet(owner: string, set: SignedRRset): void {
    if (set.sig && set.signedOwner === owner) return;
    set.sig = this.sigSet(owner, set.type, set.ttl, set.rdatas);
    set.signedOwner = owner;
  }

  /** Puts `node` in the chain (or takes it out: below a cut, or gone). */
  chainNode(name: string, node: ZoneNode | null): void {
    if (!node || (node.cut && node.cut !== name)) this.chain.set(name, null);
    else if (node.cut) this.chain.set(name, [TYPE.NS]);
    else {
      const types = [...node.rrsets.keys()];
      if (types.length > 0) types.push(TYPE.RRSIG);
      this.chain.set(name, types);
    }
  }

  /**
   * A DO=1 answer: `a` (the unsigned resolution of qname/qtype) with each authoritative RRset's RRSIG, and the NSEC3
   * records that prove a negative answer, a wildcard expansion or an unsigned delegation. `cacheable` is false when
   * the answer holds NSEC3 records (they change with names elsewhere in the zone).
   */
  augment(zone: ZoneView, qname: string, qtype: number, a: Answer): { answer: Answer; cacheable: boolean } {
    const out: Answer = { ...a, answer: [], authority: [], additional: a.additional };
    let cacheable = true;
    const proofs = new Map<string, Nsec3Entry>();
    let finalName = qname;
    for (const s of a.answer) {
      out.answer.push(s);
      const set = s.rrset as SignedRRset;
      if (set.sig) {
        out.answer.push({ owner: s.owner, rrset: set.sig });
        if (set.signedOwner !== s.owner) {
          // Expanded from a wildcard: prove the name itself does not exist (RFC 4035 §3.1.3.3).
          cacheable = false;
          this.coverNextCloser(zone, s.owner, proofs);
        }
      }
      if (s.rrset.type === TYPE.CNAME) finalName = s.rrset.targets[0];
    }
    const ns = a.authority.find((s) => s.rrset.type === TYPE.NS);
    if (ns) {
      // Referral to an unsigned delegation: the NSEC3 of the cut shows NS and no DS (RFC 5155 §7.2.7).
      for (const s of a.authority) out.authority.push(s);
      const e = this.chain.matching(ns.owner);
      if (e) proofs.set(e.label, e);
    } else if (a.authority.length > 0) {
      // Negative: the SOA with its signature and the proof for the name the answer ended on.
      cacheable = false;
      for (const s of a.authority) {
        out.authority.push(s);
        const set = s.rrset as SignedRRset;
        if (set.sig) out.authority.push({ owner: s.owner, rrset: set.sig });
      }
      this.denial(zone, finalName, qtype, a.rcode, proofs);
    }
    for (const e of proofs.values()) {
      if (!e.rrset || !e.sig) continue;
      const owner = `${e.label}.${this.apex}`;
      out.authority.push({ owner, rrset: e.rrset }, { owner, rrset: e.sig });
    }
    if (proofs.size > 0) cacheable = false;
    return { answer: out, cacheable };
  }

  /** NSEC3 records proving NXDOMAIN or NODATA for `name` (RFC 5155 §7.2.1–7.2.5). */
  private denial(zone: ZoneView, name: string, qtype: number, rcode: number, proofs: Map<string, Nsec3Entry>): void {
    const own = this.chain.matching(name);
    if (own && zone.nodes.get(name)) {
      proofs.set(own.label, own); // NODATA, DS at a cut included
      return;
    }
    // The name does not exist, or exists only through a wildcard: closest encloser proof.
    const ce = this.closestEncloser(zone, name);
    const ceEntry = this.chain.matching(ce);
    if (ceEntry) proofs.set(ceEntry.label, ceEntry);
    this.coverNextCloser(zone, name, proofs, ce);
    const wild = `*.${ce}`;
    const w = rcode === RCODE.NXDOMAIN ? this.chain.covering(wild) : this.chain.matching(wild);
    if (w) proofs.set(w.label, w);
    void qtype;
  }

  private coverNextCloser(zone: ZoneView, name: string, proofs: Map<string, Nsec3Entry>, ce?: string): void {
    const encloser = ce ?? this.closestEncloser(zone, name);
    const nextCloser = name.slice(0, name.length - encloser.length - 1);
    const label = nextCloser.slice(nextCloser.lastIndexOf('.') + 1);
    const e = this.chain.covering(`${label}.${encloser}`);
    if (e) proofs.set(e.label, e);
  }

  /** The longest existing ancestor of `name` (which does not exist itself). */
  private closestEncloser(zone: ZoneView, name: string): string {
    let p = name;
    while (p !== this.apex && p.length > this.apex.length) {
      p = p.slice(p.indexOf('.') + 1);
      if (this.chain.matching(p) && zone.nodes.get(p)) return p;
    }
    return this.apex;
  }
}

export type { Section };
