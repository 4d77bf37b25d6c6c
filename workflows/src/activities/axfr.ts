// A zone transfer client (AXFR over TCP, RFC 5936) for the import scan: one connection, the query, then messages
// read as they arrive until the closing SOA. Bounded before any work: a deadline for the whole transfer, a record
// count and a byte count; the address is the one the caller's policy allowed (no name is resolved here).
import { connect } from 'node:net';
import { randomInt } from 'node:crypto';
import DNS from 'dns2';
import { norm, type Answer } from './dns-lookup.js';

const { Packet } = DNS;

/** One transferred record as dns2 parses it (the shape the resolver lookups read). */
export type AxfrAnswer = Answer;

export interface AxfrLimits {
  timeoutMs: number;
  maxRecords: number;
  maxBytes: number;
}

export type AxfrOutcome = { ok: true; records: AxfrAnswer[] } | { ok: false; error: string; tooLarge?: boolean };

const RCODES: Record<number, string> = {
  1: 'FORMERR',
  2: 'SERVFAIL',
  3: 'NXDOMAIN',
  4: 'NOTIMP',
  5: 'REFUSED',
  9: 'NOTAUTH',
};

/** Asks `address`:`port` for the zone `zone` (no trailing dot). Never throws: a failure is `{ ok: false, error }`. */
export function transferZone(zone: string, address: string, port: number, limits: AxfrLimits): Promise<AxfrOutcome> {
  return new Promise((resolve) => {
    const query = new Packet();
    query.header.id = randomInt(65536);
    (query.questions as unknown[]).push({ name: zone, type: Packet.TYPE.AXFR, class: Packet.CLASS.IN });
    const wire = query.toBuffer();
    const framed = Buffer.alloc(wire.length + 2);
    framed.writeUInt16BE(wire.length, 0);
    wire.copy(framed, 2);

    const records: AxfrAnswer[] = [];
    let pending: Buffer = Buffer.alloc(0);
    let bytes = 0;
    let soas = 0;
    let done = false;
    const socket = connect({ host: address, port });
    const finish = (outcome: AxfrOutcome) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(outcome);
    };
    const timer = setTimeout(
      () => finish({ ok: false, error: `no complete transfer within ${limits.timeoutMs / 1000} s` }),
      limits.timeoutMs,
    );
    socket.on('connect', () => socket.write(framed));
    socket.on('error', (err) => finish({ ok: false, error: err.message }));
    socket.on('close', () => finish({ ok: false, error: 'the nameserver closed the connection before the end' }));
    socket.on('data', (chunk: Buffer) => {
      bytes += chunk.length;
      if (bytes > limits.maxBytes)
        return finish({ ok: false, tooLarge: true, error: `the transfer is larger than ${limits.maxBytes} bytes` });
      pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
      while (pending.length >= 2 && pending.length >= 2 + pending.readUInt16BE(0)) {
        const length = pending.readUInt16BE(0);
        const message = pending.subarray(2, 2 + length);
        pending = pending.subarray(2 + length);
        let packet: ReturnType<typeof Packet.parse>;
        try {
          packet = Packet.parse(message);
        } catch (err) {
          return finish({ ok: false, error: `malformed message: ${err instanceof Error ? err.message : String(err)}` });
        }
        if (packet.header.id !== query.header.id) return finish({ ok: false, error: 'an answer to another query' });
        if (packet.header.rcode !== 0) {
          const rcode = RCODES[packet.header.rcode] ?? `rcode ${packet.header.rcode}`;
          return finish({ ok: false, error: `the nameserver refused the transfer (${rcode})` });
        }
        for (const rr of packet.answers as unknown as AxfrAnswer[]) {
          if (!rr || typeof rr.name !== 'string') continue;
          if (rr.type === Packet.TYPE.SOA && norm(rr.name) === zone) {
            soas++;
            if (soas === 2) return finish({ ok: true, records });
            continue;
          }
          if (soas === 0) return finish({ ok: false, error: 'the transfer does not start with the zone’s SOA' });
          records.push(rr);
          if (records.length > limits.maxRecords)
            return finish({
              ok: false,
              tooLarge: true,
              error: `the zone holds more than ${limits.maxRecords} records, the most an import session takes`,
            });
        }
      }
    });
  });
}
