// fingerprint rules: a JA4H-style fingerprint of the HTTP request, matched against a rule's list of exact values
// (README "fingerprint"). The fingerprint is computed only when a fingerprint rule's filters accept the request, once.
//
// Format (our own code after the published JA4H description): `a_b_c_d`
//   a  method (2 letters, lower case) · version (`11`: the edge speaks HTTP/1.1) · `c`|`n` Cookie present ·
//      `r`|`n` Referer present · header count without Cookie and Referer (2 digits, at most 99) · the first
//      Accept-Language tag, letters and digits only, lower case, 4 characters padded with `0` (`0000` when absent)
//   b  first 12 hex of SHA-256 of the header names in arrival order, comma-separated, without Cookie and Referer
//   c  first 12 hex of SHA-256 of the cookie names, sorted, comma-separated (`000000000000` without cookies)
//   d  the same of the cookie `name=value` pairs, sorted
// Header names are the lower case uWS gives: values from tools that keep HTTP/1.1 case differ in part b, so take
// fingerprints from the request log (`fp`).
import { hash } from 'node:crypto';
import type { RuleBody } from '@platform/shared/match';
import type { RequestContext } from '../context.js';

/** Cookies read for parts c and d; beyond this the rest of the Cookie header is left out (bounded work). */
export const MAX_FINGERPRINT_COOKIES = 128;
/** Header names hashed for part b; the count in part a still counts every header (at most 99 shown). */
export const MAX_FINGERPRINT_HEADERS = 128;
const ZERO = '000000000000';

const hash12 = (s: string) => hash('sha256', s, 'hex').slice(0, 12);

/**
 * Parts b and c of recent header-name and cookie-name lists: most clients send the same few lists, so a fingerprint
 * costs one SHA-256 (part d, cookie values) instead of three. Bounded: emptied when full.
 */
const MEMO_MAX = 4096;
const memo = new Map<string, string>();
function memoHash12(s: string): string {
  let h = memo.get(s);
  if (h === undefined) {
    if (memo.size >= MEMO_MAX) memo.clear();
    h = hash12(s);
    memo.set(s, h);
  }
  return h;
}

function alnumLower(s: string, max: number): string {
  let out = '';
  for (let i = 0; i < s.length && out.length < max; i++) {
    let c = s.charCodeAt(i);
    if (c >= 65 && c <= 90) c += 32;
    if ((c >= 97 && c <= 122) || (c >= 48 && c <= 57)) out += String.fromCharCode(c);
    else if (c === 44 || c === 59) break; // `,` or `;` ends the first language tag
  }
  return out;
}

/** The JA4H-style fingerprint of a request (`method` any case, `headers` lower-case names in arrival order). */
export function ja4h(method: string, headers: readonly (readonly [string, string])[], version = '11'): string {
  let names = '';
  let count = 0;
  let cookie: string | undefined;
  let referer = false;
  let language = '';
  for (let i = 0; i < headers.length; i++) {
    const [k, v] = headers[i];
    if (k === 'cookie') {
      cookie = cookie === undefined ? v : `${cookie}; ${v}`;
      continue;
    }
    if (k === 'referer') {
      referer = true;
      continue;
    }
    if (count < MAX_FINGERPRINT_HEADERS) names += count === 0 ? k : `,${k}`;
    count++;
    if (k === 'accept-language' && language === '') language = alnumLower(v, 4);
  }
  const m = alnumLower(method, 2).padEnd(2, '0');
  const a =
    `${m}${version}${cookie !== undefined ? 'c' : 'n'}${referer ? 'r' : 'n'}` +
    `${String(Math.min(count, 99)).padStart(2, '0')}${language.padEnd(4, '0')}`;
  const b = count === 0 ? ZERO : memoHash12(names);
  let c = ZERO;
  let d = ZERO;
  if (cookie !== undefined) {
    const pairs = cookiePairs(cookie);
    if (pairs.length > 0) {
      pairs.sort((x, y) => (x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : x[1] < y[1] ? -1 : x[1] > y[1] ? 1 : 0));
      c = memoHash12(pairs.map((p) => p[0]).join(','));
      d = hash12(pairs.map((p) => `${p[0]}=${p[1]}`).join(','));
    }
  }
  return `${a}_${b}_${c}_${d}`;
}

/** Cookie name/value pairs (at most MAX_FINGERPRINT_COOKIES), names and values trimmed; empty names skipped. */
function cookiePairs(header: string): [string, string][] {
  const out: [string, string][] = [];
  let start = 0;
  while (start <= header.length && out.length < MAX_FINGERPRINT_COOKIES) {
    let end = header.indexOf(';', start);
    if (end < 0) end = header.length;
    const eq = header.indexOf('=', start);
    const name = (eq >= 0 && eq < end ? header.slice(start, eq) : header.slice(start, end)).trim();
    const value = eq >= 0 && eq < end ? header.slice(eq + 1, end).trim() : '';
    if (name !== '') out.push([name, value]);
    start = end + 1;
  }
  return out;
}

/** What a matching fingerprint or bot_route rule does (README "fingerprint", "bot_route"). */
export type ClientRuleKind = 'block' | 'challenge' | 'allow' | 'log' | 'route';

export interface FingerprintAction {
  kind: ClientRuleKind;
  values: ReadonlySet<string>;
}

export function compileFingerprint(f: RuleBody): FingerprintAction {
  const list = Array.isArray(f.fingerprints) ? (f.fingerprints as unknown[]) : [];
  return {
    kind: (f.action as ClientRuleKind | undefined) ?? 'block',
    values: new Set(list.filter((v): v is string => typeof v === 'string').map((v) => v.toLowerCase())),
  };
}

/** The request's fingerprint, computed on first use and kept on the context (and in its log record). */
export function fingerprintOf(ctx: RequestContext): string {
  if (ctx.fingerprint === '') ctx.fingerprint = ja4h(ctx.method, ctx.headers);
  return ctx.fingerprint;
}
