// The WAF engine: a request's parts (path, query arguments, cookies, inspected headers, a form, JSON or multipart
// body) are decoded and folded (decode.ts), each value is read by the detectors of the attack classes, every
// finding is a rule of the set below with a severity, and the request's anomaly score (the sum of the severities
// of the distinct rules that matched, as CRS scores) is compared with the rule's threshold. Exclusions drop findings
// by rule id or class, by path and by argument. Configuration is compiled once per rule version (compileWaf);
// nothing is parsed or built per request beyond the values themselves.
import { classOf, WAF_RULES, type WildcardPattern } from '@platform/shared/match';
import { fold, normalise, plainToken, urlDecode } from './decode.js';
import { detectLfi, detectRce, detectRfi, restrictedPath, type Finding } from './inject.js';
import { detectSqli } from './sqli.js';
import { detectXss } from './xss.js';

/** Severities as CRS weighs them: one critical finding reaches the default threshold of 5. */
export const SEVERITY = { critical: 5, error: 4, warning: 3, notice: 2 } as const;
export const DEFAULT_THRESHOLD = 5;
/** Body bytes inspected (ModSecurity's SecRequestBodyNoFilesLimit default): beyond it, the rest is passed unread. */
export const MAX_BODY_BYTES = 128 * 1024;
/** Arguments read per request (query, body and cookies together); more is itself a finding (920380). */
export const MAX_ARGS = 512;
/** Characters of matched data kept in an event. */
export const EVENT_DATA_CHARS = 64;
/** Events recorded per request (the score counts them all). */
export const MAX_EVENTS = 16;

/** An exclusion compiled: findings of `rules` (ids, id prefixes, class names; null: all) on `targets` (null: all), for `paths`. */
export interface CompiledExclusion {
  rules: string[] | null;
  paths: WildcardPattern[] | null;
  targets: Set<string> | null;
}

export interface WafConfig {
  paranoia: number;
  threshold: number;
  /** Rule ids, id prefixes and class names switched off. */
  excluded: string[];
  exclusions: CompiledExclusion[];
  inspectBody: boolean;
}

export interface WafEventRecord {
  /** Rule id of the set (`942100`). */
  rule: string;
  /** 1: request line and headers; 2: body. */
  phase: 1 | 2;
  /** Where: `path`, `args:<name>`, `args_names`, `cookie:<name>`, `header:<name>`, `body`. */
  target: string;
  /** The matched value around the finding, truncated. */
  data: string;
}

export interface WafVerdict {
  score: number;
  events: WafEventRecord[];
}

/** What the engine reads of a request; the body when one was read (bounded by the caller). */
export interface WafRequest {
  method: string;
  /** The path as received (undecoded, not normalised): encoding anomalies. */
  rawPath: string;
  /** The normalised path (what the origin is sent; detectors, exclusions). */
  path: string;
  query: string;
  headers: readonly (readonly [string, string])[];
  body: Buffer | null;
}

const ALLOWED_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);
const ALLOWED_CHARSETS = new Set(['utf-8', 'utf8', 'iso-8859-1', 'iso-8859-15', 'windows-1252', 'us-ascii']);
const SCANNERS = [
  'sqlmap',
  'nikto',
  'nmap',
  'masscan',
  'nessus',
  'acunetix',
  'netsparker',
  'dirbuster',
  'gobuster',
  'dirb/',
  'wpscan',
  'w3af',
  'havij',
  'zgrab',
  'nuclei',
  'openvas',
  'arachni',
  'jorgee',
  'zmeu',
  'fimap',
  'commix',
  'xsstrike',
  'wfuzz',
  'ffuf',
  'feroxbuster',
  'skipfish',
  'webinspect',
  'appscan',
  'paros',
  'morfeus',
  'grabber',
  'n-stealth',
  'bsqlbf',
  'absinthe',
  'brutus',
];
/** Headers read by the SQLi and XSS detectors (CRS reads User-Agent and Referer); all headers get the JNDI/Shellshock look. */
const INSPECTED_HEADERS = new Set([
  'user-agent',
  'referer',
  'x-forwarded-host',
  'x-api-version',
  'x-original-url',
  'x-rewrite-url',
]);
const SKIPPED_HEADERS = new Set(['cookie', 'authorization', 'content-length', 'host', 'accept-encoding', 'connection']);

/** Whether an exclusion names `id` (an id, a prefix of ids, or a class name). */
function names(list: readonly string[], id: string): boolean {
  for (const e of list) if (e === id || (e.length < id.length && id.startsWith(e)) || e === classOf(id)) return true;
  return false;
}

/** One evaluation: findings collected, scored once per rule, events kept (bounded). */
export class Evaluation {
  readonly matched = new Set<string>();
  /** Set by evaluateHead for evaluateBody. */
  contentType = '';
  count = { n: 0 };
  score = 0;
  readonly events: WafEventRecord[] = [];
  private readonly active: CompiledExclusion[];
  constructor(
    readonly cfg: WafConfig,
    path: string,
  ) {
    this.active = cfg.exclusions.filter((e) => e.paths === null || e.paths.some((p) => p.test(path)));
  }

  add(id: string, phase: 1 | 2, target: string, value: string, at: number): void {
    const rule = WAF_RULES[id];
    if (rule === undefined || rule[0] > this.cfg.paranoia) return;
    if (this.cfg.excluded.length > 0 && names(this.cfg.excluded, id)) return;
    for (const e of this.active) {
      if (e.rules !== null && !names(e.rules, id)) continue;
      if (e.targets !== null && !e.targets.has(targetName(target))) continue;
      return;
    }
    if (!this.matched.has(id)) {
      this.matched.add(id);
      this.score += rule[1];
    }
    if (this.events.length < MAX_EVENTS && !this.events.some((e) => e.rule === id && e.target === target))
      this.events.push({ rule: id, phase, target, data: excerpt(value, at) });
  }

  /** Whether a target is wholly excluded (every rule): its value need not be read. */
  skipped(target: string): boolean {
    if (this.active.length === 0) return false;
    const name = targetName(target);
    for (const e of this.active) if (e.rules === null && e.targets !== null && e.targets.has(name)) return true;
    return false;
  }
}

/** `args:Q` → `q`: exclusions name arguments bare, cookies and headers with their prefix, all lower case (as stored). */
function targetName(target: string): string {
  return (target.startsWith('args:') ? target.slice(5) : target).toLowerCase();
}

function excerpt(value: string, at: number): string {
  const from = Math.max(0, Math.min(at, value.length) - 8);
  return value.slice(from, from + EVENT_DATA_CHARS);
}

const findings: Finding[] = [];

/** Runs every detector on one folded value into `findings` (cleared first). */
function detect(pl: number, text: string, kind: 'value' | 'path' | 'header'): void {
  findings.length = 0;
  detectSqli(text, pl, findings);
  detectXss(text, pl, findings);
  detectLfi(text, pl, kind === 'path', findings);
  if (kind !== 'path') {
    detectRfi(text, pl, findings);
    detectRce(text, pl, findings);
  }
}

/** Runs every detector on one folded value; findings become events of `target`. */
function inspect(ev: Evaluation, phase: 1 | 2, target: string, text: string, kind: 'value' | 'path' | 'header'): void {
  detect(ev.cfg.paranoia, text, kind);
  for (const f of findings) if (kind === 'value' || f.id !== '932120') ev.add(f.id, phase, target, text, f.at);
}

/**
 * What the detectors found in an inspected header's value (User-Agent, Referer, …), by paranoia, name and value: the
 * same few user agents come on most requests. Bounded (cleared when full), so a client sending a new value each time
 * only misses the cache; detection is a pure function of the value, so a hit is what a fresh reading would find.
 */
const HEADER_CACHE_MAX = 4096;
const headerCache = new Map<string, { text: string; found: Finding[] }>();

function inspectHeader(ev: Evaluation, name: string, target: string, value: string): void {
  const key = `${ev.cfg.paranoia}${name}\0${value}`;
  let hit = headerCache.get(key);
  if (hit === undefined) {
    const text = normalise(value, name === 'referer').text;
    detect(ev.cfg.paranoia, text, 'header');
    hit = { text, found: findings.filter((f) => f.id !== '932120') };
    if (headerCache.size >= HEADER_CACHE_MAX) headerCache.clear();
    headerCache.set(key, hit);
  }
  for (const f of hit.found) ev.add(f.id, 1, target, hit.text, f.at);
}

/** CRLF followed by a header, a status line or a request line: header injection, response splitting, smuggling. */
function lineBreaks(ev: Evaluation, phase: 1 | 2, target: string, decoded: string): void {
  for (let i = decoded.indexOf('\n'); i >= 0; i = decoded.indexOf('\n', i + 1)) {
    const rest = decoded
      .slice(i + 1, i + 64)
      .toLowerCase()
      .trimStart();
    if (rest.startsWith('http/1.') || rest.startsWith('http/2')) return ev.add('921120', phase, target, decoded, i);
    const sp = rest.indexOf(' ');
    if (sp > 0 && sp < 10 && ALLOWED_METHODS.has(rest.slice(0, sp).toUpperCase()) && rest.charCodeAt(sp + 1) === 47)
      return ev.add('921110', phase, target, decoded, i);
    const colon = rest.indexOf(':');
    if (colon > 0) {
      const name = rest.slice(0, colon).trimEnd();
      if (
        name === 'set-cookie' ||
        name === 'location' ||
        name === 'content-type' ||
        name === 'content-length' ||
        name === 'refresh' ||
        name === 'cookie' ||
        name === 'host' ||
        name === 'transfer-encoding' ||
        name === 'content-security-policy' ||
        name === 'access-control-allow-origin' ||
        name.startsWith('x-forwarded-') ||
        name === 'x-xss-protection'
      )
        return ev.add('921130', phase, target, decoded, i);
    }
  }
}

/** One argument (name and once-decoded value) from the query, a form or JSON, a cookie. */
function argument(ev: Evaluation, phase: 1 | 2, prefix: string, name: string, value: string): void {
  const target = prefix + name;
  if (ev.skipped(target)) return;
  if (!plainToken(name)) {
    const n = normalise(name, true);
    inspect(ev, phase, 'args_names', n.text, 'value');
    if (n.text.indexOf('__proto__') >= 0) ev.add('934130', phase, 'args_names', n.text, 0);
  }
  if (value === '' || plainToken(value)) return;
  if (value.indexOf('\0') >= 0) ev.add('920270', phase, target, value, value.indexOf('\0'));
  const n = normalise(value, true);
  if (n.text.indexOf('\n') >= 0) lineBreaks(ev, phase, target, n.text);
  inspect(ev, phase, target, n.text, 'value');
}

/** Splits `a=1&b=2` (form or query) into arguments, `+` read as a space; counts them against MAX_ARGS. */
function formArgs(ev: Evaluation, phase: 1 | 2, text: string, count: { n: number }): void {
  let i = 0;
  while (i <= text.length) {
    let amp = text.indexOf('&', i);
    if (amp < 0) amp = text.length;
    if (amp > i) {
      if (++count.n > MAX_ARGS) {
        ev.add('920380', phase, 'args', String(count.n), 0);
        return;
      }
      const pair = text.slice(i, amp);
      const eq = pair.indexOf('=');
      const rawName = eq < 0 ? pair : pair.slice(0, eq);
      const rawValue = eq < 0 ? '' : pair.slice(eq + 1);
      argument(ev, phase, 'args:', urlDecode(rawName, true), urlDecode(rawValue, true));
    }
    i = amp + 1;
  }
}

/** Raw `%` escapes that are not escapes, and `%u` full-width forms: evasion signs in a raw query or path. */
function encodingAnomalies(ev: Evaluation, target: string, raw: string): void {
  for (let i = raw.indexOf('%'); i >= 0; i = raw.indexOf('%', i + 1)) {
    const a = raw.charCodeAt(i + 1);
    const b = raw.charCodeAt(i + 2);
    const hex = (c: number) => (c >= 48 && c <= 57) || (c >= 97 && c <= 102) || (c >= 65 && c <= 70);
    if ((a === 117 || a === 85) && raw.slice(i + 2, i + 4).toLowerCase() === 'ff') {
      ev.add('920260', 1, target, raw, i);
      continue;
    }
    if (a === 99 || a === 67) {
      // %c0%ae, %c1%9c: overlong UTF-8 of ASCII
      if ((b === 48 || b === 49) && raw.charCodeAt(i + 3) === 37) ev.add('920260', 1, target, raw, i);
    }
    if (!(hex(a) && hex(b)) && !(a === 117 || a === 85)) ev.add('920220', 1, target, raw, i);
  }
}

/** JSON values flattened to arguments named by their path (`user.name`, `items.0.id`), iteratively, bounded. */
function jsonArgs(ev: Evaluation, doc: unknown, count: { n: number }): void {
  const stack: [string, unknown][] = [['', doc]];
  while (stack.length > 0) {
    const [name, v] = stack.pop()!;
    if (v === null || v === undefined) continue;
    if (typeof v === 'object') {
      const entries = Array.isArray(v) ? v.map((x, i) => [String(i), x] as const) : Object.entries(v as object);
      for (const [k, x] of entries) {
        if (++count.n > MAX_ARGS) {
          ev.add('920380', 2, 'args', String(count.n), 0);
          return;
        }
        const child = name === '' ? k : `${name}.${k}`;
        if (!Array.isArray(v)) {
          if (k === '__proto__' || k === 'constructor' || k === 'prototype')
            ev.add('934130', 2, 'args_names', child, 0);
          else if (!plainToken(k)) argument(ev, 2, 'args:', child, '');
        }
        stack.push([child, x]);
      }
      continue;
    }
    argument(ev, 2, 'args:', name === '' ? 'json' : name, String(v));
  }
}

/** The value of a `name=value` parameter of a header (`charset`, `boundary`), lower-cased and unquoted. */
function headerParam(header: string, param: string): string | undefined {
  const lower = header.toLowerCase();
  let i = lower.indexOf(`${param}=`);
  while (i > 0 && lower.charCodeAt(i - 1) !== 59 && lower.charCodeAt(i - 1) !== 32)
    i = lower.indexOf(`${param}=`, i + 1);
  if (i < 0) return undefined;
  let v = header.slice(i + param.length + 1);
  const semi = v.indexOf(';');
  if (semi >= 0) v = v.slice(0, semi);
  v = v.trim();
  if (v.startsWith('"') && v.endsWith('"') && v.length >= 2) v = v.slice(1, -1);
  return v;
}

/** multipart/form-data: each part's name and (for fields) value; file names checked for traversal and scripts. */
function multipartArgs(ev: Evaluation, body: string, boundary: string, count: { n: number }): boolean {
  const delim = `--${boundary}`;
  let i = body.indexOf(delim);
  if (i < 0) return false;
  while (i >= 0) {
    let start = i + delim.length;
    if (body.startsWith('--', start)) break;
    if (body.charCodeAt(start) === 13) start++;
    if (body.charCodeAt(start) === 10) start++;
    const next = body.indexOf(delim, start);
    const part = body.slice(start, next < 0 ? body.length : next);
    const headEnd = part.indexOf('\r\n\r\n') >= 0 ? part.indexOf('\r\n\r\n') : part.indexOf('\n\n');
    if (headEnd < 0) break;
    const head = part.slice(0, headEnd);
    let value = part.slice(headEnd + (part.startsWith('\r\n\r\n', headEnd) ? 4 : 2));
    if (value.endsWith('\r\n')) value = value.slice(0, -2);
    else if (value.endsWith('\n')) value = value.slice(0, -1);
    const disposition = head.split('\n').find((l) => l.toLowerCase().startsWith('content-disposition')) ?? '';
    const name = headerParam(disposition, 'name') ?? '';
    const filename = headerParam(disposition, 'filename');
    if (++count.n > MAX_ARGS) {
      ev.add('920380', 2, 'args', String(count.n), 0);
      return true;
    }
    if (filename !== undefined) {
      const f = fold(filename);
      const dot = f.lastIndexOf('.');
      const ext = dot >= 0 ? f.slice(dot + 1).trim() : '';
      if (
        [
          'php',
          'phtml',
          'php3',
          'php4',
          'php5',
          'php7',
          'phar',
          'jsp',
          'jspx',
          'asp',
          'aspx',
          'cgi',
          'pl',
          'sh',
          'htaccess',
        ].includes(ext) ||
        f.endsWith('.htaccess')
      )
        ev.add('933110', 2, `files:${name}`, f, 0);
      findings.length = 0;
      detectLfi(f, ev.cfg.paranoia, true, findings);
      for (const x of findings) ev.add(x.id, 2, `files:${name}`, f, x.at);
      // File content is not inspected (binary uploads); only script uploads are findings.
    } else argument(ev, 2, 'args:', name, value);
    i = next;
  }
  return true;
}

/** Evaluates one request under `cfg`, body included: the score and the events (compare the score with the threshold). */
export function evaluate(cfg: WafConfig, req: WafRequest): WafVerdict {
  const ev = evaluateHead(cfg, req);
  evaluateBody(ev, req.body);
  return { score: ev.score, events: ev.events };
}

/** Phase 1: the request line, headers, cookies and query. The evaluation goes on with evaluateBody. */
export function evaluateHead(cfg: WafConfig, req: WafRequest): Evaluation {
  const ev = new Evaluation(cfg, req.path);
  const method = req.method.toUpperCase();
  if (!ALLOWED_METHODS.has(method)) ev.add('911100', 1, 'method', method, 0);

  // Headers: protocol checks, scanners, then the values CRS reads.
  let contentType = '';
  let contentLength: string | undefined;
  let transferEncoding = false;
  let ua: string | undefined;
  let accept = false;
  let cookieHeader = '';
  for (const [k, v] of req.headers) {
    switch (k) {
      case 'content-type':
        contentType = v;
        break;
      case 'content-length':
        contentLength = v;
        break;
      case 'transfer-encoding':
        transferEncoding = true;
        break;
      case 'user-agent':
        ua = v;
        break;
      case 'accept':
        accept = true;
        break;
      case 'cookie':
        cookieHeader = cookieHeader === '' ? v : `${cookieHeader}; ${v}`;
        break;
      case 'proxy':
        ev.add('920450', 1, 'header:proxy', v, 0);
        break;
      case 'range':
      case 'request-range': {
        let commas = 0;
        for (let i = 0; i < v.length; i++) if (v.charCodeAt(i) === 44) commas++;
        if (commas >= 10) ev.add('920200', 1, `header:${k}`, v, 0);
        break;
      }
    }
    if (SKIPPED_HEADERS.has(k) || v === '' || plainToken(v)) continue;
    const target = `header:${k}`;
    if (ev.skipped(target)) continue;
    if (INSPECTED_HEADERS.has(k)) inspectHeader(ev, k, target, v);
    else if (v.indexOf('${') >= 0 || v.indexOf('() {') >= 0) {
      // Every other header: Log4Shell lookups and Shellshock definitions, which were sent in any header.
      const text = fold(v);
      findings.length = 0;
      detectRce(text, cfg.paranoia, findings);
      for (const f of findings)
        if (f.id === '944150' || f.id === '932170' || f.id === '932160') ev.add(f.id, 1, target, text, f.at);
    }
  }
  if (contentLength !== undefined) {
    let digits = contentLength.length > 0;
    for (let i = 0; i < contentLength.length; i++) {
      const c = contentLength.charCodeAt(i);
      if (c < 48 || c > 57) digits = false;
    }
    if (!digits) ev.add('920160', 1, 'header:content-length', contentLength, 0);
    else if ((method === 'GET' || method === 'HEAD') && Number(contentLength) > 0)
      ev.add('920170', 1, 'header:content-length', contentLength, 0);
    if (transferEncoding) ev.add('921110', 1, 'header:transfer-encoding', 'content-length and transfer-encoding', 0);
  } else if (transferEncoding && (method === 'GET' || method === 'HEAD'))
    ev.add('920170', 1, 'header:transfer-encoding', 'chunked', 0);
  if (ua === undefined) ev.add('920320', 1, 'header:user-agent', '', 0);
  else if (ua.trim() === '') ev.add('920330', 1, 'header:user-agent', '', 0);
  else {
    const u = ua.toLowerCase();
    for (const s of SCANNERS)
      if (u.indexOf(s) >= 0) {
        ev.add('913100', 1, 'header:user-agent', ua, u.indexOf(s));
        break;
      }
  }
  if (!accept && method !== 'OPTIONS') ev.add('920300', 1, 'header:accept', '', 0);
  if (contentType !== '') {
    const charset = headerParam(contentType, 'charset');
    if (charset !== undefined && !ALLOWED_CHARSETS.has(charset.toLowerCase()))
      ev.add('920480', 1, 'header:content-type', contentType, 0);
  }

  // The path in the form the origin is sent (normalised: literal `.`/`..` segments already resolved, so `/a/../b` is
  // no attack) decoded by the WAF: encoded traversals (`..%2f`, `%c0%ae`), restricted files, injections in REST-style
  // segments. Encoding anomalies are read on the path as received.
  if (!ev.skipped('path')) {
    if (req.rawPath.indexOf('%') >= 0) encodingAnomalies(ev, 'path', req.rawPath);
    const decoded = urlDecode(req.path, false);
    if (decoded.indexOf('\0') >= 0) ev.add('920270', 1, 'path', decoded, decoded.indexOf('\0'));
    const lower = req.path.toLowerCase();
    const r = restrictedPath(lower);
    if (r >= 0) ev.add('930130', 1, 'path', lower, r);
    if (plainPath(req.path)) {
      // `/etc/passwd` asked of a web server: operating-system files, whatever the spelling led to them.
      findings.length = 0;
      detectLfi(lower, cfg.paranoia, true, findings);
      for (const f of findings) ev.add(f.id, 1, 'path', lower, f.at);
    } else {
      const n = normalise(decoded.replaceAll('\\', '/'), true);
      inspect(ev, 1, 'path', n.text, 'path');
      // A segment holding an injection: detectors read path segments as values too (`/items/1' or '1'='1`).
      findings.length = 0;
      detectRce(n.text, cfg.paranoia, findings);
      for (const f of findings) if (f.id !== '932190' && f.id !== '932160') ev.add(f.id, 1, 'path', n.text, f.at);
    }
  }

  const count = { n: 0 };
  if (req.query !== '') {
    if (req.query.indexOf('%') >= 0) encodingAnomalies(ev, 'query', req.query);
    formArgs(ev, 1, req.query, count);
  }
  if (cookieHeader !== '') {
    for (const pair of cookieHeader.split(';')) {
      if (++count.n > MAX_ARGS) {
        ev.add('920380', 1, 'cookies', String(count.n), 0);
        break;
      }
      const eq = pair.indexOf('=');
      const name = (eq < 0 ? pair : pair.slice(0, eq)).trim();
      const value = eq < 0 ? '' : pair.slice(eq + 1).trim();
      argument(ev, 1, 'cookie:', name, urlDecode(value, false));
    }
  }

  ev.contentType = contentType;
  ev.count = count;
  return ev;
}

/** Phase 2: a form, JSON, multipart or XML body (at most MAX_BODY_BYTES of it, read by the caller). */
export function evaluateBody(ev: Evaluation, body: Buffer | null): void {
  const cfg = ev.cfg;
  const contentType = ev.contentType;
  const count = ev.count;
  if (body !== null && body.length > 0 && cfg.inspectBody) {
    const type = contentType.split(';')[0].trim().toLowerCase();
    const text = body.toString('utf8');
    if (type === 'application/x-www-form-urlencoded') formArgs(ev, 2, text, count);
    else if (type === 'application/json' || type.endsWith('+json')) {
      let doc: unknown;
      let ok = true;
      try {
        doc = JSON.parse(text);
      } catch {
        ok = false;
      }
      // A body cut at MAX_BODY_BYTES does not parse: its prefix is read as one value instead.
      if (ok) jsonArgs(ev, doc, count);
      else if (body.length >= MAX_BODY_BYTES) argument(ev, 2, 'args:', 'body', text);
      else ev.add('920540', 2, 'body', text, 0);
    } else if (type === 'multipart/form-data') {
      const boundary = headerParam(contentType, 'boundary');
      if (boundary === undefined || boundary === '' || !multipartArgs(ev, text, boundary, count))
        ev.add('920540', 2, 'body', contentType, 0);
    } else if (type === 'text/xml' || type === 'application/xml' || type.endsWith('+xml')) {
      argument(ev, 2, 'args:', 'xml', text);
    }
  }
}

function plainPath(p: string): boolean {
  for (let i = 0; i < p.length; i++) {
    const c = p.charCodeAt(i);
    if (!(
      (c >= 97 && c <= 122) ||
      (c >= 65 && c <= 90) ||
      (c >= 48 && c <= 57) ||
      c === 95 ||
      c === 45 ||
      c === 47 ||
      (c === 46 && p.charCodeAt(i + 1) !== 46)
    ))
      return false;
  }
  return true;
}

/** Whether the content type is one whose body the engine reads. */
export function inspectsBody(contentType: string | undefined): boolean {
  if (contentType === undefined) return false;
  const t = contentType.split(';')[0].trim().toLowerCase();
  return (
    t === 'application/x-www-form-urlencoded' ||
    t === 'application/json' ||
    t.endsWith('+json') ||
    t === 'multipart/form-data' ||
    t === 'text/xml' ||
    t === 'application/xml' ||
    t.endsWith('+xml')
  );
}
