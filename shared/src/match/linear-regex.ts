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

/** A user regex, unanchored (anchor with `^`/`$`), run by RE2. */
export class RegexPattern {
  private readonly re: LinearRegex;
  constructor(
    readonly source: string,
    flags: '' | 'i' = '',
  ) {
    this.re = linearRegex(source, flags);
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
