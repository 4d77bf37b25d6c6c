// Test helpers: zone keys made on the spot (plain DER, as tests may pass them) and a zone dump in RFC 3597 form that
// BIND's dnssec-verify reads.
import { generateDnssecKey, type Dnssec, type DnssecKey } from '@platform/shared/config';
import type { CompiledZone } from '../zone/model.js';
import { zoneRecords } from '../xfr/records.js';
import { rdataWire, dnskeyRdata, keyTag, dsRdata, FLAGS_KSK, FLAGS_ZSK } from './keys.js';

export function makeKey(flags: number, extra: Partial<DnssecKey> = {}): DnssecKey {
  const { publicKey, privateKeyDer } = generateDnssecKey();
  return {
    flags,
    algorithm: 13,
    publicKey,
    privateKeySealed: new Uint8Array(0),
    privateKeyDer,
    published: true,
    signing: true,
    cds: flags === FLAGS_KSK,
    ...extra,
  };
}

export function makeDnssec(): Dnssec {
  return { enabled: true, keys: [makeKey(FLAGS_KSK), makeKey(FLAGS_ZSK)] };
}

/** The zone in presentation form with every RDATA in RFC 3597 generic syntax. */
export function dumpZone(zone: CompiledZone): string {
  const lines: string[] = [];
  for (const rr of zoneRecords(zone)) {
    const w = rdataWire(rr.rdata);
    lines.push(`${rr.owner}. ${rr.ttl} IN TYPE${rr.type} \\# ${w.length} ${w.length ? w.toString('hex') : ''}`);
  }
  return lines.join('\n') + '\n';
}

/** A trust anchor for delv: the KSK as a static key. */
export function trustAnchor(apex: string, ksk: DnssecKey): string {
  const key = Buffer.from(ksk.publicKey).toString('base64');
  return `trust-anchors {\n  "${apex}." static-key ${ksk.flags} 3 13 "${key}";\n};\n`;
}

/** The DS of a key in presentation form. */
export function dsText(apex: string, k: DnssecKey): string {
  const rdata = dnskeyRdata(k.flags, k.publicKey);
  const ds = dsRdata(apex, { rdata, tag: keyTag(rdata) });
  return `${apex}. IN DS ${keyTag(rdata)} 13 2 ${ds.subarray(4).toString('hex').toUpperCase()}`;
}
