// Presentation form → wire RDATA for the record types a zone may hold (RFC 1035, 3596, 2782, 8659, 7208).
import { isIPv4, isIPv6 } from 'node:net';
import { TYPE } from './constants.js';
import type { NameRef, Rdata } from '../zone/model.js';

export interface ParsedRdata {
  rdata: Rdata;
  target?: string;
}

/** Parses one record's destination; returns the RDATA or a message saying what is wrong. */
export function parseRdata(type: number, destination: string, priority: number, apex: string): ParsedRdata | string {
  const d = destination.trim();
  switch (type) {
    case TYPE.A: {
      const b = ipv4Bytes(d);
      if (b !== null) return { rdata: [b] };
      if (!isIPv4(d)) return `invalid IPv4 address "${d}"`;
      return { rdata: [Buffer.from(d.split('.').map(Number))] };
    }
    case TYPE.AAAA: {
      const b = ipv6Bytes(d);
      return b ? { rdata: [b] } : `invalid IPv6 address "${d}"`;
    }
    case TYPE.CNAME:
    case TYPE.NS:
    case TYPE.PTR: {
      const n = normaliseName(d, apex);
      if (typeof n !== 'string' || n === '') return `invalid target name "${d}"`;
      return { rdata: [{ name: n, compress: true }], target: n };
    }
    case TYPE.MX: {
      // Destination is the exchange; "pref exchange" is accepted too.
      const m = /^(\d{1,5})\s+(\S+)$/.exec(d);
      const pref = m ? Number(m[1]) : priority;
      const n = normaliseName(m ? m[2] : d, apex);
      if (n === null || pref > 65535) return `invalid MX "${d}"`;
      return { rdata: [u16(pref), { name: n, compress: true }], target: n };
    }
    case TYPE.SRV: {
      // "weight port target" with the priority in mx_priority, or "priority weight port target".
      const f = d.split(/\s+/);
      if (f.length === 3) f.unshift(String(priority));
      if (f.length !== 4 || !f.slice(0, 3).every((x) => /^\d{1,5}$/.test(x) && Number(x) <= 65535))
        return `invalid SRV "${d}"`;
      const n = normaliseName(f[3], apex);
      if (n === null) return `invalid SRV target "${f[3]}"`;
      const head = Buffer.alloc(6);
      head.writeUInt16BE(Number(f[0]), 0);
      head.writeUInt16BE(Number(f[1]), 2);
      head.writeUInt16BE(Number(f[2]), 4);
      return { rdata: [head, { name: n, compress: false }], target: n };
    }
    case TYPE.TXT: {
      const parts = txtStrings(destination);
      const out: Buffer[] = [];
      for (const p of parts) out.push(Buffer.from([p.length]), p);
      return { rdata: out.length ? out : [Buffer.from([0])] };
    }
    case TYPE.CAA: {
      const m = /^(\d{1,3})\s+([A-Za-z0-9]{1,15})\s+(.*)$/s.exec(d);
      if (!m || Number(m[1]) > 255) return `invalid CAA "${d}"`;
      let value = m[3].trim();
      if (value.length >= 2 && value.startsWith('"') && value.endsWith('"'))
        value = value.slice(1, -1).replace(/\\(.)/g, '$1');
      const tag = Buffer.from(m[2].toLowerCase(), 'latin1');
      return { rdata: [Buffer.from([Number(m[1]), tag.length]), tag, Buffer.from(value, 'utf8')] };
    }
    default:
      return `unsupported record type ${type}`;
  }
}

/** Lower-case absolute name without trailing dot ('' = root); '@' is the apex. Null when invalid. */
export function normaliseName(raw: string, apex: string): string | null {
  let n = raw.trim().toLowerCase();
  if (n === '@') return apex;
  if (n === '.') return '';
  if (n.endsWith('.')) n = n.slice(0, -1);
  if (n === '' || n.length > 253) return null;
  // Every label 1–63 characters (counted in place: a zone's compile checks a million names).
  for (let start = 0, i = 0; i <= n.length; i++) {
    if (i < n.length && n.charCodeAt(i) !== 46) continue;
    if (i === start || i - start > 63) return null;
    start = i + 1;
  }
  return n;
}

/**
 * TXT value → character-strings of at most 255 bytes. The control plane stores TXT as raw text (quoted input is
 * joined there), so the value is the text itself, split every 255 bytes.
 */
export function txtStrings(value: string): Buffer[] {
  const b = Buffer.from(value, 'utf8');
  if (b.length === 0) return [b];
  const out: Buffer[] = [];
  for (let i = 0; i < b.length; i += 255) out.push(b.subarray(i, i + 255));
  return out;
}

/**
 * A dotted-quad IPv4 address in its usual form (four decimal octets 0–255 without leading zeros, nothing else) as a
 * 32-bit number, first octet highest (signed), or null for anything else (parseRdata then asks isIPv4). Read in place:
 * a large zone's import reads a million of them, and split/map made six short-lived objects per address.
 */
export function ipv4Number(s: string): number | null {
  let octets = 0;
  let n = 0;
  let v = 0;
  let digits = 0;
  for (let i = 0; i <= s.length; i++) {
    const c = i < s.length ? s.charCodeAt(i) : 46;
    if (c === 46) {
      if (digits === 0 || octets > 3) return null;
      n = (n << 8) | v;
      octets++;
      v = 0;
      digits = 0;
    } else if (c >= 48 && c <= 57) {
      if (digits > 0 && v === 0) return null; // a leading zero
      v = v * 10 + (c - 48);
      if (++digits > 3 || v > 255) return null;
    } else return null;
  }
  return octets === 4 ? n : null;
}

/** The 4 bytes of an address ipv4Number reads, or null. */
export function ipv4Bytes(s: string): Buffer | null {
  const n = ipv4Number(s);
  if (n === null) return null;
  const out = Buffer.allocUnsafe(4);
  out.writeInt32BE(n, 0);
  return out;
}

/** The dotted-quad form of an ipv4Number. */
export function ipv4Text(n: number): string {
  return `${(n >>> 24) & 255}.${(n >>> 16) & 255}.${(n >>> 8) & 255}.${n & 255}`;
}

export function ipv6Bytes(s: string): Buffer | null {
  if (!isIPv6(s) || s.includes('%')) return null;
  let text = s;
  const out = Buffer.alloc(16);
  // An embedded IPv4 tail (::ffff:192.0.2.1) becomes two hex groups.
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (v4) {
    const o = v4[1].split('.').map(Number);
    text = text.slice(0, -v4[1].length) + ((o[0] << 8) | o[1]).toString(16) + ':' + ((o[2] << 8) | o[3]).toString(16);
  }
  const [head, tail] = text.split('::');
  const h = head ? head.split(':') : [];
  const t = tail === undefined ? [] : tail ? tail.split(':') : [];
  const groups = tail === undefined ? h : [...h, ...new Array<string>(8 - h.length - t.length).fill('0'), ...t];
  if (groups.length !== 8) return null;
  groups.forEach((g, i) => out.writeUInt16BE(parseInt(g, 16), i * 2));
  return out;
}

export function u16(n: number): Buffer {
  const b = Buffer.alloc(2);
  b.writeUInt16BE(n, 0);
  return b;
}

export type { NameRef };
