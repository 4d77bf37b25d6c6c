// The edge cache key (documented in edge-node/README.md "Cache key" and docs/security.md):
//
//   <scheme>://<host><normalised path>?<query part>            the base key, one per URL and scheme
//   <base key>\n<name>=<value>[\n<name>=<value>…]              a variant, when the origin's answer varies
//
// The base key ends with `\n@rules=<id>,…` when rules scoped by client address changed what the origin was sent
// (src/phases.ts `ipScoped`; `@` cannot start a header name).
//
// A response that varies (a `Vary` header, or a Content-Encoding, which varies on Accept-Encoding whatever the origin
// says) is stored under its variant key, and the base key holds a marker naming the request headers it varies on.
// Values are those the origin was sent (the client's headers after the header rules' request operations); the value
// of Accept-Encoding is its class, one of three, so the key space stays small and the origin is sent the class's
// canonical Accept-Encoding instead of the client's: whatever it answers fits every client of the class.
import type { RequestContext } from '../context.js';
import type { HeaderOp } from '../rules/header.js';
import { stringSlot } from '../string-slot.js';

export type EncodingClass = 'br' | 'gzip' | 'identity';

/** Accept-Encoding sent to the origin on a cacheable request, per class of the client's Accept-Encoding. */
export const UPSTREAM_ACCEPT_ENCODING: Readonly<Record<EncodingClass, string>> = {
  br: 'br, gzip',
  gzip: 'gzip',
  identity: 'identity',
};

/** Request headers a response may vary on and still be stored, per response (more: not stored). */
export const VARY_MAX_NAMES = 8;
/** Longest variant part of a key (all `\n<name>=<value>` lines); a request whose variant is longer is not cached. */
export const VARIANT_MAX_LENGTH = 1024;
/**
 * Vary names that make a response unstorable: `*` (varies on anything), and the credentials a shared cache must not
 * hold nor put in its keys (a key per session cookie or per password is a private cache in a shared one).
 */
const UNSTORABLE_VARY: ReadonlySet<string> = new Set(['*', 'authorization', 'cookie', 'proxy-authorization']);

const NO_VARY: readonly string[] = Object.freeze([]);
/** The common case, shared so the hit path can recognise it by identity. */
const AE_ONLY: readonly string[] = Object.freeze(['accept-encoding']);
const AE_SUFFIX: Readonly<Record<EncodingClass, string>> = {
  br: '\naccept-encoding=br',
  gzip: '\naccept-encoding=gzip',
  identity: '\naccept-encoding=identity',
};

/** Starts the base key's line of address-scoped rule ids. */
export const RULES_LINE = '\n@rules=';

/** Slots of the memo of recent base keys (a power of two), and the longest path and query part it keeps. */
const KEY_SLOTS = 1024;
const KEY_MEMO_MAX_CHARS = 512;
const memoPath: (string | undefined)[] = new Array<string | undefined>(KEY_SLOTS).fill(undefined);
const memoHost: string[] = new Array<string>(KEY_SLOTS).fill('');
const memoQuery: string[] = new Array<string>(KEY_SLOTS).fill('');
const memoHttps: boolean[] = new Array<boolean>(KEY_SLOTS).fill(false);
const memoKey: string[] = new Array<string>(KEY_SLOTS).fill('');

/**
 * The base key: scheme, host (normalised, no port), normalised path, and the query part the cache rule keeps. Recent
 * keys are kept by path (direct-mapped, string-slot.ts): a request for one of them gets the key string made before,
 * which V8 has flattened and hashed already, instead of a new one the cache's Map lookup would flatten and hash.
 */
export function baseKey(scheme: 'http' | 'https', host: string, path: string, queryPart: string): string {
  const https = scheme === 'https';
  if (path.length > KEY_MEMO_MAX_CHARS || queryPart.length > KEY_MEMO_MAX_CHARS)
    return (https ? 'https://' : 'http://') + host + path + '?' + queryPart;
  const slot = stringSlot(path, KEY_SLOTS - 1);
  if (memoPath[slot] === path && memoHost[slot] === host && memoQuery[slot] === queryPart && memoHttps[slot] === https)
    return memoKey[slot];
  const key = (https ? 'https://' : 'http://') + host + path + '?' + queryPart;
  memoPath[slot] = path;
  memoHost[slot] = host;
  memoQuery[slot] = queryPart;
  memoHttps[slot] = https;
  memoKey[slot] = key;
  return key;
}

/** Where the host starts in a key (after `http://` or `https://`): purge prefixes are host + path, for both schemes. */
export function hostOffset(key: string): number {
  return key.charCodeAt(4) === 115 /* s */ ? 8 : 7;
}

const isSpace = (c: number) => c === 32 || c === 9;

/** Lower-case ASCII comparison of v[start, end) with a lower-case literal. */
function tokenIs(v: string, start: number, end: number, lit: string): boolean {
  if (end - start !== lit.length) return false;
  for (let i = 0; i < lit.length; i++) if ((v.charCodeAt(start + i) | 0x20) !== lit.charCodeAt(i)) return false;
  return true;
}

/**
 * The class of an Accept-Encoding value, in one scan without allocating: `br` when brotli and gzip are both
 * acceptable, else `gzip` when gzip is, else `identity` (absent, empty, or nothing we store). A coding is acceptable
 * when listed (or covered by `*`) with a q-value other than 0.
 */
export function encodingClass(v: string | undefined): EncodingClass {
  if (v === undefined || v.length === 0) return 'identity';
  // Clients of one browser send one value: the last one classed is remembered (a compare instead of a parse).
  if (v === lastValue) return lastClass;
  const cls = parseEncodingClass(v);
  lastValue = v;
  lastClass = cls;
  return cls;
}

let lastValue = '';
let lastClass: EncodingClass = 'identity';

function parseEncodingClass(v: string): EncodingClass {
  // -1 not listed, 0 listed with q=0, 1 listed and acceptable
  let br = -1;
  let gzip = -1;
  let star = -1;
  const n = v.length;
  let i = 0;
  while (i < n) {
    let c = v.charCodeAt(i);
    if (c === 44 /* , */ || isSpace(c)) {
      i++;
      continue;
    }
    const start = i;
    while (i < n && (c = v.charCodeAt(i)) !== 44 && c !== 59 /* ; */ && !isSpace(c)) i++;
    const end = i;
    let acceptable = 1;
    // Parameters up to the next comma: only q matters.
    while (i < n && v.charCodeAt(i) !== 44) {
      if (v.charCodeAt(i) !== 59) {
        i++;
        continue;
      }
      i++;
      while (i < n && isSpace(v.charCodeAt(i))) i++;
      if (i + 1 < n && (v.charCodeAt(i) | 0x20) === 113 /* q */ && v.charCodeAt(i + 1) === 61 /* = */) {
        i += 2;
        // q=0, q=0.0, q=0.000: every character a 0 or a dot.
        let zero = true;
        let any = false;
        while (i < n && (c = v.charCodeAt(i)) !== 44 && c !== 59 && !isSpace(c)) {
          if (c !== 48 && c !== 46) zero = false;
          any = true;
          i++;
        }
        acceptable = any && zero ? 0 : 1;
      }
    }
    if (tokenIs(v, start, end, 'br')) br = acceptable;
    else if (tokenIs(v, start, end, 'gzip') || tokenIs(v, start, end, 'x-gzip')) gzip = gzip === 1 ? 1 : acceptable;
    else if (end - start === 1 && v.charCodeAt(start) === 42 /* * */) star = acceptable;
  }
  if (br === -1) br = star === 1 ? 1 : 0;
  if (gzip === -1) gzip = star === 1 ? 1 : 0;
  return gzip === 1 ? (br === 1 ? 'br' : 'gzip') : 'identity';
}

/** Whether a body in `coding` (the response's Content-Encoding, lower case) may be served to every client of `cls`. */
export function codingFits(coding: string | undefined, cls: EncodingClass): boolean {
  if (coding === undefined || coding === '' || coding === 'identity') return true;
  if (coding === 'gzip' || coding === 'x-gzip') return cls !== 'identity';
  if (coding === 'br') return cls === 'br';
  return false;
}

/**
 * The request headers a response varies on: lower case, sorted, unique; Accept-Encoding added when the body has a
 * Content-Encoding. `null`: must not be stored (`Vary: *`, a credential header, more than VARY_MAX_NAMES names or a
 * name longer than 64 characters).
 */
export function varyNames(vary: string | string[] | undefined, encoded: boolean): readonly string[] | null {
  if (vary === undefined) return encoded ? AE_ONLY : NO_VARY;
  const names: string[] = encoded ? ['accept-encoding'] : [];
  for (const line of typeof vary === 'string' ? [vary] : vary) {
    for (const raw of line.split(',')) {
      const name = raw.trim().toLowerCase();
      if (name === '') continue;
      if (UNSTORABLE_VARY.has(name) || name.length > 64) return null;
      if (!names.includes(name)) names.push(name);
      if (names.length > VARY_MAX_NAMES) return null;
    }
  }
  if (names.length === 0) return NO_VARY;
  if (names.length === 1 && names[0] === 'accept-encoding') return AE_ONLY;
  return Object.freeze(names.sort());
}

/**
 * The value of request header `name` as the origin is sent it: the client's (repeated headers joined with `, `), then
 * the header rules' request operations in order; the forwarding headers the edge sets from the connection.
 */
export function upstreamValue(ctx: RequestContext, ops: readonly HeaderOp[], name: string): string | undefined {
  switch (name) {
    case 'host':
    case 'x-forwarded-host':
      return ctx.host;
    case 'x-forwarded-for':
    case 'x-real-ip':
      return ctx.peer.text;
    case 'x-forwarded-proto':
      return ctx.scheme;
  }
  let v: string | undefined;
  const headers = ctx.headers;
  for (let i = 0; i < headers.length; i++)
    if (headers[i][0] === name) v = v === undefined ? headers[i][1] : `${v}, ${headers[i][1]}`;
  for (let i = 0; i < ops.length; i++) {
    const o = ops[i];
    if (o.name !== name) continue;
    if (o.op === 'remove') v = undefined;
    else if (o.op === 'set' || v === undefined) v = o.value;
    else v = `${v}, ${o.value}`;
  }
  return v;
}

/** The request's Accept-Encoding class, from the value the origin would be sent. */
export function requestEncodingClass(ctx: RequestContext, ops: readonly HeaderOp[]): EncodingClass {
  return encodingClass(ops.length === 0 ? ctx.header('accept-encoding') : upstreamValue(ctx, ops, 'accept-encoding'));
}

/**
 * The variant part of the key for this request and the names a response varies on, or undefined when it would be
 * longer than VARIANT_MAX_LENGTH (that request is neither served from nor stored in the cache).
 */
export function variantSuffix(
  names: readonly string[],
  ctx: RequestContext,
  ops: readonly HeaderOp[],
): string | undefined {
  if (names === AE_ONLY) return AE_SUFFIX[requestEncodingClass(ctx, ops)];
  let s = '';
  for (let i = 0; i < names.length; i++) {
    const name = names[i];
    const value =
      name === 'accept-encoding' ? requestEncodingClass(ctx, ops) : (upstreamValue(ctx, ops, name)?.trim() ?? '');
    s += `\n${name}=${value}`;
    if (s.length > VARIANT_MAX_LENGTH) return undefined;
  }
  return s;
}

/** Whether the origin is sent an Authorization header (the client's, or one a header rule sets). */
export function carriesAuthorization(ctx: RequestContext, ops: readonly HeaderOp[]): boolean {
  return (ops.length === 0 ? ctx.header('authorization') : upstreamValue(ctx, ops, 'authorization')) !== undefined;
}

/** A copy of a request header list with Accept-Encoding replaced by `value` (for the origin, on a cache miss). */
export function withAcceptEncoding(headers: readonly [string, string][], value: string): [string, string][] {
  const out: [string, string][] = [];
  for (const h of headers) if (h[0] !== 'accept-encoding') out.push(h);
  out.push(['accept-encoding', value]);
  return out;
}
