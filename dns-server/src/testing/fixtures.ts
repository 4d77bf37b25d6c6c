// Test fixtures: a sample DomainSnapshot exercising every behaviour of the zone compiler, and a query builder.
import type { DomainSnapshot, ZoneRecord } from '@platform/shared/config';
import { domainHeader, zoneRecord } from '@platform/shared/testing/config-entries';

let nextId = 1;
export function rec(name: string, type: string, destination: string, extra: Partial<ZoneRecord> = {}): ZoneRecord {
  return { ...zoneRecord(nextId++, name, destination, type), mxPriority: 10, ...extra };
}

export const LONG_TXT = 'v=spf1 ' + 'x'.repeat(600);

export function sampleSnapshot(overrides: Partial<DomainSnapshot> = {}, name = 'example.org'): DomainSnapshot {
  const header = domainHeader(name, 7);
  return {
    ...header,
    zone: {
      ...header.zone,
      records: [
        rec('@', 'A', '192.0.2.1'),
        rec('@', 'MX', 'mail.example.org', { mxPriority: 10 }),
        rec('@', 'TXT', LONG_TXT),
        rec('@', 'CAA', '0 issue "letsencrypt.org"'),
        rec('www', 'A', '192.0.2.10'),
        rec('www', 'A', '192.0.2.11'),
        rec('www', 'AAAA', '2001:db8::10'),
        rec('mail', 'A', '192.0.2.25'),
        rec('mail', 'AAAA', '2001:db8::25'),
        rec('shop', 'A', '198.51.100.7', { proxied: true }),
        rec('cdn', 'CNAME', 'origin.example.net', { proxied: true }),
        rec('alias', 'CNAME', 'www.example.org'),
        rec('chain1', 'CNAME', 'chain2.example.org'),
        rec('chain2', 'CNAME', 'www.example.org'),
        rec('loop1', 'CNAME', 'loop2.example.org'),
        rec('loop2', 'CNAME', 'loop1.example.org'),
        rec('dangling', 'CNAME', 'nothere.example.org'),
        rec('external', 'CNAME', 'target.example.net'),
        rec('*.dev', 'A', '192.0.2.50'),
        rec('*.dev', 'TXT', 'wildcard'),
        rec('x.y.deep', 'A', '192.0.2.60'),
        rec('*.mx', 'MX', 'mail.example.org', { mxPriority: 20 }),
        rec('_sip._tcp', 'SRV', '5 5060 sip.example.org', { mxPriority: 10 }),
        rec('sip', 'A', '192.0.2.70'),
        rec('4.2.0.192.in-addr', 'PTR', 'www.example.org'),
        rec('sub', 'NS', 'ns1.sub.example.org'),
        rec('sub', 'NS', 'ns.elsewhere.example.net'),
        rec('ns1.sub', 'A', '192.0.2.53'),
        rec('ns1.sub', 'AAAA', '2001:db8::53'),
        rec('big', 'TXT', 'a'.repeat(200)),
        rec('big', 'TXT', 'b'.repeat(200)),
        rec('big', 'TXT', 'c'.repeat(200)),
      ],
    },
    ...overrides,
  };
}

export interface QueryOptions {
  id?: number;
  edns?: { udpSize?: number; version?: number; do?: boolean };
  opcode?: number;
  qclass?: number;
  rd?: boolean;
}

/** Builds a query message for `name` (case kept) and `qtype`. */
export function buildQuery(name: string, qtype: number, o: QueryOptions = {}): Buffer {
  const labels = name.replace(/\.$/, '').split('.').filter(Boolean);
  const parts: Buffer[] = [];
  const h = Buffer.alloc(12);
  h.writeUInt16BE(o.id ?? 0x1234, 0);
  h.writeUInt16BE(((o.opcode ?? 0) << 11) | (o.rd === false ? 0 : 0x0100), 2);
  h.writeUInt16BE(1, 4);
  h.writeUInt16BE(o.edns ? 1 : 0, 10);
  parts.push(h);
  for (const l of labels) {
    const b = Buffer.from(l, 'latin1');
    parts.push(Buffer.from([b.length]), b);
  }
  const tail = Buffer.alloc(5);
  tail.writeUInt16BE(qtype, 1);
  tail.writeUInt16BE(o.qclass ?? 1, 3);
  parts.push(tail);
  if (o.edns) {
    const opt = Buffer.alloc(11);
    opt.writeUInt16BE(41, 1);
    opt.writeUInt16BE(o.edns.udpSize ?? 1232, 3);
    opt[6] = o.edns.version ?? 0;
    opt.writeUInt16BE(o.edns.do ? 0x8000 : 0, 7);
    parts.push(opt);
  }
  return Buffer.concat(parts);
}
