// The origin client's response-head parser: strict HTTP/1.1 (RFC 9112) over the raw bytes. It reads only the framing
// headers (Content-Length, Transfer-Encoding, Connection, Keep-Alive) and hands every header on as [name, value]
// strings, sliced from one latin1 string of the head (one conversion per head, not one per header). Anything a smuggling attack or a confused origin could use is refused rather than
// guessed at: bare LF, a CR alone, obs-fold, whitespace before the colon, control characters, duplicate or
// malformed Content-Length, any Transfer-Encoding but a single `chunked`, both framings at once, an oversized head.
import { OriginProtocolError } from './errors.js';

/** Most bytes of one response head (status line, headers, the empty line), as Node's and undici's default. */
export const MAX_HEAD_BYTES = 16 * 1024;
/** Most header lines in one head. */
export const MAX_HEADER_LINES = 256;

const CR = 13;
const LF = 10;
const SP = 32;
const HTAB = 9;
const COLON = 58;

/** RFC 9110 tchar. */
const TOKEN = new Uint8Array(256);
for (const c of "!#$%&'*+-.^_`|~") TOKEN[c.charCodeAt(0)] = 1;
for (let c = 48; c <= 57; c++) TOKEN[c] = 1;
for (let c = 65; c <= 90; c++) TOKEN[c] = 1;
for (let c = 97; c <= 122; c++) TOKEN[c] = 1;

/** field-vchar, SP and HTAB (RFC 9110 §5.5): every byte but controls and DEL. */
const FIELD = new Uint8Array(256);
for (let c = 32; c < 256; c++) FIELD[c] = c === 127 ? 0 : 1;
FIELD[HTAB] = 1;

/** A parsed response head; `raw` holds every header as it came ([name, value, …], latin1, names as sent). */
export interface ResponseHead {
  status: number;
  /** 0 for HTTP/1.0, 1 for HTTP/1.1. */
  minor: number;
  reason: string;
  raw: string[];
  /** Content-Length, -1 when absent. */
  contentLength: number;
  /** Transfer-Encoding: chunked. */
  chunked: boolean;
  /** Connection: close (or keep-alive denied otherwise): the connection ends after this answer. */
  close: boolean;
  /** Keep-Alive: timeout=N in ms, -1 when absent. */
  keepAliveMs: number;
  /** Keep-Alive: max=N, -1 when absent. */
  keepAliveMax: number;
  /** Bytes of the head, from the status line to the empty line included. */
  length: number;
}

/** Lower-cases an ASCII letter byte; tchars other than letters are unchanged (no tchar aliases a letter). */
function eqName(buf: Buffer, start: number, end: number, lower: string): boolean {
  if (end - start !== lower.length) return false;
  for (let i = 0; i < lower.length; i++) if ((buf[start + i] | 0x20) !== lower.charCodeAt(i)) return false;
  return true;
}

/** Index of the LF ending the head (the second of CRLF CRLF) in buf[from, end), -1 when not there yet. */
export function findHeadEnd(buf: Buffer, from: number, end: number): number {
  const i = buf.indexOf('\r\n\r\n', from);
  return i >= 0 && i + 4 <= end ? i + 3 : -1;
}

/**
 * Refuses early what can never become a valid head: a bare LF (a head ended by LF LF would otherwise wait for
 * MAX_HEAD_BYTES) and a head past MAX_HEAD_BYTES. Called on an incomplete head buf[start, end), looking for LF
 * from `from` on (what came before was checked already).
 */
export function checkPartialHead(buf: Buffer, start: number, from: number, end: number): void {
  if (end - start > MAX_HEAD_BYTES) throw new OriginProtocolError('response head too large');
  let i = buf.indexOf(LF, from);
  while (i >= 0 && i < end) {
    if (i === start || buf[i - 1] !== CR) throw new OriginProtocolError('bare LF in the response head');
    i = buf.indexOf(LF, i + 1);
  }
}

function parseDecimal(buf: Buffer, start: number, end: number): number {
  if (end <= start || end - start > 15) return -1;
  let n = 0;
  for (let i = start; i < end; i++) {
    const d = buf[i] - 48;
    if (d < 0 || d > 9) return -1;
    n = n * 10 + d;
  }
  return n;
}

/** Reads `timeout=` and `max=` of a Keep-Alive value (other parameters ignored). */
function parseKeepAlive(value: string, head: ResponseHead): void {
  for (const part of value.split(',')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    const name = part.slice(0, eq).trim().toLowerCase();
    const n = Number(part.slice(eq + 1).trim());
    if (!Number.isInteger(n) || n < 0) continue;
    if (name === 'timeout') head.keepAliveMs = n * 1000;
    else if (name === 'max') head.keepAliveMax = n;
  }
}

/**
 * Parses the head in buf[start, headEnd] (headEnd: the final LF, from findHeadEnd). Throws OriginProtocolError for
 * anything malformed or ambiguous.
 */
export function parseHead(buf: Buffer, start: number, headEnd: number): ResponseHead {
  if (headEnd + 1 - start > MAX_HEAD_BYTES) throw new OriginProtocolError('response head too large');
  // Status line: HTTP/1.x SP 3DIGIT [SP reason] CRLF
  if (
    headEnd - start < 14 ||
    buf[start] !== 72 || // H
    buf[start + 1] !== 84 || // T
    buf[start + 2] !== 84 || // T
    buf[start + 3] !== 80 || // P
    buf[start + 4] !== 47 || // /
    buf[start + 5] !== 49 || // 1
    buf[start + 6] !== 46 || // .
    (buf[start + 7] !== 48 && buf[start + 7] !== 49) ||
    buf[start + 8] !== SP
  )
    throw new OriginProtocolError('malformed status line');
  const minor = buf[start + 7] - 48;
  const status = parseDecimal(buf, start + 9, start + 12);
  if (status < 100 || status > 599) throw new OriginProtocolError('malformed status code');
  let lf = buf.indexOf(LF, start);
  if (buf[lf - 1] !== CR) throw new OriginProtocolError('bare LF in the response head');
  let reason = '';
  if (lf - 1 > start + 12) {
    if (buf[start + 12] !== SP) throw new OriginProtocolError('malformed status line');
    for (let i = start + 13; i < lf - 1; i++)
      if (FIELD[buf[i]] === 0) throw new OriginProtocolError('control character in the status line');
    reason = buf.toString('latin1', start + 13, lf - 1);
  }
  const head: ResponseHead = {
    status,
    minor,
    reason,
    raw: [],
    contentLength: -1,
    chunked: false,
    close: minor === 0,
    keepAliveMs: -1,
    keepAliveMax: -1,
    length: headEnd + 1 - start,
  };
  // The head as one latin1 string: headers are slices of it (V8 shares the characters).
  const text = buf.toString('latin1', start, headEnd + 1);
  let lines = 0;
  let sawLength = false;
  let sawEncoding = false;
  for (;;) {
    const lineStart = lf + 1;
    lf = buf.indexOf(LF, lineStart);
    if (lf < 0 || lf > headEnd) throw new OriginProtocolError('malformed response head');
    if (buf[lf - 1] !== CR || lf - 1 < lineStart) throw new OriginProtocolError('bare LF in the response head');
    const lineEnd = lf - 1; // the CR
    if (lineEnd === lineStart) break; // the empty line
    if (++lines > MAX_HEADER_LINES) throw new OriginProtocolError('too many response headers');
    const first = buf[lineStart];
    if (first === SP || first === HTAB) throw new OriginProtocolError('obs-fold in the response head');
    let colon = lineStart;
    while (colon < lineEnd && TOKEN[buf[colon]] === 1) colon++;
    if (colon === lineStart || colon === lineEnd || buf[colon] !== COLON)
      throw new OriginProtocolError('malformed header name');
    let vs = colon + 1;
    let ve = lineEnd;
    for (let i = vs; i < ve; i++)
      if (FIELD[buf[i]] === 0) throw new OriginProtocolError('control character in a header');
    while (vs < ve && (buf[vs] === SP || buf[vs] === HTAB)) vs++;
    while (ve > vs && (buf[ve - 1] === SP || buf[ve - 1] === HTAB)) ve--;
    head.raw.push(text.slice(lineStart - start, colon - start), text.slice(vs - start, ve - start));
    const nameLength = colon - lineStart;
    if (nameLength === 14 && eqName(buf, lineStart, colon, 'content-length')) {
      if (sawLength) throw new OriginProtocolError('more than one Content-Length');
      sawLength = true;
      head.contentLength = parseDecimal(buf, vs, ve);
      if (head.contentLength < 0) throw new OriginProtocolError('malformed Content-Length');
    } else if (nameLength === 17 && eqName(buf, lineStart, colon, 'transfer-encoding')) {
      if (sawEncoding) throw new OriginProtocolError('more than one Transfer-Encoding');
      sawEncoding = true;
      if (!eqName(buf, vs, ve, 'chunked')) throw new OriginProtocolError('Transfer-Encoding other than chunked');
      head.chunked = true;
    } else if (nameLength === 10 && eqName(buf, lineStart, colon, 'connection')) {
      // HTTP/1.0 answers always close (even with keep-alive): only `close` matters here.
      for (const token of text.slice(vs - start, ve - start).split(','))
        if (token.trim().toLowerCase() === 'close') head.close = true;
    } else if (nameLength === 10 && eqName(buf, lineStart, colon, 'keep-alive')) {
      parseKeepAlive(text.slice(vs - start, ve - start), head);
    }
  }
  if (lf !== headEnd) throw new OriginProtocolError('malformed response head');
  if (head.chunked && sawLength) throw new OriginProtocolError('both Content-Length and Transfer-Encoding');
  if (head.chunked && minor === 0) throw new OriginProtocolError('Transfer-Encoding in an HTTP/1.0 response');
  return head;
}
