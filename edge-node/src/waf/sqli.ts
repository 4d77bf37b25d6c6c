// SQL injection detection by tokenizing, in the manner of libinjection (written for this project): a value is read
// as SQL three times (as it is, and as if it continued a '…' or "…" string the application opened), each reading a
// token stream of strings, numbers, keywords, functions, operators, comments and punctuation. Injections are token
// shapes no prose and few forms carry: a string closed and followed by a boolean operator, a comment or a second
// statement; `union select`; a tautology (`or 1=1`, `or 'a'='a'`); time and file functions; system catalogs.
// One pass per reading, linear in the value; the stream is capped at MAX_TOKENS.

/** Token kinds. */
const enum K {
  Str, // a closed string literal
  Open, // a string left open at the end
  Num,
  Word, // identifier
  Kw, // keyword
  Bool, // and, or, xor, &&, ||
  Not,
  Union,
  Select,
  Stmt, // insert, update, delete, drop, … (a statement start other than select)
  Func, // a word followed by `(`
  Op, // = < > ! + - * / % ^ | & ~ and their pairs
  LPar,
  RPar,
  Comma,
  Semi,
  Comment,
  Var, // @x, @@x
  Other,
}

const MAX_TOKENS = 256;
const kinds: K[] = [];
const texts: string[] = [];
/** Start of each token in the value (for the matched excerpt). */
const starts: number[] = [];

const BOOL = new Set(['and', 'or', 'xor']);
const STMT = new Set([
  'insert',
  'update',
  'delete',
  'drop',
  'alter',
  'create',
  'truncate',
  'exec',
  'execute',
  'declare',
  'shutdown',
  'grant',
  'revoke',
  'waitfor',
  'call',
  'merge',
  'rename',
]);
const KW = new Set([
  'from',
  'where',
  'into',
  'values',
  'table',
  'database',
  'schema',
  'having',
  'group',
  'order',
  'by',
  'limit',
  'offset',
  'like',
  'rlike',
  'regexp',
  'sounds',
  'between',
  'is',
  'null',
  'in',
  'case',
  'when',
  'then',
  'else',
  'end',
  'as',
  'set',
  'all',
  'distinct',
  'procedure',
  'outfile',
  'dumpfile',
  'delay',
  'top',
  'join',
  'exists',
  'true',
  'false',
  'div',
  'mod',
  'collate',
  'binary',
  'desc',
  'asc',
  'with',
  'user',
]);
const ARITH = new Set(['+', '-', '*', '/', '%', '^', '|', '&']);
/** Comparison words: `x like y` is a comparison like `x = y`. */
const CMP_WORDS = new Set(['like', 'rlike', 'regexp', 'is', 'sounds']);
/** Functions only an injection calls from a form field: time delays, file access, error-based extraction, shells. */
const FATAL_FUNCS = new Set([
  'sleep',
  'benchmark',
  'pg_sleep',
  'load_file',
  'extractvalue',
  'updatexml',
  'xp_cmdshell',
  'sp_executesql',
  'sp_oacreate',
  'sp_makewebtask',
  'pg_read_file',
  'pg_ls_dir',
  'lo_import',
  'lo_export',
  'sys_eval',
  'sys_exec',
  'name_const',
  'dbms_pipe.receive_message',
  'dbms_lock.sleep',
  'utl_http.request',
  'utl_inaddr.get_host_address',
  'gtid_subset',
  'openrowset',
  'opendatasource',
  'is_srvrolemember',
]);
/** SQL functions an injection uses after a string break or an operator (and prose rarely calls), plus FATAL_FUNCS. */
const DANGEROUS_FUNCS = new Set([
  ...FATAL_FUNCS,
  'randomblob',
  'make_set',
  'json_keys',
  'exp',
  'polygon',
  'multipoint',
  'geometrycollection',
  'linestring',
  'multilinestring',
  'multipolygon',
  'floor',
  'rand',
  'convert',
  'cast',
  'char',
  'chr',
  'concat',
  'concat_ws',
  'group_concat',
  'substring',
  'substr',
  'mid',
  'ascii',
  'ord',
  'hex',
  'unhex',
  'version',
  'database',
  'user',
  'current_user',
  'system_user',
  'session_user',
  'schema',
  'if',
  'iif',
  'ifnull',
  'isnull',
  'coalesce',
  'count',
  'length',
  'len',
  'md5',
  'sha1',
  'db_name',
  'user_name',
]);
/** System catalogs and variables: naming one is reconnaissance. */
const CATALOGS = [
  'information_schema',
  'mysql.user',
  'mysql.db',
  'sysobjects',
  'syscolumns',
  'sys.tables',
  'sys.objects',
  'sys.databases',
  'master..sysdatabases',
  'master.dbo',
  'pg_catalog',
  'pg_shadow',
  'pg_user',
  'pg_database',
  'sqlite_master',
  'sqlite_schema',
  'all_tables',
  'user_tables',
  'all_tab_columns',
  'dba_users',
  'msysaccessobjects',
  'msysobjects',
  '@@version',
  '@@datadir',
  '@@hostname',
  '@@basedir',
  '@@servername',
];

function isWordChar(c: number): boolean {
  return (c >= 97 && c <= 122) || (c >= 48 && c <= 57) || c === 95 || c === 36 || c === 46 || c > 127;
}

function push(k: K, text: string, at: number): boolean {
  kinds.push(k);
  texts.push(text);
  starts.push(at);
  return kinds.length < MAX_TOKENS;
}

/**
 * Tokenizes `s` (folded: lower case, whitespace compressed). `quote` 0: as it is; 39 or 34: the value continues a
 * string opened with that quote, so everything up to its first closing quote is one string token.
 */
function tokenize(s: string, quote: number): void {
  kinds.length = 0;
  texts.length = 0;
  starts.length = 0;
  const n = s.length;
  let i = 0;
  if (quote !== 0) {
    const end = closeQuote(s, 0, quote);
    if (end < 0) return;
    push(K.Str, s.slice(0, end), 0);
    i = end + 1;
  }
  while (i < n) {
    const c = s.charCodeAt(i);
    if (c === 32 || c === 10) {
      i++;
      continue;
    }
    const at = i;
    if (c === 39 || c === 34 || c === 96) {
      const end = closeQuote(s, i + 1, c);
      if (end < 0) {
        push(K.Open, s.slice(i + 1), at);
        return;
      }
      if (!push(c === 96 ? K.Word : K.Str, s.slice(i + 1, end), at)) return;
      i = end + 1;
      continue;
    }
    // Comments: `--` (followed by a space, another `-`, or the end), `#`, `/* … */`; `/*!` opens MySQL's executable
    // comment, whose content is code: only the marker (and its version digits) is skipped.
    if (
      c === 35 ||
      (c === 45 &&
        s.charCodeAt(i + 1) === 45 &&
        (i + 2 >= n || s.charCodeAt(i + 2) === 32 || s.charCodeAt(i + 2) === 10 || s.charCodeAt(i + 2) === 45))
    ) {
      push(K.Comment, s.slice(i), at);
      return;
    }
    if (c === 47 && s.charCodeAt(i + 1) === 42) {
      if (s.charCodeAt(i + 2) === 33) {
        i += 3;
        while (i < n && s.charCodeAt(i) >= 48 && s.charCodeAt(i) <= 57) i++;
        if (!push(K.Comment, '/*!', at)) return;
        continue;
      }
      const end = s.indexOf('*/', i + 2);
      if (!push(K.Comment, end < 0 ? s.slice(i) : s.slice(i, end + 2), at)) return;
      if (end < 0) return;
      i = end + 2;
      continue;
    }
    if (c === 42 && s.charCodeAt(i + 1) === 47) {
      i += 2; // the end of an executable comment
      continue;
    }
    if (c === 64 /* @ */) {
      let j = i + 1;
      if (s.charCodeAt(j) === 64) j++;
      while (j < n && isWordChar(s.charCodeAt(j))) j++;
      if (!push(K.Var, s.slice(i, j), at)) return;
      i = j;
      continue;
    }
    if (c >= 48 && c <= 57) {
      let j = i + 1;
      while (j < n && isWordChar(s.charCodeAt(j))) j++;
      // `8h`, `3rd`: a word that starts with a digit, not a number (`0x1f`, `1e5`, `2.5` are numbers).
      const t = s.slice(i, j);
      if (!push(numeric(t) ? K.Num : K.Word, t, at)) return;
      i = j;
      continue;
    }
    if (isWordChar(c)) {
      let j = i + 1;
      while (j < n && isWordChar(s.charCodeAt(j))) j++;
      const w = s.slice(i, j);
      i = j;
      // A function: a word followed (after spaces or comments) by `(`.
      let k = j;
      while (k < n && (s.charCodeAt(k) === 32 || s.charCodeAt(k) === 10)) k++;
      if (s.charCodeAt(k) === 47 && s.charCodeAt(k + 1) === 42) {
        const end = s.indexOf('*/', k + 2);
        if (end > 0) {
          k = end + 2;
          while (k < n && s.charCodeAt(k) === 32) k++;
        }
      }
      const isCall = s.charCodeAt(k) === 40;
      let kind: K;
      if (BOOL.has(w)) kind = K.Bool;
      else if (w === 'not') kind = K.Not;
      else if (w === 'union') kind = K.Union;
      else if (w === 'select') kind = K.Select;
      else if (STMT.has(w)) kind = K.Stmt;
      else if (isCall) kind = K.Func;
      else if (KW.has(w)) kind = K.Kw;
      else kind = K.Word;
      if (!push(kind, w, at)) return;
      continue;
    }
    if (c === 40) {
      if (!push(K.LPar, '(', at)) return;
      i++;
      continue;
    }
    if (c === 41) {
      if (!push(K.RPar, ')', at)) return;
      i++;
      continue;
    }
    if (c === 44) {
      if (!push(K.Comma, ',', at)) return;
      i++;
      continue;
    }
    if (c === 59) {
      if (!push(K.Semi, ';', at)) return;
      i++;
      continue;
    }
    if ((c === 38 && s.charCodeAt(i + 1) === 38) || (c === 124 && s.charCodeAt(i + 1) === 124)) {
      if (!push(K.Bool, s.slice(i, i + 2), at)) return;
      i += 2;
      continue;
    }
    if (
      c === 61 ||
      c === 60 ||
      c === 62 ||
      c === 33 ||
      c === 43 ||
      c === 45 ||
      c === 42 ||
      c === 47 ||
      c === 37 ||
      c === 94 ||
      c === 124 ||
      c === 38 ||
      c === 126
    ) {
      let j = i + 1;
      const d = s.charCodeAt(j);
      if (d === 61 || d === 62 || (c === 60 && d === 62)) j++;
      if (!push(K.Op, s.slice(i, j), at)) return;
      i = j;
      continue;
    }
    if (!push(K.Other, s[i], at)) return;
    i++;
  }
}

/** A SQL numeric literal: digits with a point or an exponent, or hex (`0x…`). */
function numeric(t: string): boolean {
  if (t.length > 2 && t.charCodeAt(0) === 48 && (t.charCodeAt(1) === 120 || t.charCodeAt(1) === 98)) return true;
  for (let i = 0; i < t.length; i++) {
    const c = t.charCodeAt(i);
    if (!((c >= 48 && c <= 57) || c === 46 || c === 101)) return false;
  }
  return true;
}

/** Index of the quote closing a string whose content starts at `from` (`\x` and a doubled quote escape), or -1. */
function closeQuote(s: string, from: number, q: number): number {
  for (let i = from; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 92) {
      i++;
      continue;
    }
    if (c === q) {
      if (s.charCodeAt(i + 1) === q) {
        i++;
        continue;
      }
      return i;
    }
  }
  return -1;
}

/** A literal a comparison can be made of. */
function atom(k: K | undefined): boolean {
  return k === K.Num || k === K.Str || k === K.Open || k === K.Word || k === K.Var;
}
function comparison(i: number): boolean {
  const k = kinds[i];
  if (k === K.Op) {
    const t = texts[i];
    return t === '=' || t === '<>' || t === '!=' || t === '<' || t === '>' || t === '<=' || t === '>=' || t === '<=>';
  }
  return (k === K.Kw || k === K.Word) && CMP_WORDS.has(texts[i]);
}
/** Skips comments from `i`. */
function skipC(i: number): number {
  while (kinds[i] === K.Comment) i++;
  return i;
}

/** `or 1=1`, `and 'a'='a'`, `or x like x`, `or not 2>3` from the Bool token at `i`; literals on the left, or equal sides. */
function tautologyAt(i: number): boolean {
  let j = skipC(i + 1);
  if (kinds[j] === K.Not) j = skipC(j + 1);
  while (kinds[j] === K.LPar) j = skipC(j + 1);
  const left = j;
  if (!atom(kinds[left])) return false;
  let op = skipC(left + 1);
  // arithmetic on the left side: `or 3*2=6`, `or 1+1=2`
  for (let k = 0; k < 4 && kinds[op] === K.Op && ARITH.has(texts[op]) && atom(kinds[skipC(op + 1)]); k++)
    op = skipC(skipC(op + 1) + 1);
  if (kinds[op] === K.Not) op = skipC(op + 1);
  if (!comparison(op)) return false;
  let right = skipC(op + 1);
  while (kinds[right] === K.LPar) right = skipC(right + 1);
  const rk = kinds[right];
  if (!atom(rk) && rk !== K.Func && rk !== K.Select && rk !== K.Kw) return false;
  const lk = kinds[left];
  if (lk === K.Num || lk === K.Str || lk === K.Open || lk === K.Var) return true;
  return texts[left] === texts[right];
}

export interface SqlFinding {
  id: string;
  pl: number;
  at: number;
}

const STMT_OBJECT = new Set([
  'table',
  'database',
  'schema',
  'user',
  'procedure',
  'function',
  'view',
  'index',
  'trigger',
]);

/** A second statement starting at token `i` (after `;`): its shape, or false for prose. */
function statementAt(i: number): boolean {
  const k = kinds[i];
  const t = texts[i];
  const next = skipC(i + 1);
  if (k === K.Select) return selectShape(i, 12) || kinds[next] === K.Num || kinds[next] === K.Func;
  if (k !== K.Stmt) return false;
  switch (t) {
    case 'drop':
    case 'alter':
    case 'create':
    case 'truncate':
      return STMT_OBJECT.has(texts[next]) || texts[next] === 'table';
    case 'shutdown':
      return true;
    case 'exec':
    case 'execute':
      return (
        kinds[next] === K.Func ||
        kinds[next] === K.Str ||
        kinds[next] === K.LPar ||
        texts[next]?.startsWith('xp_') ||
        texts[next]?.startsWith('sp_') ||
        texts[next]?.startsWith('master.')
      );
    case 'declare':
      return kinds[next] === K.Var;
    case 'insert':
      return texts[next] === 'into';
    case 'update':
      return texts[skipC(next + 1)] === 'set';
    case 'delete':
      return texts[next] === 'from';
    case 'waitfor':
      return texts[next] === 'delay' || texts[next] === 'time';
    case 'grant':
    case 'revoke':
      return texts[next] === 'all' || kinds[skipC(next + 1)] === K.Kw;
    default:
      return false;
  }
}

/** What follows `select` in a query rather than in prose: literals, calls, `*`, or a column list (`a, b` / `a from`). */
function selectList(j: number): boolean {
  let k = kinds[j];
  if (k === K.Kw && (texts[j] === 'all' || texts[j] === 'distinct' || texts[j] === 'top')) {
    j = skipC(j + 1);
    k = kinds[j];
  }
  if (k === K.Num || k === K.Str || k === K.Open || k === K.Var || k === K.Func || k === K.LPar) return true;
  if (k === K.Op) return texts[j] === '*' || texts[j] === '-';
  if (k === K.Kw) return texts[j] === 'null' || texts[j] === 'user' || texts[j] === 'database';
  if (k === K.Word) {
    const next = kinds[skipC(j + 1)];
    return next === K.Comma || (next === K.Kw && texts[skipC(j + 1)] === 'from') || texts[j].indexOf('.') > 0;
  }
  return false;
}

/** `select` at `i` followed within `span` tokens by `from` with something only SQL writes between (`*`, `,`, a call). */
function selectShape(i: number, span: number): boolean {
  let sqlish = false;
  for (let j = i + 1; j < kinds.length && j <= i + span; j++) {
    const k = kinds[j];
    if (k === K.Kw && texts[j] === 'from') return sqlish;
    if ((k === K.Op && texts[j] === '*') || k === K.Comma || k === K.Func || k === K.Var || k === K.Num) sqlish = true;
  }
  return false;
}

/** Findings of one reading of the value (the token arrays hold it). `broke`: the reading began inside a string. */
function scan(broke: boolean, pl: number, out: SqlFinding[]): void {
  const n = kinds.length;
  const first = broke ? skipC(1) : 0;
  if (broke && first > 1)
    out.push({ id: '942150', pl: 1, at: starts[1] }); // `'--`, `'#`, `'/*`: the rest commented out
  else if (broke && first < n) {
    // What follows the closing quote decides: prose goes on with words, injections with operators and statements.
    const k = kinds[first];
    const after = skipC(first + 1);
    const ak = kinds[after];
    if (
      k === K.Bool &&
      (atom(ak) ||
        ak === K.LPar ||
        ak === K.Not ||
        ak === K.Func ||
        ak === K.Select ||
        (ak === K.Kw && (texts[after] === 'true' || texts[after] === 'false' || texts[after] === 'null')))
    )
      out.push({ id: '942160', pl: 1, at: starts[first] });
    else if (k === K.Semi && (statementAt(after) || kinds[after] === K.Select || kinds[after] === K.Stmt))
      out.push({ id: '942170', pl: 1, at: starts[first] });
    else if (k === K.Union) out.push({ id: '942180', pl: 1, at: starts[first] });
    else if (
      k === K.RPar &&
      (kinds[after] === K.Bool ||
        kinds[after] === K.Union ||
        kinds[after] === K.Semi ||
        kinds[after] === K.Comment ||
        after >= n)
    )
      out.push({ id: '942180', pl: 1, at: starts[first] });
    else if (
      k === K.Kw &&
      (texts[first] === 'having' ||
        texts[first] === 'order' ||
        texts[first] === 'group' ||
        texts[first] === 'procedure' ||
        texts[first] === 'into' ||
        texts[first] === 'limit' ||
        texts[first] === 'where')
    )
      out.push({ id: '942190', pl: 1, at: starts[first] });
    else if (
      k === K.Op &&
      (texts[first] === '||' || texts[first] === '+' || texts[first] === '|') &&
      (kinds[after] === K.Func || kinds[after] === K.LPar || kinds[after] === K.Select)
    )
      out.push({ id: '942200', pl: 1, at: starts[first] });
    else if (k === K.Op && (kinds[after] === K.Str || kinds[after] === K.Open || kinds[after] === K.Num)) {
      if (pl >= 2) out.push({ id: '942210', pl: 2, at: starts[first] });
    } else if (pl >= 3 && (k === K.Op || k === K.RPar || k === K.Semi || k === K.Comma))
      out.push({ id: '942220', pl: 3, at: starts[first] });
  }
  let lastFrom = -1;
  let firstSelect = -1;
  for (let i = 0; i < n; i++) {
    const k = kinds[i];
    const t = texts[i];
    if (k === K.Union) {
      let j = skipC(i + 1);
      if (texts[j] === 'all' || texts[j] === 'distinct') j = skipC(j + 1);
      while (kinds[j] === K.LPar) j = skipC(j + 1);
      if (kinds[j] === K.Select && selectList(skipC(j + 1))) out.push({ id: '942100', pl: 1, at: starts[i] });
    } else if (k === K.Bool && i > 0 && tautologyAt(i)) {
      out.push({ id: '942130', pl: 1, at: starts[i] });
    } else if (k === K.Semi && statementAt(skipC(i + 1))) {
      out.push({ id: '942170', pl: 1, at: starts[i] });
    } else if (k === K.Func) {
      const args = skipC(i + 1);
      if (FATAL_FUNCS.has(t) && kinds[args] === K.LPar) {
        const a = skipC(args + 1);
        // sleep(5), benchmark(1e6,…), load_file('/etc/passwd'), extractvalue(1,…): a literal, a nested call or a
        // query as the first argument; `sleep(well)` in prose is not one.
        if (
          kinds[a] === K.Num ||
          kinds[a] === K.Str ||
          kinds[a] === K.Func ||
          kinds[a] === K.Select ||
          kinds[a] === K.LPar ||
          kinds[a] === K.Var
        )
          out.push({ id: '942110', pl: 1, at: starts[i] });
      } else if (DANGEROUS_FUNCS.has(t) && pl >= 2) {
        const prev = i > 0 ? kinds[i - 1] : undefined;
        if (prev === K.Bool || prev === K.Op || prev === K.Comma || prev === K.LPar || prev === K.Select)
          out.push({ id: '942240', pl: 2, at: starts[i] });
      }
    } else if (k === K.Stmt && t === 'waitfor' && (texts[i + 1] === 'delay' || texts[i + 1] === 'time')) {
      out.push({ id: '942110', pl: 1, at: starts[i] });
    } else if (k === K.LPar && kinds[skipC(i + 1)] === K.Select) {
      const a = skipC(skipC(i + 1) + 1);
      const ak = kinds[a];
      // a query as a function's argument (`ascii(substring((select …`), or a literal, a call or `*` selected
      const prev = i > 0 ? kinds[i - 1] : undefined;
      if (prev === K.LPar || prev === K.Func || prev === K.Comma) out.push({ id: '942120', pl: 1, at: starts[i] });
      else if (
        ak === K.Num ||
        ak === K.Func ||
        ak === K.Var ||
        ak === K.Str ||
        (ak === K.Op && texts[a] === '*') ||
        ak === K.LPar
      )
        out.push({ id: '942120', pl: 1, at: starts[i] });
    } else if (k === K.Kw && t === 'into' && (texts[i + 1] === 'outfile' || texts[i + 1] === 'dumpfile')) {
      out.push({ id: '942110', pl: 1, at: starts[i] });
    } else if (k === K.Kw && t === 'order' && texts[i + 1] === 'by' && kinds[i + 2] === K.Num && i > 0) {
      const after = i + 3;
      if (after >= n || kinds[after] === K.Comment || kinds[after] === K.Semi)
        out.push({ id: '942190', pl: 1, at: starts[i] });
    } else if (k === K.Comment && t === '/*!') {
      out.push({ id: '942140', pl: 1, at: starts[i] });
    } else if (k === K.Select && pl >= 2 && selectShape(i, 16)) {
      out.push({ id: '942250', pl: 2, at: starts[i] });
    } else if (k === K.Comment && pl >= 2 && t.startsWith('/*') && i > 0 && i + 1 < n) {
      // a comment between two tokens: whitespace evasion (`union/**/select` is caught above; this is the rest)
      out.push({ id: '942260', pl: 2, at: starts[i] });
    }
    if (k === K.Kw && t === 'from') lastFrom = i;
    else if (k === K.Select && firstSelect < 0) firstSelect = i;
  }
  if (pl >= 3 && firstSelect >= 0 && lastFrom > firstSelect) out.push({ id: '942270', pl: 3, at: starts[firstSelect] });
}

/** Catalog names: `information_schema`, `@@version`, … anywhere in the value. */
function catalogs(s: string, out: SqlFinding[]): void {
  for (const c of CATALOGS) {
    const at = s.indexOf(c);
    if (at >= 0) {
      out.push({ id: '942140', pl: 1, at });
      return;
    }
  }
}

/**
 * SQL injection findings in one folded value, at paranoia level `pl` or below. Readings: as it is, and inside a
 * '…' or "…" string when the value holds that quote.
 */
export function detectSqli(s: string, pl: number, out: SqlFinding[]): void {
  tokenize(s, 0);
  scan(false, pl, out);
  if (s.indexOf("'") >= 0) {
    tokenize(s, 39);
    if (kinds.length > 0) scan(true, pl, out);
  }
  if (s.indexOf('"') >= 0) {
    tokenize(s, 34);
    if (kinds.length > 0) scan(true, pl, out);
  }
  if (s.indexOf('@@') >= 0 || s.indexOf('_') >= 0 || s.indexOf('.') >= 0) catalogs(s, out);
  if (pl >= 4) {
    // Paranoia 4: a quote next to SQL punctuation at all.
    for (let i = 0; i < s.length; i++) {
      const c = s.charCodeAt(i);
      if (c !== 39) continue;
      const d = s.charCodeAt(i + 1);
      if (d === 59 || d === 41 || d === 45 || d === 35 || d === 61 || d === 43 || d === 124) {
        out.push({ id: '942280', pl: 4, at: i });
        break;
      }
    }
  }
}
