// The transformations a value goes through before the WAF's detectors see it, as CRS chains them (t:urlDecodeUni,
// t:htmlEntityDecode, t:jsDecode, t:lowercase, t:compressWhitespace, t:removeNulls): every one is a single
// hand-written pass over the string, linear in its length, no regular expression. Decoding repeats (at most
// MAX_PASSES times) while a pass changes something, so `%2527` and `&#x25;27` end as `'` like a lenient backend would
// read them.

/** Decoding passes at most (URL, entities and escapes each time): triple encoding is undone, nothing deeper. */
export const MAX_PASSES = 3;

function hexVal(c: number): number {
  if (c >= 48 && c <= 57) return c - 48;
  if (c >= 97 && c <= 102) return c - 87;
  if (c >= 65 && c <= 70) return c - 55;
  return -1;
}

/** The value of four hex digits at `at`, or -1. */
function hex4(s: string, at: number): number {
  let v = 0;
  for (let k = at; k < at + 4; k++) {
    const h = hexVal(s.charCodeAt(k));
    if (h < 0) return -1;
    v = v * 16 + h;
  }
  return v;
}

/**
 * `%XX` and `%uXXXX` decoded, `+` as a space when `plus`. Bytes from `%XX` runs are read as UTF-8, overlong forms
 * included (`%c0%ae` is `.`, as some decoders accept it); a byte that starts no valid sequence stays as that code
 * unit. A `%` that starts no escape is kept.
 */
export function urlDecode(s: string, plus: boolean): string {
  if (s.indexOf('%') < 0 && (!plus || s.indexOf('+') < 0)) return s;
  let out = '';
  const n = s.length;
  let i = 0;
  const bytes: number[] = [];
  const flush = () => {
    let j = 0;
    while (j < bytes.length) {
      const b = bytes[j];
      let need = 0;
      let cp = 0;
      if (b >= 0xc0 && b <= 0xdf) {
        need = 1;
        cp = b & 0x1f;
      } else if (b >= 0xe0 && b <= 0xef) {
        need = 2;
        cp = b & 0x0f;
      } else if (b >= 0xf0 && b <= 0xf7) {
        need = 3;
        cp = b & 0x07;
      }
      let ok = need > 0 && j + need <= bytes.length - 1;
      if (ok) {
        for (let k = 1; k <= need; k++) {
          const c = bytes[j + k];
          if (c === undefined || (c & 0xc0) !== 0x80) {
            ok = false;
            break;
          }
          cp = (cp << 6) | (c & 0x3f);
        }
      }
      if (ok && cp <= 0x10ffff) {
        out += String.fromCodePoint(cp);
        j += need + 1;
      } else {
        out += String.fromCharCode(b);
        j++;
      }
    }
    bytes.length = 0;
  };
  while (i < n) {
    const c = s.charCodeAt(i);
    if (c === 37 /* % */) {
      if (i + 2 < n) {
        const h = hexVal(s.charCodeAt(i + 1));
        const l = hexVal(s.charCodeAt(i + 2));
        if (h >= 0 && l >= 0) {
          bytes.push(h * 16 + l);
          i += 3;
          continue;
        }
      }
      const u = s.charCodeAt(i + 1);
      if ((u === 117 || u === 85) /* u U */ && i + 5 < n) {
        const v = hex4(s, i + 2);
        if (v >= 0) {
          flush();
          out += String.fromCharCode(fullWidth(v));
          i += 6;
          continue;
        }
      }
    }
    if (bytes.length > 0) flush();
    out += c === 43 && plus ? ' ' : s[i];
    i++;
  }
  if (bytes.length > 0) flush();
  return out;
}

/** Full-width ASCII forms (U+FF01–U+FF5E) read as their ASCII letters, as IIS's %u decoding did. */
function fullWidth(v: number): number {
  return v >= 0xff01 && v <= 0xff5e ? v - 0xfee0 : v;
}

const NAMED: Record<string, string> = {
  lt: '<',
  gt: '>',
  amp: '&',
  quot: '"',
  apos: "'",
  nbsp: ' ',
  tab: '\t',
  newline: '\n',
  colon: ':',
  sol: '/',
  bsol: '\\',
  lpar: '(',
  rpar: ')',
  semi: ';',
  equals: '=',
  grave: '`',
  num: '#',
  period: '.',
  comma: ',',
  excl: '!',
  dollar: '$',
  percnt: '%',
  plus: '+',
  lsqb: '[',
  rsqb: ']',
  lbrace: '{',
  rbrace: '}',
  vert: '|',
  quest: '?',
  ast: '*',
};

/** `&#NN;`, `&#xHH;` (the `;` optional, leading zeros allowed) and the named entities above. */
export function htmlEntityDecode(s: string): string {
  if (s.indexOf('&') < 0) return s;
  let out = '';
  const n = s.length;
  let i = 0;
  while (i < n) {
    const c = s.charCodeAt(i);
    if (c !== 38 /* & */) {
      out += s[i++];
      continue;
    }
    let j = i + 1;
    if (s.charCodeAt(j) === 35 /* # */) {
      j++;
      const hex = s.charCodeAt(j) === 120 || s.charCodeAt(j) === 88;
      if (hex) j++;
      let v = 0;
      let digits = 0;
      while (j < n && digits < 12) {
        const d = hex ? hexVal(s.charCodeAt(j)) : s.charCodeAt(j) - 48;
        if (d < 0 || d > (hex ? 15 : 9)) break;
        v = v * (hex ? 16 : 10) + d;
        j++;
        digits++;
      }
      if (digits > 0 && v <= 0x10ffff) {
        if (s.charCodeAt(j) === 59) j++;
        out += String.fromCodePoint(v);
        i = j;
        continue;
      }
      out += s[i++];
      continue;
    }
    let name = '';
    while (j < n && j - i <= 8) {
      const d = s.charCodeAt(j) | 0x20;
      if (d < 97 || d > 122) break;
      name += String.fromCharCode(d);
      j++;
    }
    const v = name.length > 0 && Object.hasOwn(NAMED, name) ? NAMED[name] : undefined;
    if (v !== undefined) {
      if (s.charCodeAt(j) === 59) j++;
      out += v;
      i = j;
      continue;
    }
    out += s[i++];
  }
  return out;
}

/** JavaScript and C-style escapes: `\uXXXX`, `\u{X…}`, `\xHH`, `\NNN` (octal); other escaped characters stay escaped. */
export function escapeDecode(s: string): string {
  if (s.indexOf('\\') < 0) return s;
  let out = '';
  const n = s.length;
  let i = 0;
  while (i < n) {
    const c = s.charCodeAt(i);
    if (c !== 92 || i + 1 >= n) {
      out += s[i++];
      continue;
    }
    const e = s.charCodeAt(i + 1);
    if (e === 117 /* u */) {
      if (s.charCodeAt(i + 2) === 123 /* { */) {
        let v = 0;
        let j = i + 3;
        while (j < n && j < i + 10 && hexVal(s.charCodeAt(j)) >= 0) v = v * 16 + hexVal(s.charCodeAt(j++));
        if (s.charCodeAt(j) === 125 && j > i + 3 && v <= 0x10ffff) {
          out += String.fromCodePoint(v);
          i = j + 1;
          continue;
        }
      } else if (i + 5 < n) {
        const v = hex4(s, i + 2);
        if (v >= 0) {
          out += String.fromCharCode(fullWidth(v));
          i += 6;
          continue;
        }
      }
    } else if (e === 120 /* x */ && i + 3 < n) {
      const h = hexVal(s.charCodeAt(i + 2));
      const l = hexVal(s.charCodeAt(i + 3));
      if (h >= 0 && l >= 0) {
        out += String.fromCharCode(h * 16 + l);
        i += 4;
        continue;
      }
    } else if (e >= 48 && e <= 55) {
      let v = 0;
      let j = i + 1;
      while (j < n && j < i + 4 && s.charCodeAt(j) >= 48 && s.charCodeAt(j) <= 55) v = v * 8 + s.charCodeAt(j++) - 48;
      if (v <= 255) {
        out += String.fromCharCode(v);
        i = j;
        continue;
      }
    }
    out += s[i++];
  }
  return out;
}

/**
 * Lower case, NULs removed, every run of whitespace made one space (one line feed when the run holds a CR or LF: a
 * line break separates shell commands), and Unicode look-alikes of `<`, `>`, `'` and `"` folded to them.
 */
export function fold(s: string): string {
  // Most values need lower case only: the native toLowerCase, and one scan proving nothing else is to do.
  const lower = s.toLowerCase();
  let clean = true;
  for (let i = 0; i < lower.length; i++) {
    const c = lower.charCodeAt(i);
    if (c === 32 ? i === 0 || lower.charCodeAt(i + 1) === 32 || i === lower.length - 1 : c < 32 || c >= 127) {
      clean = false;
      break;
    }
  }
  if (clean) return lower;
  let out = '';
  let space = 0; // 0 none, 32 a space run, 10 a run holding a line break
  for (let i = 0; i < s.length; i++) {
    let c = s.charCodeAt(i);
    if (c === 0) continue;
    if (c === 10 || c === 13) {
      space = 10;
      continue;
    }
    if (c === 32 || c === 9 || c === 11 || c === 12 || c === 0xa0 || c === 0x2028 || c === 0x2029 || c === 0x3000) {
      if (space === 0) space = 32;
      continue;
    }
    if (space !== 0) {
      if (space === 10) out += '\n';
      else if (out.length > 0) out += ' ';
      space = 0;
    }
    if (c >= 65 && c <= 90) c += 32;
    else if (c === 0x2018 || c === 0x2019 || c === 0x2032)
      c = 39; // ‘ ’ ′ → '
    else if (c === 0x201c || c === 0x201d) c = 34;
    else if (c === 0x3008 || c === 0x2039 || c === 0xfe64) c = 60;
    else if (c === 0x3009 || c === 0x203a || c === 0xfe65) c = 62;
    else if (c > 127) {
      out += s[i].toLowerCase();
      continue;
    }
    out += String.fromCharCode(c);
  }
  return out;
}

/**
 * A value as the detectors read it: decoded (URL when `url`, entities, escapes) until a pass changes nothing or
 * MAX_PASSES, then folded. `passes` counts the decoding passes that changed something (2+ means double encoding).
 */
export function normalise(raw: string, url: boolean): { text: string; passes: number } {
  let s = raw;
  let passes = 0;
  for (let p = 0; p < MAX_PASSES; p++) {
    let t = url ? urlDecode(s, false) : s;
    t = htmlEntityDecode(t);
    t = escapeDecode(t);
    if (t === s) break;
    s = t;
    passes++;
  }
  return { text: fold(s), passes };
}

/** True when every character is a letter, digit, `_`, `.` or `-`: such a value cannot carry any attack we look for. */
export function plainToken(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (!((c >= 97 && c <= 122) || (c >= 65 && c <= 90) || (c >= 48 && c <= 57) || c === 95 || c === 46 || c === 45))
      return false;
  }
  return true;
}
