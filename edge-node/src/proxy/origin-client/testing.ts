// Test helpers of the origin client: a raw origin on 127.0.0.1 that answers each request with scripted bytes, and a
// handler that records an answer (usable with undici's dispatch as well as with the origin client).
import { request, type Agent } from 'node:http';
import { createServer, type Socket } from 'node:net';
import { listenForTest } from '../../testing/listen.js';
import type { OriginHandler } from './request.js';
import { OriginClient, type OriginClientOptions } from './client.js';
import { NativeOriginClient } from './native.js';

/** Either origin client: the TypeScript one (the reference) or the native one. */
export type AnyOriginClient = OriginClient | NativeOriginClient;

/** The clients every origin-client test runs against: each must pass the same cases. */
export const CLIENTS: [string, (opts: OriginClientOptions) => AnyOriginClient][] = [
  ['typescript', (opts) => new OriginClient(opts)],
  ['native', (opts) => new NativeOriginClient(opts)],
];

export interface SeenRequest {
  head: string;
  body: Buffer;
}

/** What the origin sends for one request: bytes (a string is latin1), written in `pieces` parts, then maybe a close. */
export interface Script {
  bytes: string | Buffer;
  /** Writes the answer in parts of this many bytes, a few ms apart (a head or body arriving in pieces). */
  pieces?: number;
  /** Closes the connection after the answer. */
  close?: boolean;
  /** Resets the connection (RST) after the answer. */
  reset?: boolean;
  /** Answers as soon as the head is in, without reading the body. */
  early?: boolean;
}

export interface RawOrigin {
  port: number;
  seen: SeenRequest[];
  /** Connections accepted so far. */
  connections: number;
}

/** Reads requests (Content-Length or chunked bodies) and answers each with `answer(request, n)`. */
export async function rawOrigin(
  t: { after(fn: () => Promise<void>): void },
  answer: (req: SeenRequest, index: number) => Script,
): Promise<RawOrigin> {
  const origin: RawOrigin = { port: 0, seen: [], connections: 0 };
  const server = createServer((s: Socket) => {
    origin.connections++;
    s.on('error', () => undefined);
    let buf = Buffer.alloc(0);
    let busy = false;
    const step = () => {
      if (busy) return;
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) return;
      const head = buf.subarray(0, end).toString('latin1');
      const cl = /\r\ncontent-length: *(\d+)/i.exec(head);
      const chunked = /\r\ntransfer-encoding: *chunked/i.test(head);
      let body: Buffer | undefined;
      let consumed = end + 4;
      if (chunked) {
        const parts: Buffer[] = [];
        let at = end + 4;
        for (;;) {
          const lf = buf.indexOf('\r\n', at);
          if (lf < 0) break;
          const size = parseInt(buf.subarray(at, lf).toString('latin1'), 16);
          if (size === 0) {
            if (buf.length >= lf + 4) {
              body = Buffer.concat(parts);
              consumed = lf + 4;
            }
            break;
          }
          if (buf.length < lf + 2 + size + 2) break;
          parts.push(buf.subarray(lf + 2, lf + 2 + size));
          at = lf + 2 + size + 2;
        }
      } else {
        const need = cl ? Number(cl[1]) : 0;
        if (buf.length - end - 4 >= need) {
          body = buf.subarray(end + 4, end + 4 + need);
          consumed = end + 4 + need;
        }
      }
      const req: SeenRequest = { head, body: body ?? Buffer.alloc(0) };
      const index = origin.seen.length;
      const script = answer(req, index);
      if (body === undefined && !script.early) return;
      origin.seen.push(req);
      buf = body === undefined ? Buffer.alloc(0) : buf.subarray(consumed);
      busy = true;
      const bytes = typeof script.bytes === 'string' ? Buffer.from(script.bytes, 'latin1') : script.bytes;
      const finish = () => {
        busy = false;
        if (script.reset) s.resetAndDestroy();
        else if (script.close) s.end();
        else step();
      };
      if (!script.pieces) {
        s.write(bytes);
        finish();
        return;
      }
      let at = 0;
      const drip = () => {
        if (s.destroyed) return;
        s.write(bytes.subarray(at, at + script.pieces!));
        at += script.pieces!;
        if (at < bytes.length) setTimeout(drip, 1);
        else finish();
      };
      drip();
    };
    s.on('data', (c: Buffer) => {
      buf = Buffer.concat([buf, c]);
      step();
    });
  });
  origin.port = await listenForTest(t, server);
  return origin;
}

/** An answer as a handler saw it; `error` is the failure's code (or message) when there was one. */
export interface Recorded {
  status: number;
  headers: [string, string][];
  body: string;
  trailers: [string, string][];
  error: string | null;
}

function text(b: Buffer | string): string {
  return typeof b === 'string' ? b : b.toString('latin1');
}

/** A raw [name, value, …] list as pairs, names lower case. */
export function pairs(raw: readonly (Buffer | string)[] | null | undefined): [string, string][] {
  const out: [string, string][] = [];
  if (!raw) return out;
  for (let i = 0; i < raw.length; i += 2) out.push([text(raw[i]).toLowerCase(), text(raw[i + 1])]);
  return out;
}

/** Records one answer; `done` resolves when it completed or failed. */
export class Recorder implements OriginHandler {
  readonly result: Recorded = { status: 0, headers: [], body: '', trailers: [], error: null };
  private readonly chunks: Buffer[] = [];
  readonly done: Promise<Recorded>;
  private settle!: (r: Recorded) => void;
  abort: ((reason: Error) => void) | undefined;

  constructor() {
    this.done = new Promise((r) => (this.settle = r));
  }

  onConnect(abort: (reason: Error) => void): void {
    this.abort = abort;
  }
  onHeaders(status: number, raw: (Buffer | string)[], _resume?: () => void): boolean {
    if (status < 200) return true; // undici hands interim answers on; the origin client skips them
    this.result.status = status;
    this.result.headers = pairs(raw);
    return true;
  }
  onData(chunk: Buffer): boolean {
    this.chunks.push(Buffer.from(chunk));
    return true;
  }
  onComplete(trailers: (Buffer | string)[] | null): void {
    this.result.body = Buffer.concat(this.chunks).toString('latin1');
    this.result.trailers = pairs(trailers);
    this.settle(this.result);
  }
  onError(err: Error): void {
    this.result.body = Buffer.concat(this.chunks).toString('latin1');
    this.result.error = (err as { code?: string }).code ?? err.message;
    this.settle(this.result);
  }
}

/** An edge's answer as a client on a keep-alive agent saw it. */
export interface Outcome {
  status: number;
  edgeError: string;
  body: string;
}

/** One request to an edge on 127.0.0.1 through `agent` (keep-alive connections), with a body of `size` bytes or none. */
export function viaAgent(
  port: number,
  agent: Agent,
  host: string,
  method: string,
  path: string,
  size = -1,
): Promise<Outcome> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { host };
    if (size >= 0) headers['content-length'] = String(size);
    const req = request({ host: '127.0.0.1', port, method, path, agent, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          edgeError: String(res.headers['x-edge-error'] ?? ''),
          body: Buffer.concat(chunks).toString(),
        }),
      );
      res.on('error', reject);
    });
    req.setTimeout(60_000, () => req.destroy(new Error('no answer within 60 s')));
    req.on('error', reject);
    req.end(size >= 0 ? Buffer.alloc(size, 0x78) : undefined);
  });
}
