// NOTIFY (RFC 1996) to a zone's secondaries when its serial changes: one UDP message per secondary, signed with its
// TSIG key, sent again (1, 2, 4, 8 s) until the secondary answers, at most 5 times; a newer serial replaces a
// pending one.
import { createSocket } from 'node:dgram';
import { randomInt } from 'node:crypto';
import { isIPv6 } from 'node:net';
import { FLAG, TYPE } from '../wire/constants.js';
import { MessageWriter } from '../wire/writer.js';
import type { CompiledZone } from '../zone/model.js';
import { signRequest } from './tsig.js';
import type { TransferSecondary } from './transfer.js';

const OPCODE_NOTIFY = 4;
const TRIES = 5;

export function notifyMessage(apex: string, id: number): Buffer {
  const w = new MessageWriter();
  w.u16(id);
  w.u16((OPCODE_NOTIFY << 11) | FLAG.AA);
  w.u16(1);
  w.u16(0);
  w.u16(0);
  w.u16(0);
  w.name(apex, false);
  w.u16(TYPE.SOA);
  w.u16(1);
  return w.finish();
}

export class Notifier {
  /** Pending notifications by zone and secondary: the serial being announced. */
  private readonly pending = new Map<string, number>();
  private closed = false;
  private readonly timers = new Set<NodeJS.Timeout>();

  constructor(private readonly onError: (secondary: string, reason: string) => void = () => {}) {}

  /** Tells every secondary of `zone` about its current serial. */
  notify(zone: CompiledZone): void {
    for (const s of zone.transfers?.secondaries ?? []) this.send(zone.apex, zone.serial, s);
  }

  close(): void {
    this.closed = true;
    for (const t of this.timers) clearTimeout(t);
  }

  private send(apex: string, serial: number, s: TransferSecondary): void {
    const key = `${apex} ${s.address} ${s.port}`;
    this.pending.set(key, serial);
    const attempt = (n: number) => {
      if (this.closed || this.pending.get(key) !== serial) return;
      const id = randomInt(0, 65536);
      let msg = notifyMessage(apex, id);
      if (s.key) msg = signRequest(msg, s.key);
      const sock = createSocket(isIPv6(s.address) ? 'udp6' : 'udp4');
      const wait = 1000 * 2 ** n;
      const done = () => {
        clearTimeout(timer);
        this.timers.delete(timer);
        sock.close();
      };
      const timer = setTimeout(() => {
        done();
        if (n + 1 < TRIES) attempt(n + 1);
        else {
          this.pending.delete(key);
          this.onError(key, 'no answer to NOTIFY');
        }
      }, wait);
      this.timers.add(timer);
      sock.on('message', (m) => {
        if (m.length >= 12 && m.readUInt16BE(0) === id && (m[2] & 0x80) !== 0) {
          done();
          if (this.pending.get(key) === serial) this.pending.delete(key);
        }
      });
      sock.on('error', (err) => this.onError(key, err.message));
      sock.send(msg, s.port, s.address);
    };
    attempt(0);
  }
}
