// Zone transfers out (RFC 5936 AXFR, RFC 1995 IXFR) over TCP to the zone's configured secondaries: the client's
// address must be one of them, and a secondary with a TSIG key must sign its request with it (RFC 8945); every
// message of the answer is then signed. IXFR answers a secondary that is up to date with the SOA alone, one a few
// changes behind with the differences kept since (journal.ts), and anyone else with the whole zone (§4).
import type { Socket } from 'node:net';
import { FLAG, RCODE, TYPE } from '../wire/constants.js';
import { MessageWriter } from '../wire/writer.js';
import type { CompiledZone } from '../zone/model.js';
import type { ZoneTable } from '../zone/table.js';
import { zoneRecords, type ZoneRR } from './records.js';
import { findTsig, questionEnd, readName, ResponseSigner, verifyRequest, type TsigKeyMaterial } from './tsig.js';

const RCODE_NOTAUTH = 9;
/** Records per message are added until a message passes this size (well under 65,535). */
const MESSAGE_BYTES = 16_000;

export interface TransferSecondary {
  /** IP literal as the socket reports it (IPv4-mapped IPv6 folded to IPv4). */
  address: string;
  port: number;
  key: TsigKeyMaterial | null;
}

export interface ZoneTransferConfig {
  secondaries: TransferSecondary[];
  keys: Map<string, TsigKeyMaterial>;
}

/** The answer to a transfer query: messages, made one by one as the socket takes them. */
export type TransferAnswer = Iterator<Buffer>;

export function plainAddress(a: string): string {
  return a.startsWith('::ffff:') && a.includes('.') ? a.slice(7) : a.toLowerCase();
}

/**
 * The answer to an AXFR or IXFR query from `address`; null when `msg` is not one (the query is answered as usual).
 */
export function zoneTransfer(msg: Buffer, len: number, table: ZoneTable, address: string): TransferAnswer | null {
  if (len < 12 || (msg[2] & 0x80) !== 0 || ((msg[2] >> 3) & 0xf) !== 0) return null;
  const qEnd = questionEnd(msg, len);
  if (qEnd < 0) return null;
  const qtype = msg.readUInt16BE(qEnd - 4);
  if (qtype !== TYPE.AXFR && qtype !== TYPE.IXFR) return null;
  const error = (rcode: number) => single(headerWithQuestion(msg, qEnd, rcode, 0));
  const name = readName(msg, 12, len)![0];
  const zone = table.get(name);
  const config = zone?.transfers;
  if (!zone || !config) return error(RCODE.REFUSED);
  const tsig = findTsig(msg, len);
  if (tsig === 'malformed') return error(RCODE.FORMERR);
  const from = plainAddress(address);
  const allowed = config.secondaries.filter((s) => s.address === from);
  if (allowed.length === 0) return error(RCODE.REFUSED);
  let signer: ResponseSigner | null = null;
  if (tsig) {
    const v = verifyRequest(msg, len, tsig, config.keys);
    if (!v.ok) return error(RCODE_NOTAUTH);
    signer = new ResponseSigner(v.key, tsig.mac);
  }
  // A secondary configured with a key must use it; one without may transfer unsigned (or signed with any zone key).
  if (!allowed.some((s) => s.key === null || (tsig !== null && s.key.name === tsig.keyName)))
    return error(RCODE_NOTAUTH);
  const sign = (m: Buffer) => (signer ? signer.sign(m) : m);

  const soa = soaRecord(zone);
  if (!soa) return error(RCODE.SERVFAIL);
  let records: ZoneRR[];
  if (qtype === TYPE.IXFR) {
    const theirs = clientSerial(msg, len, qEnd);
    if (theirs === zone.serial)
      records = [soa]; // up to date (RFC 1995 §2)
    else {
      const diff = theirs === null ? null : (zone.journal?.since(theirs, zone.serial) ?? null);
      records = diff ? [soa, ...diff, soa] : [...zoneRecords(zone), soa];
    }
  } else records = [...zoneRecords(zone), soa]; // zoneRecords starts with the SOA
  return messages(msg, qEnd, records, sign);
}

function* messages(msg: Buffer, qEnd: number, records: ZoneRR[], sign: (m: Buffer) => Buffer): Generator<Buffer> {
  let i = 0;
  let first = true;
  do {
    const w = new MessageWriter();
    w.u16(msg.readUInt16BE(0));
    w.u16(FLAG.QR | FLAG.AA);
    w.u16(first ? 1 : 0);
    const countAt = w.len;
    w.u16(0);
    w.u16(0);
    w.u16(0);
    if (first) w.bytes(msg.subarray(12, qEnd));
    let n = 0;
    while (i < records.length && (n === 0 || w.len < MESSAGE_BYTES)) {
      const r = records[i++];
      w.record(r.owner, r.type, r.ttl, r.rdata);
      n++;
    }
    w.setU16(countAt, n);
    first = false;
    yield sign(w.finish());
  } while (i < records.length);
}

function single(m: Buffer): TransferAnswer {
  return [m][Symbol.iterator]();
}

function headerWithQuestion(msg: Buffer, qEnd: number, rcode: number, aa: number): Buffer {
  const out = Buffer.alloc(qEnd);
  msg.copy(out, 0, 0, qEnd);
  out.writeUInt16BE(FLAG.QR | aa | (msg.readUInt16BE(2) & 0x0100) | rcode, 2);
  out.writeUInt32BE(0x00010000, 4);
  out.writeUInt32BE(0, 8);
  return out;
}

function soaRecord(zone: CompiledZone): ZoneRR | undefined {
  const set = zone.nodes.get(zone.apex)?.rrsets.get(TYPE.SOA);
  return set ? { owner: zone.apex, type: TYPE.SOA, ttl: set.ttl, rdata: set.rdatas[0] } : undefined;
}

/** The serial of the SOA an IXFR query carries in its authority section (RFC 1995 §3), or null. */
function clientSerial(msg: Buffer, len: number, qEnd: number): number | null {
  if (msg.readUInt16BE(8) < 1) return null;
  let p = qEnd;
  for (let i = 0; i < msg.readUInt16BE(6); i++) {
    const o = readName(msg, p, len);
    if (!o || o[1] + 10 > len) return null;
    p = o[1] + 10 + msg.readUInt16BE(o[1] + 8);
  }
  const owner = readName(msg, p, len);
  if (!owner || owner[1] + 10 > len || msg.readUInt16BE(owner[1]) !== TYPE.SOA) return null;
  const mname = readName(msg, owner[1] + 10, len);
  const rname = mname && readName(msg, mname[1], len);
  if (!rname || rname[1] + 4 > len) return null;
  return msg.readUInt32BE(rname[1]);
}

/**
 * Writes a transfer's messages to `socket` (2-byte length prefixes), as fast as the client reads them: nothing piles
 * up in memory beyond the socket's buffer. `progress` is called as messages leave (the connection's idle timer).
 */
export function streamTransfer(socket: Socket, answer: TransferAnswer, progress: () => void): void {
  const pump = () => {
    progress();
    for (;;) {
      let next: IteratorResult<Buffer>;
      try {
        next = answer.next();
      } catch {
        socket.destroy(); // the zone could not be encoded: the client retries
        return;
      }
      if (next.done) return;
      const framed = Buffer.allocUnsafe(next.value.length + 2);
      framed.writeUInt16BE(next.value.length, 0);
      next.value.copy(framed, 2);
      if (!socket.write(framed)) {
        socket.once('drain', pump);
        return;
      }
    }
  };
  pump();
}
