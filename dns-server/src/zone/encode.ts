// Encodes a resolved Answer into a response template: whole message, ID 0, names compressed.
import { FLAG, TYPE } from '../wire/constants.js';
import { MessageWriter } from '../wire/writer.js';
import type { NegativeTail, Template } from './model.js';
import type { Answer, Section } from './resolve.js';

export function encodeAnswer(qname: string, qtype: number, a: Answer): Template {
  const w = new MessageWriter();
  w.u16(0);
  w.u16(FLAG.QR | (a.aa ? FLAG.AA : 0) | a.rcode);
  w.u16(1);
  w.u16(count(a.answer));
  w.u16(count(a.authority));
  w.u16(count(a.additional));
  w.name(qname, true);
  w.u16(qtype);
  w.u16(1);
  for (const s of a.answer) put(w, s);
  for (const s of a.authority) put(w, s);
  const additionalStart = w.len;
  for (const s of a.additional) put(w, s);
  const bytes = w.finish();
  // The SOA, when an answer holds it, is its last record (answer to SOA, or authority of a negative answer).
  const last = a.additional.at(-1) ?? a.authority.at(-1) ?? a.answer.at(-1);
  const soaSerialAt = last?.rrset.type === TYPE.SOA ? bytes.length - SOA_FIXED_TAIL : -1;
  return { bytes, additionalStart, glueRequired: a.glueRequired, soaSerialAt };
}

/** The SOA RDATA ends with serial, refresh, retry, expire and minimum: 5 × 4 bytes. */
const SOA_FIXED_TAIL = 20;

function count(sections: Section[]): number {
  let n = 0;
  for (const s of sections) n += s.rrset.rdatas.length;
  return n;
}

function put(w: MessageWriter, s: Section): void {
  for (const rdata of s.rrset.rdatas) w.record(s.owner, s.rrset.type, s.rrset.ttl, rdata);
}

/**
 * The authority section of a negative answer, to follow any question of the zone: an owner at or below the apex (and,
 * with `rdataPointers`, a compressible RDATA name) is written as its labels above the apex and a pointer, whose offset
 * goes in `pointers` (the handler points it at the apex inside the question); other names are written whole.
 */
export function negativeTailOf(apex: string, sections: Section[], rdataPointers: boolean): NegativeTail {
  const w = new MessageWriter();
  const pointers: number[] = [];
  const suffix = `.${apex}`;
  const name = (n: string, compress: boolean): void => {
    if (!compress || (n !== apex && !n.endsWith(suffix))) return w.name(n, false);
    const prefix = n.length > apex.length ? n.slice(0, n.length - suffix.length) : '';
    if (prefix !== '')
      for (const label of prefix.split('.')) {
        w.u8(label.length);
        for (let i = 0; i < label.length; i++) w.u8(label.charCodeAt(i));
      }
    pointers.push(w.len);
    w.u16(0xc000);
  };
  let count = 0;
  for (const s of sections) {
    for (const rdata of s.rrset.rdatas) {
      name(s.owner, true);
      w.u16(s.rrset.type);
      w.u16(1);
      w.u32(s.rrset.ttl);
      const at = w.len;
      w.u16(0);
      for (const part of rdata) {
        if (Buffer.isBuffer(part)) w.bytes(part);
        else name(part.name, rdataPointers && part.compress);
      }
      w.setU16(at, w.len - at - 2);
      count++;
    }
  }
  return { bytes: w.finish(), count, pointers };
}
