// Micro-benchmark of the origin client's response-head parser (edge-node/src/proxy/origin-client/head.ts) against
// llhttp, the C parser inside Node's http (the anchor; undici runs the same llhttp compiled to WebAssembly). Both parse
// the same head, a typical origin answer of 12 headers (~450 bytes), from one buffer: ours finds the end, checks every
// byte, reads the framing headers and hands every header on as latin1 strings; llhttp calls back with the header strings.
// Run: node --import tsx bench/edge-node/origin-head.bench.ts
import { createRequire } from 'node:module';
import { Bench } from 'tinybench';
import { findHeadEnd, parseHead } from '../../edge-node/src/proxy/origin-client/head.js';
import { printAgainstAnchor } from './rule-gen.js';

const HEAD = Buffer.from(
  'HTTP/1.1 200 OK\r\n' +
    'Server: nginx/1.22.1\r\n' +
    'Date: Wed, 25 Nov 2026 22:00:00 GMT\r\n' +
    'Content-Type: text/html; charset=utf-8\r\n' +
    'Content-Length: 0\r\n' +
    'Connection: keep-alive\r\n' +
    'Keep-Alive: timeout=60\r\n' +
    'Last-Modified: Tue, 24 Nov 2026 10:00:00 GMT\r\n' +
    'ETag: "65a1b2c3-400"\r\n' +
    'Cache-Control: public, max-age=3600\r\n' +
    'Vary: Accept-Encoding\r\n' +
    'X-Request-Id: 5f2b8c7e-9d41-4c1a-8e2f-0a6b7c8d9e0f\r\n' +
    'Set-Cookie: session=abc123; Path=/; HttpOnly; Secure; SameSite=Lax\r\n' +
    '\r\n',
  'latin1',
);

interface NativeParser {
  initialize(type: number, resource: object, maxHeaderSize?: number): void;
  execute(data: Buffer): number | Error;
  [k: number]: unknown;
}
const require = createRequire(import.meta.url);
const { HTTPParser } = require('_http_common') as {
  HTTPParser: { new (): NativeParser; RESPONSE: number; kOnHeadersComplete: number };
};
const llhttp = new HTTPParser();
llhttp.initialize(HTTPParser.RESPONSE, {});
let sink = 0;
llhttp[HTTPParser.kOnHeadersComplete] = (
  _major: number,
  _minor: number,
  headers: string[],
  _m: unknown,
  _u: unknown,
  status: number,
) => {
  sink += status + headers.length;
  return 0;
};

const bench = new Bench({ time: 1000, warmupTime: 300 });
bench.add('llhttp (Node http, C): execute one head', () => {
  const r = llhttp.execute(HEAD);
  if (typeof r !== 'number') throw r;
});
bench.add('origin client: findHeadEnd + parseHead', () => {
  const end = findHeadEnd(HEAD, 0, HEAD.length);
  const h = parseHead(HEAD, 0, end);
  sink += h.status + h.raw.length;
});
bench.add('origin client, and the names lower-cased (as the proxy reads them)', () => {
  const end = findHeadEnd(HEAD, 0, HEAD.length);
  const h = parseHead(HEAD, 0, end);
  for (let i = 0; i < h.raw.length; i += 2) sink += h.raw[i].toLowerCase().length + h.raw[i + 1].length;
});
await bench.run();
console.log(`(sink ${sink > 0})`);
printAgainstAnchor(bench);
