// Every record of a compiled zone in transfer order (RFC 5936): the SOA first, each name's RRsets with their
// signatures, the NSEC3 chain of a signed zone; a transfer ends with the SOA again.
import { TYPE } from '../wire/constants.js';
import type { CompiledZone, Rdata } from '../zone/model.js';
import type { SignedRRset } from '../dnssec/signer.js';

export interface ZoneRR {
  owner: string;
  type: number;
  ttl: number;
  rdata: Rdata;
}

/** The zone's records; the SOA (first) is not repeated at the end. */
export function* zoneRecords(zone: CompiledZone): Generator<ZoneRR> {
  const apex = zone.nodes.get(zone.apex);
  const soa = apex?.rrsets.get(TYPE.SOA) as SignedRRset | undefined;
  if (!apex || !soa) return;
  yield* rrsetRecords(zone.apex, soa);
  for (const node of zone.nodes.values()) {
    for (const set of node.rrsets.values()) {
      if (node === apex && set === soa) continue;
      yield* rrsetRecords(node.name, set as SignedRRset);
    }
  }
  const signer = zone.signer;
  if (signer)
    for (const e of signer.chain.entries()) {
      const owner = `${e.label}.${zone.apex}`;
      if (e.rrset) yield* rrsetRecords(owner, e.rrset);
      if (e.sig) yield* rrsetRecords(owner, e.sig);
    }
}

function* rrsetRecords(owner: string, set: SignedRRset): Generator<ZoneRR> {
  for (const rdata of set.rdatas) yield { owner, type: set.type, ttl: set.ttl, rdata };
  if (set.sig && set.signedOwner === owner)
    for (const rdata of set.sig.rdatas) yield { owner, type: TYPE.RRSIG, ttl: set.sig.ttl, rdata };
}
