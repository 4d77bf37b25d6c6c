// Issue 12's ceiling rows for wrk.sh: what uWebSockets.js reaches in this process model without any of the edge's
// work, measured in the same run as nginx and the edge.
//   fixed: (a) bare uWS answering a fixed 1 KB body (the cache hit's ceiling: a hit never leaves the uWS thread).
//   reads: the same, after every read the edge makes of uWS per request (server.ts makeHandler: forEach over the
//          headers into a list of pairs, the method, URL and query, getRemoteAddress) — wrk-front.sh's row for what
//          reading a request through uWS.js's API costs.
//   proxy: (b) bare uWS in front of a minimal origin client on net.Socket: a keep-alive pool of sockets to one origin,
//          a request head built by one template per request (method, URL, Host), a response-head parser that reads
//          only the status and Content-Length and passes the other headers through, the body copied through. No
//          rules, no logging, no header validation, no chunked bodies: the JavaScript ceiling of the proxy's design.
// Usage: node --import tsx bench/edge-node/ceiling.ts <fixed|reads|proxy> <port> [origin-port]
// With several processes on one port (wrk.sh's 2-core rows), uWS listens with SO_REUSEPORT as the edge's workers do.
import { connect, type Socket } from 'node:net';
import uWS, { type HttpRequest, type HttpResponse } from 'uWebSockets.js';

const [mode, portText, originPortText] = process.argv.slice(2);
const port = Number(portText);
const originPort = Number(originPortText);
if ((mode !== 'fixed' && mode !== 'reads' && mode !== 'proxy') || !port || (mode === 'proxy' && !originPort))
  throw new Error('usage: ceiling.ts <fixed|reads|proxy> <port> [origin-port]');

const BODY = Buffer.alloc(1024, 'a');
const app = uWS.App();

/** What the reads mode read, kept so that the reads are not optimised away. */
let reqs = 0;
export const sink: { headers: [string, string][]; method: string; url: string; query: string; peer: ArrayBuffer }[] =
  [];
let collecting: [string, string][] = [];
const collect = (k: string, v: string): void => {
  collecting.push([k, v]);
};

if (mode === 'fixed' || mode === 'reads') {
  const reads = mode === 'reads';
  app.any('/*', (res, req) => {
    if (reads) {
      const headers: [string, string][] = [];
      collecting = headers;
      req.forEach(collect);
      const r = {
        headers,
        method: req.getCaseSensitiveMethod(),
        url: req.getUrl(),
        query: req.getQuery() ?? '',
        peer: res.getRemoteAddress(),
      };
      sink[reqs++ & 63] = r;
    }
    res.cork(() => {
      res.writeStatus('200 OK');
      res.writeHeader('content-type', 'text/plain');
      res.writeHeader('cache-control', 'max-age=300');
      res.end(BODY);
    });
  });
} else {
  const CRLFCRLF = Buffer.from('\r\n\r\n');

  /** One keep-alive connection to the origin, one request at a time. */
  class Upstream {
    res: HttpResponse | null = null;
    aborted = false;
    /** Bytes of a head not complete yet; the body bytes still expected (-1: reading the head). */
    private partial: Buffer | null = null;
    private left = -1;
    constructor(readonly socket: Socket) {
      socket.setNoDelay(true);
      socket.on('data', (buf: Buffer) => this.data(buf));
      socket.on('error', () => this.fail());
      socket.on('close', () => this.fail());
    }

    send(res: HttpResponse, head: string): void {
      this.res = res;
      this.aborted = false;
      this.left = -1;
      this.socket.write(head, 'latin1');
    }

    private data(input: Buffer): void {
      const res = this.res;
      if (res === null) return;
      let buf = input;
      let off = 0;
      if (this.left < 0) {
        if (this.partial !== null) {
          buf = Buffer.concat([this.partial, input]);
          this.partial = null;
        }
        const end = buf.indexOf(CRLFCRLF);
        if (end < 0) {
          this.partial = buf;
          return;
        }
        const head = buf.toString('latin1', 0, end);
        const lines = head.split('\r\n');
        const status = lines[0].slice(9);
        let length = 0;
        const headers: string[] = [];
        for (let i = 1; i < lines.length; i++) {
          const colon = lines[i].indexOf(':');
          const name = lines[i].slice(0, colon).toLowerCase();
          const value = lines[i].slice(colon + 1).trim();
          if (name === 'content-length') length = Number(value);
          else if (name !== 'connection' && name !== 'keep-alive' && name !== 'date' && name !== 'transfer-encoding')
            headers.push(name, value);
        }
        this.left = length;
        off = end + 4;
        if (!this.aborted)
          res.cork(() => {
            res.writeStatus(status);
            for (let i = 0; i < headers.length; i += 2) res.writeHeader(headers[i], headers[i + 1]);
          });
      }
      const n = Math.min(this.left, buf.length - off);
      this.left -= n;
      const done = this.left === 0;
      if (!this.aborted) {
        const chunk = off === 0 && n === buf.length ? buf : buf.subarray(off, off + n);
        res.cork(() => {
          if (done) res.end(chunk);
          else res.write(chunk);
        });
      }
      if (done) {
        this.res = null;
        idle.push(this);
      }
    }

    private fail(): void {
      const res = this.res;
      this.res = null;
      const i = idle.indexOf(this);
      if (i >= 0) idle.splice(i, 1);
      if (res !== null && !this.aborted) res.close();
    }
  }

  const idle: Upstream[] = [];

  app.any('/*', (res: HttpResponse, req: HttpRequest) => {
    const q = req.getQuery();
    const head = `${req.getMethod().toUpperCase()} ${req.getUrl()}${q ? `?${q}` : ''} HTTP/1.1\r\nhost: ${req.getHeader('host')}\r\n\r\n`;
    let up = idle.pop();
    if (up === undefined) up = new Upstream(connect(originPort, '127.0.0.1'));
    const u = up;
    res.onAborted(() => {
      u.aborted = true;
    });
    u.send(res, head);
  });
}

app.listen('127.0.0.1', port, (socket) => {
  if (!socket) {
    console.error(`cannot listen on ${port}`);
    process.exit(1);
  }
});
process.on('SIGTERM', () => process.exit(0));
