// The one form of a request path that rules match and the origin receives (issue 10 item 3), after RFC 3986 §6.2.2
// and Cloudflare's URL normalisation: `/%6Fpenapi.json`, `/./openapi.json`, `//openapi.json` and `/x/../openapi.json`
// are all `/openapi.json`, so a rule on that path cannot be walked past by spelling it another way.

const SLASH = 0x2f;
const BACKSLASH = 0x5c;
const DOT = 0x2e;
const PERCENT = 0x25;
const HASH = 0x23;

function hexValue(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  if (c >= 0x41 && c <= 0x46) return c - 0x37;
  if (c >= 0x61 && c <= 0x66) return c - 0x57;
  return -1;
}

/** RFC 3986 unreserved: ALPHA / DIGIT / "-" / "." / "_" / "~". */
function isUnreserved(c: number): boolean {
  return (
    (c >= 0x41 && c <= 0x5a) ||
    (c >= 0x61 && c <= 0x7a) ||
    (c >= 0x30 && c <= 0x39) ||
    c === 0x2d ||
    c === DOT ||
    c === 0x5f ||
    c === 0x7e
  );
}

/**
 * True when `path` is already normal: starts with `/`; no `\`, `#`, empty segment, `.` or `..` segment; every `%XX`
 * upper-case hex of a character that is not unreserved. One scan, nothing allocated (the common case).
 */
function isNormal(path: string): boolean {
  const n = path.length;
  if (n === 0 || path.charCodeAt(0) !== SLASH) return false;
  for (let i = 0; i < n; i++) {
    const c = path.charCodeAt(i);
    if (c === BACKSLASH || c === HASH) return false;
    if (c === PERCENT) {
      const hi = i + 2 < n ? path.charCodeAt(i + 1) : -1;
      const lo = i + 2 < n ? path.charCodeAt(i + 2) : -1;
      // Lower-case hex, an unreserved character escaped, or a `%` that starts no escape: not normal.
      if ((hi >= 0x61 && hi <= 0x66) || (lo >= 0x61 && lo <= 0x66)) return false;
      const h = hexValue(hi);
      const l = hexValue(lo);
      if (h < 0 || l < 0 || isUnreserved(h * 16 + l)) return false;
      i += 2;
      continue;
    }
    if (c !== SLASH) continue;
    const a = i + 1 < n ? path.charCodeAt(i + 1) : -1;
    if (a === SLASH || a === BACKSLASH) return false;
    if (a !== DOT) continue;
    const b = i + 2 < n ? path.charCodeAt(i + 2) : -1;
    if (b === -1 || b === SLASH || b === BACKSLASH) return false;
    if (b !== DOT) continue;
    const d = i + 3 < n ? path.charCodeAt(i + 3) : -1;
    if (d === -1 || d === SLASH || d === BACKSLASH) return false;
  }
  return true;
}

/**
 * Percent-escapes of unreserved characters decoded, the others in upper-case hex, a `%` that starts no escape
 * escaped itself (`%25`, so no decoding can make a new escape), `\` read as `/`.
 */
function decodeUnreserved(path: string): string {
  let out = '';
  let from = 0;
  for (let i = 0; i < path.length; i++) {
    const c = path.charCodeAt(i);
    if (c === BACKSLASH) {
      out += `${path.slice(from, i)}/`;
      from = i + 1;
      continue;
    }
    if (c !== PERCENT) continue;
    const h = i + 2 < path.length ? hexValue(path.charCodeAt(i + 1)) : -1;
    const l = i + 2 < path.length ? hexValue(path.charCodeAt(i + 2)) : -1;
    if (h < 0 || l < 0) {
      out += `${path.slice(from, i)}%25`;
      from = i + 1;
      continue;
    }
    const v = h * 16 + l;
    out += path.slice(from, i) + (isUnreserved(v) ? String.fromCharCode(v) : path.slice(i, i + 3).toUpperCase());
    from = i + 3;
    i += 2;
  }
  return out + path.slice(from);
}

/**
 * The normal form of a request path (no query): the fragment dropped (never part of a request target; URL parsers at
 * the origin drop it too), percent-escapes of unreserved characters decoded and the others' hex in upper case (RFC
 * 3986 §6.2.2.1–2) and a stray `%` escaped, `\` read as `/` and runs of `/` merged (as Cloudflare does), then `.` and `..` segments removed
 * (RFC 3986 §5.2.4; `..` never climbs above `/`). Reserved characters stay escaped (`%2F` is not a separator). A path
 * that is already normal is returned as it is, without allocating.
 */
export function normalisePath(raw: string): string {
  if (isNormal(raw)) return raw;
  const hash = raw.indexOf('#');
  const segments = decodeUnreserved(hash >= 0 ? raw.slice(0, hash) : raw).split('/');
  const out: string[] = [];
  let trailingSlash = false;
  for (const segment of segments) {
    // A trailing slash stays when the last segment is empty, `.` or `..` (`/a/b/..` is `/a/`).
    trailingSlash = segment === '' || segment === '.' || segment === '..';
    if (segment === '..') out.pop();
    else if (!trailingSlash) out.push(segment);
  }
  const path = `/${out.join('/')}`;
  return trailingSlash && out.length > 0 ? `${path}/` : path;
}
