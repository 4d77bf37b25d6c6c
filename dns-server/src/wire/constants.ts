// DNS wire constants used by the dns-server: record types, classes, rcodes and header bits (RFC 1035, 6891).

export const TYPE = {
  A: 1,
  NS: 2,
  CNAME: 5,
  SOA: 6,
  PTR: 12,
  HINFO: 13,
  MX: 15,
  TXT: 16,
  AAAA: 28,
  SRV: 33,
  OPT: 41,
  DS: 43,
  RRSIG: 46,
  NSEC: 47,
  DNSKEY: 48,
  NSEC3: 50,
  NSEC3PARAM: 51,
  CDS: 59,
  CDNSKEY: 60,
  TSIG: 250,
  CAA: 257,
  IXFR: 251,
  AXFR: 252,
  MAILB: 253,
  MAILA: 254,
  ANY: 255,
} as const;

/** Record types a zone may hold, by their presentation name. */
export const TYPE_BY_NAME: Readonly<Record<string, number>> = {
  A: TYPE.A,
  AAAA: TYPE.AAAA,
  CNAME: TYPE.CNAME,
  MX: TYPE.MX,
  TXT: TYPE.TXT,
  NS: TYPE.NS,
  SRV: TYPE.SRV,
  CAA: TYPE.CAA,
  PTR: TYPE.PTR,
};

export const CLASS_IN = 1;
export const CLASS_ANY = 255;

export const RCODE = { NOERROR: 0, FORMERR: 1, SERVFAIL: 2, NXDOMAIN: 3, NOTIMP: 4, REFUSED: 5 } as const;

/** Header flag bits of the second 16-bit word. */
export const FLAG = { QR: 0x8000, AA: 0x0400, TC: 0x0200, RD: 0x0100 } as const;

/** Our advertised EDNS UDP payload size (DNS flag day 2020 value). */
export const EDNS_UDP_SIZE = 1232;
/** Largest UDP answer without EDNS (RFC 1035 §4.2.1). */
export const PLAIN_UDP_SIZE = 512;
/** TTL of the edge addresses that proxied records answer with. */
export const PROXIED_TTL = 120;
