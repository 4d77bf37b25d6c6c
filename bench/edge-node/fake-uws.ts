// Stand-ins for uWS's HttpRequest and HttpResponse, to call the edge's whole request handler (server.ts makeHandler)
// in-process without a socket: the request line and headers as uWS gives them, and a response that records the
// status, cache status, content coding and bytes written, never backpressured, and says when the answer is finished.

/** What uWS's HttpRequest gives the handler, for one request line and header list. */
export class FakeRequest {
  constructor(
    private readonly url: string,
    private readonly query: string,
    private readonly headers: readonly (readonly [string, string])[],
  ) {}
  forEach(cb: (k: string, v: string) => void): void {
    for (const [k, v] of this.headers) cb(k, v);
  }
  getHeader(name: string): string {
    for (const [k, v] of this.headers) if (k === name) return v;
    return '';
  }
  getCaseSensitiveMethod(): string {
    return 'GET';
  }
  getUrl(): string {
    return this.url;
  }
  getQuery(): string | undefined {
    return this.query === '' ? undefined : this.query;
  }
}

import type { HttpRequest, HttpResponse } from 'uWebSockets.js';

const PEER = new TextEncoder().encode('127.0.0.1').buffer;
const PEER_BINARY = new Uint8Array([127, 0, 0, 1]).buffer;

/** What the handler writes on uWS's HttpResponse; never backpressured. */
export class FakeResponse {
  status = '';
  cache = '';
  encoding = '';
  bytes = 0;
  finished = false;
  onFinish: (() => void) | null = null;
  private finish(): void {
    this.finished = true;
    this.onFinish?.();
  }
  onAborted(): void {}
  onWritable(): void {}
  getRemoteAddressAsText(): ArrayBuffer {
    return PEER;
  }
  getRemoteAddress(): ArrayBuffer {
    return PEER_BINARY;
  }
  cork(cb: () => void): void {
    cb();
  }
  /**
   * The status line's text, or it and the header lines CRLF between: a string (respond.ts headBlock) or the
   * pre-encoded bytes of a cache hit (storedHead).
   */
  writeStatus(s: string | Uint8Array): this {
    const lines = (typeof s === 'string' ? s : Buffer.from(s).toString('latin1')).split('\r\n');
    this.status = lines[0]!;
    for (let i = 1; i < lines.length; i++) {
      const line = lines[i]!;
      const colon = line.indexOf(':');
      if (colon > 0) this.writeHeader(line.slice(0, colon).toLowerCase(), line.slice(colon + 1).trim());
    }
    return this;
  }
  writeHeader(k: string, v: string): this {
    if (k === 'x-cache-status') this.cache = v;
    if (k === 'content-encoding') this.encoding = v;
    return this;
  }
  getWriteOffset(): number {
    return this.bytes;
  }
  write(chunk: Buffer): boolean {
    this.bytes += chunk.length;
    return true;
  }
  tryEnd(chunk: Buffer, total: number): [boolean, boolean] {
    this.bytes += chunk.length;
    if (this.bytes >= total) this.finish();
    return [true, this.bytes >= total];
  }
  end(body?: string | Buffer): void {
    this.bytes += body?.length ?? 0;
    this.finish();
  }
  endWithoutBody(): void {
    this.finish();
  }
  close(): void {
    this.finish();
  }
}

/** A browser's request headers (besides Host) for the cache-hit benchmarks. */
export const BROWSER = [
  ['user-agent', 'Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0'],
  ['accept', 'text/css,*/*;q=0.1'],
  ['accept-language', 'en-GB,en;q=0.5'],
  ['accept-encoding', 'gzip, deflate, br, zstd'],
  ['connection', 'keep-alive'],
] as const;

/** Calls a uWS handler with the stand-ins for one request; throws unless it answered `status` with `cache`. */
export function answerAs(
  handler: (res: HttpResponse, req: HttpRequest) => void,
  req: FakeRequest,
  status: string,
  cache: string,
): void {
  const res = new FakeResponse();
  handler(res as unknown as HttpResponse, req as unknown as HttpRequest);
  if (res.status !== status || res.cache !== cache)
    throw new Error(`expected ${status} ${cache}, got ${res.status} ${res.cache}`);
}
