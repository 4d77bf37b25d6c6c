// The challenge (captcha rules, the record `captcha` flag, rate_limit's captcha action, Under Attack Mode): a page
// served by the edge itself, no third party. It carries a signed nonce and a difficulty; the browser finds a counter
// whose SHA-256 of `<nonce>:<counter>` starts with that many zero bits and posts it to CHALLENGE_PATH; the edge checks
// the signature, the work and that the nonce was not used before, then sets a clearance cookie and sends the visitor
// back. The cookie is an HMAC of (expiry, client address, host) under the challenge secret: it is valid only from the
// address that solved it, only on the host it was solved for, until it expires. Nothing is stored per visitor but the
// used nonces (bounded). No JavaScript: the page shows the nonce and a command that computes the answer, and a form.
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { RuleBody } from '@platform/shared/match';
import type { SplitPage } from '@platform/shared/config';
import { escapeHtml, fillPage } from '../custom-pages.js';

/** Where the page posts its answer (on every proxied host; never sent to the origin). */
export const CHALLENGE_PATH = '/.well-known/edge-challenge';
export const CLEARANCE_COOKIE = 'edge_clearance';
/** Leading zero bits asked of SHA-256: about 2^16 hashes, well under a second in a browser, one hash to check. */
export const CHALLENGE_DIFFICULTY = 16;
/** Seconds a page's nonce may be answered. */
export const NONCE_TTL_S = 300;
/** Seconds a clearance lasts when no captcha rule sets pass_ttl_s (record flag, Under Attack, rate_limit). */
export const DEFAULT_PASS_TTL_S = 1800;
/** Largest answer body read. */
export const MAX_ANSWER_BYTES = 4096;
/** Used nonces remembered (until they expire); beyond it answers are refused until the oldest expire. */
const MAX_USED = 100_000;

export interface CaptchaAction {
  passTtlS: number;
}

export function compileCaptcha(f: RuleBody): CaptchaAction {
  return { passTtlS: Number(f.pass_ttl_s ?? DEFAULT_PASS_TTL_S) };
}

let secret: Buffer = randomBytes(32);

/**
 * The key of nonces and cookies. Nodes given the same EDGE_CHALLENGE_SECRET accept each other's cookies; otherwise it
 * is derived from the node token, so the workers of one node agree and another node asks again.
 */
export function configureChallengeSecret(configured: string | undefined, nodeToken: string): void {
  secret = deriveEdgeKey('edge-challenge-v1', configured, nodeToken);
  verifiedValue.fill(undefined);
}

/** The key of one kind of the edge's signed values (challenge cookies, SSO sessions), from the shared secret or the node token. */
export function deriveEdgeKey(purpose: string, configured: string | undefined, nodeToken: string): Buffer {
  return createHmac('sha256', configured ?? nodeToken)
    .update(purpose)
    .digest();
}

/** The 32-character tag the edge's signed values carry. */
export function macTag(key: Buffer, text: string): string {
  return createHmac('sha256', key).update(text).digest('base64url').slice(0, 32);
}

function mac(text: string): string {
  return macTag(secret, text);
}

function sameMac(a: string, b: string): boolean {
  return a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));
}

/** A nonce for `peer` on `host`: `<expiry s>.<pass ttl s>.<random>.<mac>`. */
export function issueNonce(peer: string, host: string, passTtlS: number, now = Date.now()): string {
  const exp = Math.floor(now / 1000) + NONCE_TTL_S;
  const rand = randomBytes(12).toString('base64url');
  const body = `${exp}.${passTtlS}.${rand}`;
  return `${body}.${mac(`n|${body}|${CHALLENGE_DIFFICULTY}|${peer}|${host}`)}`;
}

/** Leading zero bits of SHA-256(`nonce:solution`) reach `bits`. */
export function workDone(nonce: string, solution: string, bits: number): boolean {
  const d = createHash('sha256').update(`${nonce}:${solution}`).digest();
  let i = 0;
  for (; bits >= 8; bits -= 8) if (d[i++] !== 0) return false;
  return bits === 0 || d[i] >> (8 - bits) === 0;
}

/** Used nonces (their random part) → expiry ms; Map order is issue order, so the oldest expire first. */
const used = new Map<string, number>();

export type AnswerVerdict =
  { ok: true; cookie: string; passTtlS: number } | { ok: false; status: number; reason: string };

/** Checks an answer (nonce and solution) from `peer` on `host`; a good one uses the nonce up and returns the cookie. */
export function checkAnswer(
  nonce: string,
  solution: string,
  peer: string,
  host: string,
  now = Date.now(),
): AnswerVerdict {
  const parts = nonce.split('.', 5);
  if (parts.length !== 4 || !/^\d{1,16}$/.test(solution)) return { ok: false, status: 400, reason: 'malformed answer' };
  const [expS, ttlS, rand, sig] = parts;
  const body = `${expS}.${ttlS}.${rand}`;
  if (!sameMac(sig, mac(`n|${body}|${CHALLENGE_DIFFICULTY}|${peer}|${host}`)))
    return { ok: false, status: 403, reason: 'challenge not issued to this client and host' };
  const expMs = Number(expS) * 1000;
  if (!(expMs > now)) return { ok: false, status: 403, reason: 'challenge expired' };
  if (!workDone(nonce, solution, CHALLENGE_DIFFICULTY)) return { ok: false, status: 403, reason: 'wrong answer' };
  for (const [k, exp] of used) {
    if (exp > now) break;
    used.delete(k);
  }
  if (used.has(rand)) return { ok: false, status: 403, reason: 'challenge already answered' };
  if (used.size >= MAX_USED) return { ok: false, status: 503, reason: 'too many answers; retry later' };
  used.set(rand, expMs);
  const passTtlS = Math.max(60, Math.min(86400, Number(ttlS) || DEFAULT_PASS_TTL_S));
  return { ok: true, cookie: clearance(peer, host, passTtlS, now), passTtlS };
}

/** A clearance cookie value: `<expiry s>.<mac of expiry, address, host>`. */
export function clearance(peer: string, host: string, ttlS: number, now = Date.now()): string {
  const exp = Math.floor(now / 1000) + ttlS;
  return `${exp}.${mac(`c|${exp}|${peer}|${host}`)}`;
}

/** Whether the Cookie header holds a clearance valid for `peer` on `host` now. */
export function hasClearance(cookieHeader: string | undefined, peer: string, host: string, now = Date.now()): boolean {
  if (cookieHeader === undefined) return false;
  let at = cookieHeader.indexOf(`${CLEARANCE_COOKIE}=`);
  while (at >= 0) {
    if (at === 0 || cookieHeader[at - 1] === ' ' || cookieHeader[at - 1] === ';') {
      const start = at + CLEARANCE_COOKIE.length + 1;
      let end = cookieHeader.indexOf(';', start);
      if (end < 0) end = cookieHeader.length;
      if (validClearance(cookieHeader.slice(start, end).trim(), peer, host, now)) return true;
    }
    at = cookieHeader.indexOf(`${CLEARANCE_COOKIE}=`, at + 1);
  }
  return false;
}

// Clearances verified lately, so a cleared client under attack costs a few string compares rather than an HMAC per
// request: a fixed table indexed by a hash of the value; a hit needs the same value, address and host (what the MAC
// covered); the expiry is part of the value and checked before the table.
const VERIFIED_SLOTS = 16384;
const verifiedValue: (string | undefined)[] = new Array<string | undefined>(VERIFIED_SLOTS);
const verifiedPeer: (string | undefined)[] = new Array<string | undefined>(VERIFIED_SLOTS);
const verifiedHost: (string | undefined)[] = new Array<string | undefined>(VERIFIED_SLOTS);

/** The slot of a cookie value in a table of `slots` (a power of two) entries: FNV-1a of its UTF-16 code units. */
export function slotOf(value: string, slots = VERIFIED_SLOTS): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < value.length; i++) h = Math.imul(h ^ value.charCodeAt(i), 0x01000193);
  return (h >>> 0) & (slots - 1);
}

function validClearance(value: string, peer: string, host: string, now: number): boolean {
  const dot = value.indexOf('.');
  if (dot < 1 || dot > 16 || value.length > 64) return false;
  const exp = value.slice(0, dot);
  if (!/^\d+$/.test(exp)) return false;
  const until = Number(exp) * 1000;
  if (until <= now) return false;
  const slot = slotOf(value);
  if (verifiedValue[slot] === value && verifiedPeer[slot] === peer && verifiedHost[slot] === host) return true;
  if (!sameMac(value.slice(dot + 1), mac(`c|${exp}|${peer}|${host}`))) return false;
  verifiedValue[slot] = value;
  verifiedPeer[slot] = peer;
  verifiedHost[slot] = host;
  return true;
}

/**
 * A local path to go back to: starts with one `/`, no scheme or host, bounded; otherwise `/`. No control character at
 * all: browsers drop tabs and line breaks from a Location, so `/<TAB>/evil.example` would become `//evil.example`.
 */
export function safeReturn(v: string | undefined): string {
  // eslint-disable-next-line no-control-regex
  if (!v || v.length > 2048 || !v.startsWith('/') || /^\/[/\\]/.test(v) || /[\x00-\x1f\x7f]/.test(v)) return '/';
  return v;
}

/**
 * The challenge page for a request to `returnTo` (path and query): the edge's own, or the domain's managed_challenge
 * page with the challenge box in its placeholder.
 */
export function challengePage(nonce: string, returnTo: string, custom?: SplitPage): string {
  const box = challengeBox(nonce, returnTo);
  if (custom) return fillPage(custom, box);
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<meta name="robots" content="noindex"><title>Checking your browser</title></head>
<body style="font-family:system-ui,sans-serif;max-width:40em;margin:3em auto;padding:0 1em">
<h1>Checking your browser</h1>
${box}
</body></html>
`;
}

/** What the challenge needs on a page: the status line, the answer form and the script that solves it. */
export function challengeBox(nonce: string, returnTo: string): string {
  const n = escapeHtml(nonce);
  const r = escapeHtml(safeReturn(returnTo));
  return `<p id="status" role="status" aria-live="polite">This site asks your browser to do a short computation before you
continue. It takes a second or two and needs no puzzle.</p>
<form id="answer" method="post" action="${CHALLENGE_PATH}">
<input type="hidden" name="nonce" value="${n}"><input type="hidden" name="return" value="${r}">
<noscript><p>JavaScript is off. Compute the answer yourself: the smallest counter for which
SHA-256 of <code>${n}:COUNTER</code> starts with ${CHALLENGE_DIFFICULTY} zero bits, for example with<br>
<code>node -e "const c=require('crypto');for(let i=0;;i++){const d=c.createHash('sha256').update('${n}:'+i).digest();if(d[0]===0&&d[1]===0){console.log(i);break}}"</code></p></noscript>
<label for="solution">Answer</label> <input id="solution" name="solution" inputmode="numeric" autocomplete="off">
<button type="submit">Continue</button>
</form>
<script>
// SHA-256 written out: crypto.subtle exists only on HTTPS pages, and the challenge is served over HTTP too.
(() => {
  const K = [], H0 = [];
  for (let n = 2, c = 0; c < 64; n++) {
    let prime = true;
    for (let d = 2; d * d <= n; d++) if (n % d === 0) { prime = false; break; }
    if (!prime) continue;
    if (c < 8) H0[c] = ((Math.sqrt(n) % 1) * 4294967296) | 0;
    K[c++] = ((Math.cbrt(n) % 1) * 4294967296) | 0;
  }
  const ror = (x, n) => (x >>> n) | (x << (32 - n));
  const W = new Int32Array(64);
  const first = (s) => {
    const len = s.length, size = ((len + 72) >> 6) << 6, b = new Uint8Array(size);
    for (let i = 0; i < len; i++) b[i] = s.charCodeAt(i);
    b[len] = 0x80;
    const v = new DataView(b.buffer);
    v.setUint32(size - 4, len * 8);
    const h = H0.slice();
    for (let o = 0; o < size; o += 64) {
      for (let t = 0; t < 16; t++) W[t] = v.getInt32(o + 4 * t);
      for (let t = 16; t < 64; t++) {
        const x = W[t - 15], y = W[t - 2];
        W[t] = (W[t - 16] + (ror(x, 7) ^ ror(x, 18) ^ (x >>> 3)) + W[t - 7] + (ror(y, 17) ^ ror(y, 19) ^ (y >>> 10))) | 0;
      }
      let [a, bb, c, d, e, f, g, hh] = h;
      for (let t = 0; t < 64; t++) {
        const t1 = (hh + (ror(e, 6) ^ ror(e, 11) ^ ror(e, 25)) + ((e & f) ^ (~e & g)) + K[t] + W[t]) | 0;
        const t2 = ((ror(a, 2) ^ ror(a, 13) ^ ror(a, 22)) + ((a & bb) ^ (a & c) ^ (bb & c))) | 0;
        hh = g; g = f; f = e; e = (d + t1) | 0; d = c; c = bb; bb = a; a = (t1 + t2) | 0;
      }
      h[0] = (h[0] + a) | 0; h[1] = (h[1] + bb) | 0; h[2] = (h[2] + c) | 0; h[3] = (h[3] + d) | 0;
      h[4] = (h[4] + e) | 0; h[5] = (h[5] + f) | 0; h[6] = (h[6] + g) | 0; h[7] = (h[7] + hh) | 0;
    }
    return h[0] >>> 0;
  };
  const nonce = ${JSON.stringify(nonce)}, bits = ${CHALLENGE_DIFFICULTY};
  for (let i = 0; ; i++) {
    if (first(nonce + ':' + i) >>> (32 - bits) === 0) {
      document.getElementById('solution').value = String(i);
      document.getElementById('status').textContent = 'Done, continuing…';
      document.getElementById('answer').submit();
      return;
    }
  }
})();
</script>`;
}

/** Reads `nonce`, `solution` and `return` from an application/x-www-form-urlencoded (or query) string. */
export function parseAnswer(form: string): { nonce: string; solution: string; returnTo: string } {
  const p = new URLSearchParams(form);
  return { nonce: p.get('nonce') ?? '', solution: p.get('solution') ?? '', returnTo: p.get('return') ?? '/' };
}
