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
  writeStatus(s: string): this {
    this.status = s;
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
