// Writes a zone as an RFC 1035 §5 master file: $ORIGIN, $TTL, SOA, the apex NS set, then every record with
// owner names relative to the origin. Edge settings that DNS cannot express ride in a trailing
// `; platform: {json}` comment, which BIND ignores and the importer (bind-parse.ts) reads back.
import { LIMITS, type StoredRecord, RECORD_TYPES } from './types.js';

export interface ZoneHeader {
  zone: string;
  serial: number;
  nameservers: string[];
  soa: { mname: string; rname: string; refresh: number; retry: number; expire: number; minimum: number; ttl: number };
  /** TTL of the apex NS set: the one DNS nodes serve (the zone's SOA TTL, see dns-server zone/compile.ts). */
  nsTtl: number;
}

/** One TXT value as quoted character-strings of at most 255 bytes each (RFC 1035 §3.3.14). */
export function quoteTxt(text: string): string {
  const bytes = Buffer.from(text, 'utf8');
  const chunks: string[] = [];
  for (let start = 0; start < bytes.length || chunks.length === 0; start += 255) {
    let s = '';
    for (const b of bytes.subarray(start, start + 255)) {
      if (b === 0x22 || b === 0x5c) s += `\\${String.fromCharCode(b)}`;
      else if (b < 0x20 || b > 0x7e) s += `\\${String(b).padStart(3, '0')}`;
      else s += String.fromCharCode(b);
    }
    chunks.push(`"${s}"`);
  }
  return chunks.join(' ');
}

const fqdn = (host: string): string => (host === '.' ? '.' : `${host}.`);

/** The RDATA of a stored record in presentation form. */
export function rdata(r: StoredRecord): string {
  switch (r.type) {
    case 'CNAME':
    case 'NS':
    case 'PTR':
      return fqdn(r.destination);
    case 'MX':
      return `${r.mxPriority ?? LIMITS.priorityDefault} ${fqdn(r.destination)}`;
    case 'SRV': {
      const [weight, port, target] = r.destination.split(' ');
      return `${r.mxPriority ?? LIMITS.priorityDefault} ${weight} ${port} ${fqdn(target!)}`;
    }
    case 'TXT':
      return quoteTxt(r.destination);
    default:
      return r.destination; // A, AAAA, CAA are stored in presentation form
  }
}

/** Edge fields that differ from their defaults, for the `; platform:` comment. */
export function platformMeta(r: StoredRecord): Record<string, unknown> | null {
  const m: Record<string, unknown> = {};
  if (r.proxied) m.proxied = true;
  if (r.captcha) m.captcha = true;
  if (r.scheme !== 'Auto') {
    m.scheme = r.scheme;
    m.port = r.port;
  }
  if (r.hostHeader !== null) m.host_header = r.hostHeader;
  if (r.hostHeaderMode !== 'own') m.host_header_mode = r.hostHeaderMode;
  if (r.monitor) m.monitor = true;
  if (r.timeout !== LIMITS.timeoutDefault) m.timeout = r.timeout;
  if (r.comment !== null) m.comment = r.comment;
  return Object.keys(m).length ? m : null;
}

const TYPE_ORDER = new Map<string, number>(RECORD_TYPES.map((t, i) => [t, i]));

function byOwner(a: StoredRecord, b: StoredRecord): number {
  if (a.name !== b.name) {
    if (a.name === '@') return -1;
    if (b.name === '@') return 1;
    return a.name < b.name ? -1 : 1;
  }
  return TYPE_ORDER.get(a.type)! - TYPE_ORDER.get(b.type)! || a.id - b.id;
}

export function exportZone(header: ZoneHeader, records: StoredRecord[], now = new Date()): string {
  const { zone, soa } = header;
  const lines = [
    `; Zone ${zone}, exported ${now.toISOString()}.`,
    '; A trailing "; platform: {...}" comment holds edge settings; DNS servers ignore it, import restores it.',
    `$ORIGIN ${zone}.`,
    `$TTL ${LIMITS.ttlDefault}`,
    `@\t${soa.ttl}\tIN\tSOA\t${fqdn(soa.mname)} ${fqdn(soa.rname)} ${header.serial} ${soa.refresh} ${soa.retry} ${soa.expire} ${soa.minimum}`,
    ...header.nameservers.map((ns) => `@\t${header.nsTtl}\tIN\tNS\t${fqdn(ns)}`),
  ];
  for (const r of [...records].sort(byOwner)) {
    const meta = platformMeta(r);
    lines.push(`${r.name}\t${r.ttl}\tIN\t${r.type}\t${rdata(r)}${meta ? ` ; platform: ${JSON.stringify(meta)}` : ''}`);
  }
  return `${lines.join('\n')}\n`;
}
