// Issue 12's native-front ceiling row for wrk-front.sh: the http-front module (edge-node/native/http-front: accept,
// head parsing and writes in C, a batch of parsed requests per call into JavaScript) serving a 1 KB cache hit from a
// JavaScript Map, keyed by host + target as the edge's cache is. Per request the JavaScript makes one string (the
// key, one slice of the shared buffer) and copies two pre-encoded pieces into the answers' buffer: the status line
// with the Date (made again once a second, as uWS and nginx send one) and the stored entry (its headers and body).
// Usage: node --import tsx bench/edge-node/native-front.ts <port> [reuse|single] [key|reads|proxy|proxy-peek <origin port>]
// `reuse`: SO_REUSEPORT, for several processes on one port (wrk-front.sh's 2-core rows).
// `proxy`: the plain proxy with the module's origin side: JavaScript only decides. Per request it finds the Host's
// record (a Map), writes the request head to send (the method and target copied from the shared buffer, then the
// record's pre-encoded lines: version, Host, the three X-Forwarded fields as nginx's bench config sends them, with
// the peer's address from a memo) and names the origin (M.ORIGIN); C writes it on a pooled keep-alive connection and
// copies the origin's answer, head and body, to the client. wrk sends no other field, so none is copied here.
// `proxy-peek`: the same with a peek (recv MSG_PEEK) at every pooled connection taken (peekEveryReuse).
// `reads`: also make the strings the edge reads per request (as ceiling.ts reads does through uWS.js): a list of
// [name, value] pairs of every header (names lower-cased, parsed from the head in JavaScript), the method, the path,
// the query; the peer stays the number C gives.
import { FIELDS, FLAG, M, listenFront } from '../../edge-node/native/http-front/front.js';

const [portText, reuse, what = 'key', originPortText] = process.argv.slice(2);
const reads = what === 'reads';
const proxy = what === 'proxy' || what === 'proxy-peek';
const port = Number(portText);
if (!port) throw new Error('usage: native-front.ts <port> [reuse]');

interface Entry {
  /** The stored head (after the status line and Date) and body, pre-encoded. */
  whole: Buffer;
  /** The head alone, for HEAD. */
  head: Buffer;
}
const entry = (headers: string, body: Buffer): Entry => {
  const head = Buffer.from(`${headers}content-length: ${body.length}\r\n\r\n`, 'latin1');
  return { whole: Buffer.concat([head, body]), head };
};
const BODY = Buffer.alloc(1024, 'a');
const HIT = entry('content-type: text/plain\r\ncache-control: max-age=300\r\n', BODY);
const NOT_FOUND = entry('content-type: text/plain\r\n', Buffer.from('not found\n'));
/** The cache: the bench's entry among 1,000 others, keyed by host + target. */
const cache = new Map<string, Entry>();
for (let i = 0; i < 1000; i++) cache.set(`cache.bench.example.org/static/f${i}.css`, HIT);
cache.set('cache.bench.example.org/static/a.css', HIT);
cache.set('plain.bench.example.org/page', HIT);

let second = 0;
let ok = Buffer.alloc(0);
let okClose = Buffer.alloc(0);
let notFound = Buffer.alloc(0);
let notFoundClose = Buffer.alloc(0);
const statusLines = (now: number): void => {
  second = Math.floor(now / 1000);
  const date = `date: ${new Date(now).toUTCString()}\r\n`;
  ok = Buffer.from(`HTTP/1.1 200 OK\r\n${date}`, 'latin1');
  okClose = Buffer.from(`HTTP/1.1 200 OK\r\n${date}connection: close\r\n`, 'latin1');
  notFound = Buffer.from(`HTTP/1.1 404 Not Found\r\n${date}`, 'latin1');
  notFoundClose = Buffer.from(`HTTP/1.1 404 Not Found\r\n${date}connection: close\r\n`, 'latin1');
};
statusLines(Date.now());

/** What the reads mode read, kept so that the reads are not optimised away. */
let reqs = 0;
export const sink: { headers: [string, string][]; method: string; path: string; query: string; peer: number }[] = [];
const CR = 13;
const COLON = 58;
/** Every header of the head at rx[off, off + len) as [name, value] pairs (names lower-cased), as uWS's forEach. */
const headersOf = (rx: Buffer, off: number, len: number): [string, string][] => {
  const out: [string, string][] = [];
  const end = off + len - 2;
  let i = rx.indexOf(CR, off) + 2; // past the request line
  while (i < end) {
    const eol = rx.indexOf(CR, i);
    const colon = rx.indexOf(COLON, i);
    let v = colon + 1;
    while (rx[v] === 32 || rx[v] === 9) v++;
    let e = eol;
    while (e > v && (rx[e - 1] === 32 || rx[e - 1] === 9)) e--;
    out.push([rx.toString('latin1', i, colon).toLowerCase(), rx.toString('latin1', v, e)]);
    i = eol + 2;
  }
  return out;
};

/** proxy: a host's record, the origin's index and the lines after the target, per peer address (a memo). */
interface Route {
  origin: number;
  host: string;
  tails: Map<number, Buffer>;
}
const routes = new Map<string, Route>();
const SPACE = 32;
const tailOf = (r: Route, peer: number): Buffer => {
  let t = r.tails.get(peer);
  if (t === undefined) {
    const ip = `${peer >>> 24}.${(peer >>> 16) & 255}.${(peer >>> 8) & 255}.${peer & 255}`;
    t = Buffer.from(
      ` HTTP/1.1\r\nhost: ${r.host}\r\nx-forwarded-for: ${ip}\r\nx-forwarded-proto: http\r\nx-forwarded-host: ${r.host}\r\n\r\n`,
      'latin1',
    );
    if (r.tails.size < 1024) r.tails.set(peer, t);
  }
  return t;
};
const onProxyBatch = (n: number): void => {
  const { rx, meta, tx } = front;
  let at = 0;
  for (let i = 0; i < n; i++) {
    const m = i * FIELDS;
    const r = routes.get(rx.toString('latin1', meta[m + M.HOST_OFF], meta[m + M.HOST_OFF] + meta[m + M.HOST_LEN]));
    if (r === undefined) {
      const first = (meta[m + M.FLAGS] & FLAG.KEEP_ALIVE) !== 0 ? notFound : notFoundClose;
      tx.set(first, at);
      tx.set(NOT_FOUND.whole, at + first.length);
      meta[m + M.TX_OFF] = at;
      meta[m + M.TX_LEN] = first.length + NOT_FOUND.whole.length;
      at += first.length + NOT_FOUND.whole.length;
      continue;
    }
    // the head: method, space, target (bytes copied in a loop: short spans), then the record's lines
    const start = at;
    for (let k = meta[m + M.METHOD_OFF], e = k + meta[m + M.METHOD_LEN]; k < e; k++) tx[at++] = rx[k];
    tx[at++] = SPACE;
    for (let k = meta[m + M.TARGET_OFF], e = k + meta[m + M.TARGET_LEN]; k < e; k++) tx[at++] = rx[k];
    const tail = tailOf(r, meta[m + M.PEER]);
    tx.set(tail, at);
    at += tail.length;
    meta[m + M.TX_OFF] = start;
    meta[m + M.TX_LEN] = at - start;
    meta[m + M.ORIGIN] = r.origin;
  }
};

const front = listenFront(
  { host: '127.0.0.1', port, reusePort: reuse === 'reuse', batch: 64, peekEveryReuse: what === 'proxy-peek' },
  (n) => {
    if (proxy) {
      onProxyBatch(n);
      return;
    }
    const now = Date.now();
    if (Math.floor(now / 1000) !== second) statusLines(now);
    const { rx, meta, tx } = front;
    let at = 0;
    for (let i = 0; i < n; i++) {
      const m = i * FIELDS;
      const key = rx.toString('latin1', meta[m + M.HOST_OFF], meta[m + M.TARGET_OFF] + meta[m + M.TARGET_LEN]);
      const flags = meta[m + M.FLAGS];
      if (reads) {
        const t = meta[m + M.TARGET_OFF];
        const pathEnd = t + meta[m + M.PATH_LEN];
        const targetEnd = t + meta[m + M.TARGET_LEN];
        sink[reqs++ & 63] = {
          headers: headersOf(rx, meta[m + M.HEAD_OFF], meta[m + M.HEAD_LEN]),
          method: rx.toString('latin1', meta[m + M.METHOD_OFF], meta[m + M.METHOD_OFF] + meta[m + M.METHOD_LEN]),
          path: rx.toString('latin1', t, pathEnd),
          query: pathEnd < targetEnd ? rx.toString('latin1', pathEnd + 1, targetEnd) : '',
          peer: meta[m + M.PEER],
        };
      }
      const hit = cache.get(key);
      const e = hit ?? NOT_FOUND;
      const keep = (flags & FLAG.KEEP_ALIVE) !== 0;
      const first = hit !== undefined ? (keep ? ok : okClose) : keep ? notFound : notFoundClose;
      const rest = (flags & FLAG.HEAD) !== 0 ? e.head : e.whole;
      // tx holds 2 KiB per request of the batch; every answer here is smaller
      tx.set(first, at);
      tx.set(rest, at + first.length);
      meta[m + M.TX_OFF] = at;
      meta[m + M.TX_LEN] = first.length + rest.length;
      at += first.length + rest.length;
    }
  },
);
if (proxy) {
  const originPort = Number(originPortText);
  if (!originPort) throw new Error('usage: native-front.ts <port> <reuse|single> proxy <origin port>');
  const origin = front.addOrigin('127.0.0.1', originPort, 128);
  for (const host of ['plain.bench.example.org', 'cache.bench.example.org'])
    routes.set(host, { origin, host, tails: new Map() });
}
process.on('SIGTERM', () => {
  front.close();
  process.exit(0);
});
