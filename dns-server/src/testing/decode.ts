// Test helper: decodes a response with dns2 (an independent decoder) into short strings per record.
import { Packet } from 'dns2';

export interface Decoded {
  id: number;
  rcode: number;
  aa: boolean;
  tc: boolean;
  rd: boolean;
  /** Question name exactly as on the wire (case kept). */
  qname: string;
  answer: string[];
  authority: string[];
  additional: string[];
  /** OPT record, when present. */
  opt?: { udpSize: number; extRcode: number; version: number; do: boolean };
}

const TYPE_NAMES: Record<number, string> = {
  1: 'A',
  2: 'NS',
  5: 'CNAME',
  6: 'SOA',
  12: 'PTR',
  15: 'MX',
  16: 'TXT',
  28: 'AAAA',
  33: 'SRV',
  257: 'CAA',
};

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- dns2's resource records are untyped bags of fields
function format(r: any): string {
  const t = TYPE_NAMES[r.type] ?? String(r.type);
  const data = (() => {
    switch (r.type) {
      case 1:
      case 28:
        return r.address;
      case 2:
        return r.ns;
      case 5:
      case 12:
        return r.domain;
      case 6:
        return `${r.primary} ${r.admin} ${r.serial}`;
      case 15:
        return `${r.priority} ${r.exchange}`;
      case 16:
        return r.data;
      case 33:
        return `${r.priority} ${r.weight} ${r.port} ${r.target}`;
      case 257:
        return `${r.flags} ${r.tag} ${r.value}`;
      default:
        return '?';
    }
  })();
  return `${r.name} ${r.ttl} ${t} ${data}`;
}

export function decode(buf: Buffer): Decoded {
  const p = Packet.parse(buf);
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- see format()
  const additionals = p.additionals as any[];
  const opt = additionals.find((r) => r.type === 41);
  let qname = '';
  for (let i = 12; buf.readUInt16BE(4) > 0 && i < buf.length && buf[i] !== 0; i += buf[i] + 1)
    qname += (qname ? '.' : '') + buf.toString('latin1', i + 1, i + 1 + buf[i]);
  return {
    id: p.header.id,
    rcode: p.header.rcode,
    aa: p.header.aa === 1,
    tc: p.header.tc === 1,
    rd: p.header.rd === 1,
    qname,
    answer: p.answers.map(format),
    authority: p.authorities.map(format),
    additional: additionals.filter((r) => r.type !== 41).map(format),
    ...(opt
      ? { opt: { udpSize: opt.class, extRcode: opt.extendedRcode, version: opt.version, do: !!opt.doFlag } }
      : {}),
  };
}
