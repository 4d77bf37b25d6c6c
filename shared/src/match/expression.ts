// Custom-rule expressions: a wirefilter-style language over request fields (Cloudflare's rule language), e.g.
// `http.request.uri.path wildcard "/admin/*" and not ip.src in {10.0.0.0/8}`. One pass compiles the text into a tree
// of closures: the API compiles on write (a syntax error is a 400 naming its line and column), the edge once per
// config version. Every bound is checked while parsing, so the parser's work is linear in the text, and evaluation
// is linear in the request: no JavaScript RegExp (regexes run on RE2), no recursion deeper than EXPRESSION_LIMITS.
import { canonicaliseIpEntry, IpRangeSet, type PeerAddress } from './ip.js';
import { regexProblem, RegexPattern } from './linear-regex.js';
import { WildcardPattern } from './wildcard.js';

/** Bounds of one expression, checked at compile time (spec silent: docs/decisions.md "Custom rules"). */
export const EXPRESSION_LIMITS = {
  /** Characters of the whole expression (Cloudflare's limit). */
  maxLength: 4096,
  /** Parentheses, `not` and function calls nested in one another. */
  maxDepth: 32,
  /** Entries of one `in {…}` list. */
  maxListEntries: 1024,
  /** Entries of all lists of one expression. */
  maxTotalListEntries: 4096,
  /** `matches` operators of one expression. */
  maxRegexes: 8,
  /** Characters of one string literal (a regex's source included). */
  maxStringLength: 1024,
  /** Comparisons of one expression. */
  maxComparisons: 256,
} as const;

/** What an expression reads of a request (the edge's RequestContext has these). */
export interface ExpressionRequest {
  /** Method as sent (upper case for every common client). */
  readonly method: string;
  /** Host without port, lower case. */
  readonly host: string;
  /** Normalised path without the query. */
  readonly path: string;
  /** Raw query without `?`. */
  readonly query: string;
  readonly scheme: 'http' | 'https';
  /** Header names lower case, in arrival order. */
  readonly headers: readonly (readonly [string, string])[];
  readonly peer: PeerAddress;
}

/** A syntax or type error at `offset` (0-based) of the text; `line` and `column` count from 1. */
export class ExpressionError extends Error {
  readonly line: number;
  readonly column: number;
  constructor(
    readonly reason: string,
    readonly offset: number,
    source: string,
  ) {
    let line = 1;
    let start = 0;
    for (let i = 0; i < offset && i < source.length; i++)
      if (source.charCodeAt(i) === 10) {
        line++;
        start = i + 1;
      }
    super(`line ${line}, column ${offset - start + 1}: ${reason}`);
    this.line = line;
    this.column = offset - start + 1;
  }
}

type ValueType = 'string' | 'int' | 'ip' | 'bool';
type Getter<T> = (r: ExpressionRequest) => T;
type Predicate = (r: ExpressionRequest) => boolean;
interface Operand {
  type: ValueType;
  get: Getter<string> | Getter<number> | Getter<PeerAddress> | Getter<boolean>;
  /** The text naming it, for messages. */
  name: string;
}

function header(r: ExpressionRequest, name: string): string {
  const h = r.headers;
  for (let i = 0; i < h.length; i++) if (h[i][0] === name) return h[i][1];
  return '';
}
const uri = (r: ExpressionRequest) => (r.query === '' ? r.path : `${r.path}?${r.query}`);

/** The fields an expression may name (`http.request.headers["…"]` is parsed apart). */
export const EXPRESSION_FIELDS: Readonly<Record<string, { type: ValueType; get: Operand['get'] }>> = {
  'http.host': { type: 'string', get: (r) => r.host },
  'http.request.method': { type: 'string', get: (r) => r.method },
  'http.request.uri': { type: 'string', get: uri },
  'http.request.uri.path': { type: 'string', get: (r) => r.path },
  'http.request.uri.query': { type: 'string', get: (r) => r.query },
  'http.request.full_uri': { type: 'string', get: (r) => `${r.scheme}://${r.host}${uri(r)}` },
  'http.request.version': { type: 'string', get: () => 'HTTP/1.1' },
  'http.user_agent': { type: 'string', get: (r) => header(r, 'user-agent') },
  'http.referer': { type: 'string', get: (r) => header(r, 'referer') },
  'http.cookie': { type: 'string', get: (r) => header(r, 'cookie') },
  'http.x_forwarded_for': { type: 'string', get: (r) => header(r, 'x-forwarded-for') },
  'ip.src': { type: 'ip', get: (r) => r.peer },
  ssl: { type: 'bool', get: (r) => r.scheme === 'https' },
};
const HEADERS_FIELD = 'http.request.headers';

const STRING_OPS = ['eq', 'ne', 'lt', 'le', 'gt', 'ge', 'contains', 'wildcard', 'strict wildcard', 'matches', 'in'];
const INT_OPS = ['eq', 'ne', 'lt', 'le', 'gt', 'ge', 'in'];
const IP_OPS = ['eq', 'ne', 'in'];
const SYMBOL_OPS: [string, string][] = [
  ['==', 'eq'],
  ['!=', 'ne'],
  ['<=', 'le'],
  ['>=', 'ge'],
  ['<', 'lt'],
  ['>', 'gt'],
  ['~', 'matches'],
];
const WORD_OPS = new Set(['eq', 'ne', 'lt', 'le', 'gt', 'ge', 'contains', 'wildcard', 'strict', 'matches', 'in']);

const isWordStart = (c: number) => (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || c === 95;
const isWordChar = (c: number) => isWordStart(c) || (c >= 48 && c <= 57) || c === 46;
/** Characters of an IP, CIDR, integer or range literal. */
const isBareChar = (c: number) =>
  (c >= 48 && c <= 58) || (c >= 97 && c <= 102) || (c >= 65 && c <= 70) || c === 46 || c === 47;

/** A compiled expression: `test` runs it against one request. */
export interface CompiledExpression {
  readonly source: string;
  test(r: ExpressionRequest): boolean;
  /** Regexes compiled (for the bounds' tests). */
  readonly regexes: number;
}

/** eq, ne, lt, le, gt, ge of a field against a literal (strings compare by UTF-16 code units); undefined for others. */
function ordered<T extends string | number>(get: Getter<T>, op: string, lit: T): Predicate | undefined {
  switch (op) {
    case 'eq':
      return (r) => get(r) === lit;
    case 'ne':
      return (r) => get(r) !== lit;
    case 'lt':
      return (r) => get(r) < lit;
    case 'le':
      return (r) => get(r) <= lit;
    case 'gt':
      return (r) => get(r) > lit;
    case 'ge':
      return (r) => get(r) >= lit;
    default:
      return undefined;
  }
}

class Parser {
  private pos = 0;
  private depth = 0;
  regexes = 0;
  private listEntries = 0;
  private comparisons = 0;

  constructor(private readonly src: string) {}

  fail(reason: string, at = this.pos): never {
    throw new ExpressionError(reason, at, this.src);
  }

  /** What stands at the current position, for "found …" in messages. */
  private found(): string {
    this.ws();
    if (this.pos >= this.src.length) return 'the end of the expression';
    const c = this.src.charCodeAt(this.pos);
    if (isWordStart(c)) return `"${this.word()}"`;
    if (c === 34) return 'a string';
    let end = this.pos;
    while (end < this.src.length && end - this.pos < 40 && isBareChar(this.src.charCodeAt(end))) end++;
    return `"${this.src.slice(this.pos, Math.max(end, this.pos + 1))}"`;
  }

  private expected(what: string, at = this.pos): never {
    const save = this.pos;
    this.pos = at;
    const found = this.found();
    this.pos = save;
    this.fail(`expected ${what}, found ${found}`, at);
  }

  private ws(): void {
    const s = this.src;
    while (this.pos < s.length) {
      const c = s.charCodeAt(this.pos);
      if (c === 32 || c === 9 || c === 10 || c === 13) this.pos++;
      else break;
    }
  }

  /** The word at the current position (after blanks), not consumed; '' when none. */
  private word(): string {
    this.ws();
    const s = this.src;
    if (this.pos >= s.length || !isWordStart(s.charCodeAt(this.pos))) return '';
    let end = this.pos + 1;
    while (end < s.length && isWordChar(s.charCodeAt(end))) end++;
    return s.slice(this.pos, end);
  }

  private acceptWord(...words: string[]): string | undefined {
    const w = this.word();
    if (w !== '' && words.includes(w)) {
      this.pos += w.length;
      return w;
    }
    return undefined;
  }

  private acceptSymbol(...symbols: string[]): string | undefined {
    this.ws();
    for (const sym of symbols)
      if (this.src.startsWith(sym, this.pos)) {
        this.pos += sym.length;
        return sym;
      }
    return undefined;
  }

  private enter(at: number): void {
    if (++this.depth > EXPRESSION_LIMITS.maxDepth)
      this.fail(`nested deeper than ${EXPRESSION_LIMITS.maxDepth} levels (parentheses, not, functions)`, at);
  }

  parse(): Predicate {
    const p = this.or();
    this.ws();
    if (this.pos < this.src.length) this.expected('"and", "or", "xor" or the end of the expression');
    return p;
  }

  private or(): Predicate {
    const parts = [this.xor()];
    while (this.acceptWord('or') ?? this.acceptSymbol('||')) parts.push(this.xor());
    if (parts.length === 1) return parts[0];
    return (r) => {
      for (let i = 0; i < parts.length; i++) if (parts[i](r)) return true;
      return false;
    };
  }

  private xor(): Predicate {
    const parts = [this.and()];
    while (this.acceptWord('xor') ?? this.acceptSymbol('^^')) parts.push(this.and());
    if (parts.length === 1) return parts[0];
    return (r) => {
      let v = false;
      for (let i = 0; i < parts.length; i++) v = v !== parts[i](r);
      return v;
    };
  }

  private and(): Predicate {
    const parts = [this.not()];
    while (this.acceptWord('and') ?? this.acceptSymbol('&&')) parts.push(this.not());
    if (parts.length === 1) return parts[0];
    return (r) => {
      for (let i = 0; i < parts.length; i++) if (!parts[i](r)) return false;
      return true;
    };
  }

  private not(): Predicate {
    this.ws();
    const at = this.pos;
    // `!` alone is not; `!=` cannot start a term, so no confusion.
    if (this.acceptWord('not') ?? (this.src.startsWith('!=', this.pos) ? undefined : this.acceptSymbol('!'))) {
      this.enter(at);
      const inner = this.not();
      this.depth--;
      return (r) => !inner(r);
    }
    return this.primary();
  }

  private primary(): Predicate {
    this.ws();
    const at = this.pos;
    if (this.acceptSymbol('(')) {
      this.enter(at);
      const inner = this.or();
      if (!this.acceptSymbol(')')) this.expected('")" closing the "(" at ' + this.where(at));
      this.depth--;
      return inner;
    }
    return this.comparison();
  }

  private where(offset: number): string {
    const e = new ExpressionError('', offset, this.src);
    return `line ${e.line}, column ${e.column}`;
  }

  /** A field, a header or a function of one. */
  private operand(): Operand {
    this.ws();
    const at = this.pos;
    const name = this.word();
    if (name === '') this.expected('a field (http.request.uri.path, ip.src, …), a function, "not" or "("');
    this.pos += name.length;
    if (name === 'lower' || name === 'upper' || name === 'len') {
      if (!this.acceptSymbol('(')) this.expected(`"(" after ${name}`);
      this.enter(at);
      const argAt = this.pos;
      const arg = this.operand();
      if (arg.type !== 'string') this.fail(`${name}() takes a string field; ${arg.name} is ${arg.type}`, argAt);
      if (!this.acceptSymbol(')')) this.expected(`")" closing ${name}(`);
      this.depth--;
      const g = arg.get as Getter<string>;
      const text = `${name}(${arg.name})`;
      if (name === 'len') return { type: 'int', get: (r: ExpressionRequest) => g(r).length, name: text };
      if (name === 'lower') return { type: 'string', get: (r: ExpressionRequest) => g(r).toLowerCase(), name: text };
      return { type: 'string', get: (r: ExpressionRequest) => g(r).toUpperCase(), name: text };
    }
    if (name === HEADERS_FIELD) {
      if (!this.acceptSymbol('[')) this.expected(`"[" and a header name after ${HEADERS_FIELD}`);
      this.ws();
      const h = this.string('a header name in quotes').toLowerCase();
      if (!this.acceptSymbol(']')) this.expected('"]" after the header name');
      return { type: 'string', get: (r: ExpressionRequest) => header(r, h), name: `${name}["${h}"]` };
    }
    if (name === 'not' || name === 'and' || name === 'or' || name === 'xor' || WORD_OPS.has(name))
      this.fail(`expected a field before "${name}"`, at);
    const f = Object.hasOwn(EXPRESSION_FIELDS, name) ? EXPRESSION_FIELDS[name] : undefined;
    if (!f) this.fail(`unknown field "${name}"`, at);
    return { type: f.type, get: f.get, name };
  }

  private operator(lhs: Operand): { op: string; at: number } {
    this.ws();
    const at = this.pos;
    for (const [sym, op] of SYMBOL_OPS)
      if (this.src.startsWith(sym, this.pos)) {
        this.pos += sym.length;
        return { op, at };
      }
    const w = this.word();
    if (WORD_OPS.has(w)) {
      this.pos += w.length;
      if (w !== 'strict') return { op: w, at };
      if (!this.acceptWord('wildcard')) this.expected('"wildcard" after "strict"');
      return { op: 'strict wildcard', at };
    }
    const ops = lhs.type === 'string' ? STRING_OPS : lhs.type === 'int' ? INT_OPS : IP_OPS;
    return this.expected(`an operator after ${lhs.name} (${ops.join(', ')})`);
  }

  private comparison(): Predicate {
    this.ws();
    const lhsAt = this.pos;
    const lhs = this.operand();
    if (++this.comparisons > EXPRESSION_LIMITS.maxComparisons)
      this.fail(`more than ${EXPRESSION_LIMITS.maxComparisons} comparisons`, lhsAt);
    if (lhs.type === 'bool') {
      this.ws();
      const next = this.pos;
      if (this.word() !== '' && WORD_OPS.has(this.word()))
        this.fail(`${lhs.name} is a boolean field: use it alone or after "not"`, next);
      return lhs.get as Getter<boolean>;
    }
    const { op, at } = this.operator(lhs);
    const allowed = lhs.type === 'string' ? STRING_OPS : lhs.type === 'int' ? INT_OPS : IP_OPS;
    if (!allowed.includes(op))
      this.fail(`"${op}" does not apply to ${lhs.name} (${lhs.type}); use one of ${allowed.join(', ')}`, at);
    if (lhs.type === 'string') return this.stringComparison(lhs.get as Getter<string>, op);
    if (lhs.type === 'int') return this.intComparison(lhs.get as Getter<number>, op);
    return this.ipComparison(lhs.get as Getter<PeerAddress>, op);
  }

  /** A quoted string: `\"` and `\\` are escapes; any other backslash stays (so `"\d+"` is the regex `\d+`). */
  private string(what = 'a string in double quotes'): string {
    this.ws();
    const s = this.src;
    const at = this.pos;
    if (s.charCodeAt(at) !== 34) this.expected(what);
    let out = '';
    let i = at + 1;
    for (;;) {
      if (i >= s.length) this.fail('unterminated string: no closing "', at);
      const c = s.charCodeAt(i);
      if (c === 34) break;
      if (c === 92 && i + 1 < s.length && (s.charCodeAt(i + 1) === 34 || s.charCodeAt(i + 1) === 92)) {
        out += s[i + 1];
        i += 2;
      } else {
        out += s[i];
        i++;
      }
      if (out.length > EXPRESSION_LIMITS.maxStringLength)
        this.fail(`string longer than ${EXPRESSION_LIMITS.maxStringLength} characters`, at);
    }
    this.pos = i + 1;
    return out;
  }

  /** An unquoted IP, CIDR, integer or `a..b` range. */
  private bare(what: string): { text: string; at: number } {
    this.ws();
    const at = this.pos;
    let end = at;
    while (end < this.src.length && isBareChar(this.src.charCodeAt(end))) end++;
    if (end === at) this.expected(what);
    if (end - at > 100) this.fail('literal longer than 100 characters', at);
    this.pos = end;
    return { text: this.src.slice(at, end), at };
  }

  /** `{ … }`: entries read by `entry` until `}`, bounded per list and per expression. */
  private list(entry: () => void): void {
    if (!this.acceptSymbol('{')) this.expected('"{" starting a list');
    let n = 0;
    for (;;) {
      if (this.acceptSymbol('}')) break;
      if (this.pos >= this.src.length) this.expected('"}" closing the list');
      if (++n > EXPRESSION_LIMITS.maxListEntries)
        this.fail(`list longer than ${EXPRESSION_LIMITS.maxListEntries} entries`);
      if (++this.listEntries > EXPRESSION_LIMITS.maxTotalListEntries)
        this.fail(`more than ${EXPRESSION_LIMITS.maxTotalListEntries} list entries in the expression`);
      entry();
      this.acceptSymbol(',');
    }
    if (n === 0) this.fail('empty list', this.pos - 1);
  }

  private stringComparison(get: Getter<string>, op: string): Predicate {
    if (op === 'in') {
      const set = new Set<string>();
      this.list(() => set.add(this.string('a string in double quotes or "}"')));
      return (r) => set.has(get(r));
    }
    this.ws();
    const at = this.pos;
    const lit = this.string();
    const compare = ordered(get, op, lit);
    if (compare) return compare;
    switch (op) {
      case 'contains':
        return (r) => get(r).includes(lit);
      case 'wildcard': {
        const w = new WildcardPattern(lit.toLowerCase());
        return (r) => w.test(get(r).toLowerCase());
      }
      case 'strict wildcard': {
        const w = new WildcardPattern(lit);
        return (r) => w.test(get(r));
      }
      default: {
        if (++this.regexes > EXPRESSION_LIMITS.maxRegexes)
          this.fail(`more than ${EXPRESSION_LIMITS.maxRegexes} regexes ("matches") in the expression`, at);
        const problem = regexProblem(lit);
        if (problem !== undefined) this.fail(problem, at);
        const re = new RegexPattern(lit);
        return (r) => re.test(get(r));
      }
    }
  }

  private int(text: string, at: number): number {
    if (!/^[0-9]{1,15}$/.test(text)) this.fail(`"${text}" is not an integer`, at);
    return Number(text);
  }

  private intComparison(get: Getter<number>, op: string): Predicate {
    if (op === 'in') {
      const lows: number[] = [];
      const highs: number[] = [];
      this.list(() => {
        const { text, at } = this.bare('an integer, a range a..b or "}"');
        const dots = text.indexOf('..');
        const lo = this.int(dots < 0 ? text : text.slice(0, dots), at);
        const hi = dots < 0 ? lo : this.int(text.slice(dots + 2), at + dots + 2);
        if (hi < lo) this.fail(`range ${text} ends before it starts`, at);
        lows.push(lo);
        highs.push(hi);
      });
      return (r) => {
        const v = get(r);
        for (let i = 0; i < lows.length; i++) if (v >= lows[i] && v <= highs[i]) return true;
        return false;
      };
    }
    const { text, at } = this.bare('an integer');
    return ordered(get, op, this.int(text, at))!;
  }

  /** An address, CIDR or `a..b` range in its canonical form (the `a-b` form of ip_includes). */
  private ipEntry(): string {
    const { text, at } = this.bare('an IP address, a CIDR, a range a..b or "}"');
    const dots = text.indexOf('..');
    const entry = dots < 0 ? text : `${text.slice(0, dots)}-${text.slice(dots + 2)}`;
    if (dots >= 0 && (text.slice(dots + 2).includes('..') || dots === 0)) this.fail(`"${text}" is not an IP range`, at);
    const c = canonicaliseIpEntry(entry);
    if (typeof c === 'string') this.fail(c.replace(`"${entry}"`, `"${text}"`), at);
    return c.text;
  }

  private ipComparison(get: Getter<PeerAddress>, op: string): Predicate {
    const entries: string[] = [];
    if (op === 'in') this.list(() => entries.push(this.ipEntry()));
    else entries.push(this.ipEntry());
    const set = new IpRangeSet(entries);
    return op === 'ne' ? (r) => !set.has(get(r)) : (r) => set.has(get(r));
  }
}

/** Compiles `source`; throws an ExpressionError naming the position of the first problem. */
export function compileExpression(source: string): CompiledExpression {
  if (typeof source !== 'string') throw new ExpressionError('the expression must be a string', 0, '');
  if (source.length > EXPRESSION_LIMITS.maxLength)
    throw new ExpressionError(
      `expression longer than ${EXPRESSION_LIMITS.maxLength} characters`,
      EXPRESSION_LIMITS.maxLength,
      source,
    );
  if (source.trim() === '') throw new ExpressionError('the expression is empty', 0, source);
  const p = new Parser(source);
  const test = p.parse();
  return { source, test, regexes: p.regexes };
}

/** The error compiling `source` would throw, or undefined when it compiles. */
export function expressionProblem(source: string): ExpressionError | undefined {
  try {
    compileExpression(source);
    return undefined;
  } catch (err) {
    if (err instanceof ExpressionError) return err;
    throw err;
  }
}
