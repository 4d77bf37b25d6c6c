// User regular expressions (host and path patterns, their captures, and any later WAF or custom rule) run on RE2,
// whose time is linear in the input whatever the pattern: one request cannot stall a worker for every tenant.
// JavaScript's RegExp backtracks (`^/(a+)+$` against `/aaa…a!` takes minutes), so it never sees a tenant's pattern.
import RE2 from 're2';

export type LinearRegex = RE2;

/** Compiles `source` for RE2; throws a SyntaxError for what RE2 cannot run (backreferences, lookaround, huge repeats). */
export function linearRegex(source: string, flags: '' | 'i' = ''): LinearRegex {
  return new RE2(source, flags);
}

/** Why `source` cannot be a pattern (the API's 400 message), or undefined when RE2 compiles it. */
export function regexProblem(source: string, flags: '' | 'i' = ''): string | undefined {
  try {
    linearRegex(source, flags);
    return undefined;
  } catch (err) {
    return `invalid regex for the linear-time engine (RE2 syntax: no backreferences, no lookaround): ${(err as Error).message}`;
  }
}

// RE2 reads a Buffer about 8× faster than a string (no UTF-16 offset bookkeeping). A request's path or host is tested
// against several patterns in a row, so the last text encoded is kept.
let lastText = '';
let lastBytes = Buffer.alloc(0);
function utf8(text: string): Buffer {
  if (text !== lastText) {
    lastBytes = Buffer.from(text, 'utf8');
    lastText = text;
  }
  return lastBytes;
}

/** True when `source` may have a `|` outside every group, or uses syntax this scan does not follow. */
function mayAlternateAtTop(source: string): boolean {
  // POSIX classes (`[[:alpha:]]`) and `\Q…\E` quoting would need a real parser: treated as "may".
  if (source.includes('[:') || source.includes('\\Q')) return true;
  let depth = 0;
  for (let i = 0; i < source.length; i++) {
    const c = source[i];
    if (c === '\\') i++;
    else if (c === '[') {
      i++;
      if (source[i] === '^') i++;
      if (source[i] === ']') i++; // a `]` first in a class is a literal
      while (i < source.length && source[i] !== ']') i += source[i] === '\\' ? 2 : 1;
    } else if (c === '(') depth++;
    else if (c === ')' && --depth < 0) return true;
    else if (c === '|' && depth === 0) return true;
  }
  return false;
}

/**
 * The first path segment of every text a case-sensitive regex can match when it starts `^/literal/` (not followed by
 * a quantifier) and has no top-level `|`: `^/api/v[0-9]+/` → `/api`. Null otherwise. Rules are indexed by it, and a
 * wrong key would hide a rule, so anything unusual is null.
 */
function anchoredFirstSegment(source: string): string | null {
  const m = /^\^\/([A-Za-z0-9_~-]+)\/(?![?*+{])/.exec(source);
  return m === null || mayAlternateAtTop(source) ? null : `/${m[1]}`;
}

/** A user regex, unanchored (anchor with `^`/`$`), run by RE2. */
export class RegexPattern {
  private readonly re: LinearRegex;
  /** The first path segment of every path this pattern matches, when the source tells it for certain (`^/api/…`). */
  readonly leadingSegment: string | null;
  constructor(
    readonly source: string,
    flags: '' | 'i' = '',
  ) {
    this.re = linearRegex(source, flags);
    this.leadingSegment = flags === '' ? anchoredFirstSegment(source) : null;
  }

  test(text: string): boolean {
    return this.re.test(utf8(text));
  }

  /** The groups of the first match (missing groups are ''), or null when it does not match. */
  captures(text: string): string[] | null {
    // The typings give a Buffer match no index signature; at run time it is an array of Buffers (undefined when a
    // group did not take part).
    const m = this.re.exec(utf8(text)) as unknown as (Buffer | undefined)[] | null;
    if (m === null) return null;
    const groups: string[] = [];
    for (let i = 1; i < m.length; i++) groups.push(m[i]?.toString('utf8') ?? '');
    return groups;
  }
}
