// Message writer with name compression (RFC 1035 §4.1.4), used at compile time to build answer templates.
import type { Rdata } from '../zone/model.js';

// One scratch buffer and compression map shared by every writer: compiling is synchronous and writers never nest,
// so each template costs one copy of its final bytes (bench/dns-server/lookup.bench.ts reports the compile time).
const SCRATCH = Buffer.allocUnsafe(65536);
const NAMES = new Map<string, number>();

export class MessageWriter {
  buf = SCRATCH;
  len = 0;
  private readonly names = NAMES;

  constructor() {
    NAMES.clear();
  }

  private ensure(n: number): void {
    if (this.len + n <= this.buf.length) return;
    const next = Buffer.alloc(Math.max(this.buf.length * 2, this.len + n));
    this.buf.copy(next, 0, 0, this.len);
    this.buf = next;
  }

  u8(v: number): void {
    this.ensure(1);
    this.buf[this.len++] = v;
  }
  u16(v: number): void {
    this.ensure(2);
    this.buf.writeUInt16BE(v, this.len);
    this.len += 2;
  }
  u32(v: number): void {
    this.ensure(4);
    this.buf.writeUInt32BE(v >>> 0, this.len);
    this.len += 4;
  }
  bytes(b: Buffer): void {
    this.ensure(b.length);
    b.copy(this.buf, this.len);
    this.len += b.length;
  }
  setU16(at: number, v: number): void {
    this.buf.writeUInt16BE(v, at);
  }

  /** Writes a lower-case absolute name ('' = root), pointing at an earlier copy of a suffix when allowed. */
  name(name: string, compress: boolean): void {
    this.ensure(name.length + 2);
    const buf = this.buf;
    let pos = 0;
    while (pos < name.length) {
      if (compress) {
        const suffix = pos === 0 ? name : name.substring(pos);
        const at = this.names.get(suffix);
        if (at !== undefined) {
          this.u16(0xc000 | at);
          return;
        }
        if (this.len < 0x3fff) this.names.set(suffix, this.len);
      }
      let dot = name.indexOf('.', pos);
      if (dot < 0) dot = name.length;
      buf[this.len++] = dot - pos;
      for (let i = pos; i < dot; i++) buf[this.len++] = name.charCodeAt(i);
      pos = dot + 1;
    }
    buf[this.len++] = 0;
  }

  /** Writes one resource record of class IN. */
  record(owner: string, type: number, ttl: number, rdata: Rdata): void {
    this.name(owner, true);
    this.u16(type);
    this.u16(1);
    this.u32(ttl);
    const lenAt = this.len;
    this.u16(0);
    for (const part of rdata) {
      if (Buffer.isBuffer(part)) this.bytes(part);
      else this.name(part.name, part.compress);
    }
    this.setU16(lenAt, this.len - lenAt - 2);
  }

  finish(): Buffer {
    return Buffer.from(this.buf.subarray(0, this.len));
  }
}
