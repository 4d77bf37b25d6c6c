// A minimal UDP DNS prober for the propagation benchmark: asks one A question and says whether an address is answered.
import { createSocket, type Socket } from 'node:dgram';

export interface DnsProbe {
  /** True when the answer section holds an A record with exactly `address`. */
  answers(name: string, address: string): Promise<boolean>;
  close(): void;
}

function encodeName(name: string): Buffer {
  const parts = name
    .split('.')
    .filter(Boolean)
    .map((l) => Buffer.concat([Buffer.from([l.length]), Buffer.from(l, 'ascii')]));
  return Buffer.concat([...parts, Buffer.from([0])]);
}

function skipName(buf: Buffer, off: number): number {
  for (;;) {
    const len = buf[off]!;
    if (len === 0) return off + 1;
    if ((len & 0xc0) === 0xc0) return off + 2;
    off += len + 1;
  }
}

/** The A addresses in a response with id `id` (undefined when the packet is not that response or not NOERROR). */
export function answeredAddresses(buf: Buffer, id: number): string[] | undefined {
  if (buf.length < 12 || buf.readUInt16BE(0) !== id || (buf[3]! & 0x0f) !== 0) return undefined;
  const qd = buf.readUInt16BE(4);
  const an = buf.readUInt16BE(6);
  let off = 12;
  for (let i = 0; i < qd; i++) off = skipName(buf, off) + 4;
  const out: string[] = [];
  for (let i = 0; i < an; i++) {
    off = skipName(buf, off);
    const type = buf.readUInt16BE(off);
    const rdlen = buf.readUInt16BE(off + 8);
    off += 10;
    if (type === 1 && rdlen === 4) out.push(`${buf[off]}.${buf[off + 1]}.${buf[off + 2]}.${buf[off + 3]}`);
    off += rdlen;
  }
  return out;
}

export function createDnsProbe(host: string, port: number, timeoutMs = 200): DnsProbe {
  const socket: Socket = createSocket('udp4');
  let nextId = 1;
  let pending: { id: number; resolve: (b: Buffer | undefined) => void } | undefined;
  socket.on('message', (msg) => {
    if (pending && msg.length >= 2 && msg.readUInt16BE(0) === pending.id) {
      const p = pending;
      pending = undefined;
      p.resolve(msg);
    }
  });
  return {
    async answers(name, address) {
      const id = (nextId = (nextId % 0xffff) + 1);
      const header = Buffer.alloc(12);
      header.writeUInt16BE(id, 0);
      header.writeUInt16BE(0x0000, 2);
      header.writeUInt16BE(1, 4);
      const packet = Buffer.concat([header, encodeName(name), Buffer.from([0, 1, 0, 1])]);
      const reply = await new Promise<Buffer | undefined>((resolve) => {
        const timer = setTimeout(() => {
          pending = undefined;
          resolve(undefined);
        }, timeoutMs);
        pending = {
          id,
          resolve: (b) => {
            clearTimeout(timer);
            resolve(b);
          },
        };
        socket.send(packet, port, host);
      });
      return reply ? (answeredAddresses(reply, id)?.includes(address) ?? false) : false;
    },
    close() {
      socket.close();
    },
  };
}
