// The sandbox of POST /analytics/query, in two steps. Before parsing: the text is bounded (length, nesting, characters
// that hide text). After parsing with DuckDB's own parser (json_serialize_sql): the statement tree is walked and
// allowed only where it is one SELECT whose every table reference is `logs` or a CTE in scope, whose functions are
// scalar, aggregate or window functions of the engine's own catalog minus those that read settings, the catalog,
// files or the network, or build huge values. The engine runs it with external access disabled and its configuration
// locked (duckdb-store.ts), in a connection where `logs` is a view over the caller's own domains' tables only.

/** Largest query text, in UTF-16 code units (what JSON carried). */
export const MAX_QUERY_CHARS = 16_384;
/** Deepest nesting of parentheses; the statement tree walk stops at MAX_TREE_DEPTH nodes deep. */
export const MAX_PAREN_DEPTH = 64;
const MAX_TREE_DEPTH = 400;
/**
 * Subqueries nested in one another, and SELECTs in all: the engine's planning time grows about twofold with each
 * level of nested subqueries (24 levels: 20 s, 60: beyond any wait), and planning is not interruptible.
 */
export const MAX_SUBQUERY_DEPTH = 10;
export const MAX_SELECTS = 64;

/** A query refused by the sandbox: answered 400 with this text. */
export class QueryRefused extends Error {}

/**
 * Control characters other than tab, newline and carriage return; bidirectional overrides and isolates (text that
 * reads in another order than it parses), zero-width and invisible characters, the BOM.
 */
const HIDDEN =
  // eslint-disable-next-line no-control-regex
  /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u206f\ufeff]/;

/** The bounds checked before any parsing, in one linear pass. */
export function boundQueryText(query: string): void {
  if (query.trim() === '') throw new QueryRefused('query: a SELECT statement is required');
  if (query.length > MAX_QUERY_CHARS) throw new QueryRefused(`query: at most ${MAX_QUERY_CHARS} characters`);
  // A lone surrogate (not valid Unicode: it would reach the parser as U+FFFD).
  if (/\p{Cs}/u.test(query)) throw new QueryRefused('query: not valid Unicode text');
  const hidden = HIDDEN.exec(query);
  if (hidden) {
    const code = hidden[0].codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0');
    throw new QueryRefused(`query: character U+${code} at offset ${hidden.index} is not allowed`);
  }
  let depth = 0;
  for (let i = 0; i < query.length; i++) {
    const c = query.charCodeAt(i);
    if (c === 40 /* ( */ && ++depth > MAX_PAREN_DEPTH)
      throw new QueryRefused(`query: parentheses nested deeper than ${MAX_PAREN_DEPTH}`);
    else if (c === 41 /* ) */ && depth > 0) depth--;
  }
}

/**
 * Functions refused even though the catalog has them: settings, session and catalog readers, file and network
 * readers, sequences, parser entry points, and the ones that build a value far larger than their arguments.
 */
const DENIED_FUNCTION =
  /^(current_setting|current_database|current_catalog|current_schemas?|current_query|current_user|session_user|user|getvariable|getenv|version|pragma_.*|duckdb_.*|pg_.*|has_.*|.*_description|format_type|format_pg_type|txid_current|nextval|currval|read_.*|glob|sniff_csv|parquet_.*|json_serialize_.*|json_deserialize_.*|json_execute_.*|query|query_table|sql_auto_complete|which_secret|icu_.*|repeat|lpad|rpad|range|generate_series|list_resize|array_resize|bitstring|bar|printf|format|sprintf|enum_range.*|alias|checkpoint|force_checkpoint|.*secret.*|.*extension.*)$/;

/** Window-only functions (aggregates are also allowed over a window). */
const WINDOW_FUNCTIONS = new Set([
  'row_number',
  'rank',
  'dense_rank',
  'rank_dense',
  'percent_rank',
  'cume_dist',
  'ntile',
  'lag',
  'lead',
  'first_value',
  'last_value',
  'nth_value',
  'first',
  'last',
]);

/** Functions the binder handles itself, outside the catalog's list. */
const SPECIAL_FUNCTIONS = new Set(['unnest']);

/** Names of relations that exist in the engine: a CTE may not take one (its scope would be easy to misjudge). */
const RESERVED_RELATION = /^(logs|d_.*|duckdb_.*|sqlite_.*|pg_.*|information_schema|main|temp|system|memory)$/;
/** Identifiers a table reference or CTE may use: ASCII, so no case folding of ours differs from the engine's. */
const PLAIN_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type Node = { [key: string]: Json };

const isNode = (v: Json): v is Node => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Checks a json_serialize_sql answer: refuses (QueryRefused) unless it is exactly one SELECT over `logs`, CTEs in
 * scope, subqueries and VALUES, calling only `allowedFunctions` (the engine's scalar, aggregate and macro functions,
 * lower case) minus DENIED_FUNCTION.
 */
export function checkParsedQuery(serialized: string, allowedFunctions: ReadonlySet<string>): void {
  let tree: Json;
  try {
    tree = JSON.parse(serialized) as Json;
  } catch {
    throw new QueryRefused('query: could not be parsed');
  }
  if (!isNode(tree)) throw new QueryRefused('query: could not be parsed');
  if (tree.error === true) {
    const type = String(tree.error_type ?? '');
    if (type === 'not implemented') throw new QueryRefused('query: only a SELECT statement is allowed');
    throw new QueryRefused(`query: ${String(tree.error_message ?? 'syntax error')}`);
  }
  const statements = tree.statements;
  if (!Array.isArray(statements) || statements.length === 0)
    throw new QueryRefused('query: a SELECT statement is required');
  if (statements.length > 1) throw new QueryRefused('query: exactly one statement is allowed');
  new Walker(allowedFunctions).statement(statements[0], [], 0);
}

class Walker {
  private selects = 0;
  constructor(private readonly allowed: ReadonlySet<string>) {}

  statement(stmt: Json, scope: readonly string[], depth: number, nesting = 0): void {
    if (!isNode(stmt) || !isNode(stmt.node)) throw new QueryRefused('query: only a SELECT statement is allowed');
    if (Array.isArray(stmt.named_param_map) && stmt.named_param_map.length > 0)
      throw new QueryRefused('query: parameters are not supported');
    this.queryNode(stmt.node, scope, depth + 1, nesting);
  }

  /**
   * SELECT and set operations (UNION, EXCEPT, INTERSECT); each CTE sees only the CTEs defined before it. `nesting`:
   * how many query nodes enclose this one.
   */
  private queryNode(node: Node, scope: readonly string[], depth: number, nesting: number): void {
    this.deep(depth);
    if (nesting > MAX_SUBQUERY_DEPTH)
      throw new QueryRefused(`query: subqueries nested deeper than ${MAX_SUBQUERY_DEPTH}`);
    if (node.type === 'SELECT_NODE' && ++this.selects > MAX_SELECTS)
      throw new QueryRefused(`query: more than ${MAX_SELECTS} SELECTs`);
    if (node.type !== 'SELECT_NODE' && node.type !== 'SET_OPERATION_NODE') {
      const what = node.type === 'RECURSIVE_CTE_NODE' ? 'recursive CTEs are' : `${String(node.type)} is`;
      throw new QueryRefused(`query: ${what} not allowed`);
    }
    let inner = scope;
    const cteMap = node.cte_map;
    const ctes = isNode(cteMap) && Array.isArray(cteMap.map) ? cteMap.map : [];
    for (const entry of ctes) {
      if (!isNode(entry) || typeof entry.key !== 'string' || !isNode(entry.value))
        throw new QueryRefused('query: could not be parsed');
      const name = asciiLower(entry.key);
      if (!PLAIN_NAME.test(entry.key) || RESERVED_RELATION.test(name))
        throw new QueryRefused(`query: a CTE may not be named ${JSON.stringify(entry.key)}`);
      this.statement(entry.value.query, inner, depth + 1, nesting + 1);
      for (const [k, v] of Object.entries(entry.value)) if (k !== 'query') this.any(v, inner, depth + 1, nesting);
      inner = [...inner, name];
    }
    // The operands of UNION, EXCEPT and INTERSECT are side by side, not nested.
    const within = node.type === 'SET_OPERATION_NODE' ? nesting : nesting + 1;
    for (const [key, value] of Object.entries(node)) if (key !== 'cte_map') this.any(value, inner, depth + 1, within);
  }

  /** Any part of the tree; `nesting`: the query nodes around it. */
  private any(v: Json, scope: readonly string[], depth: number, nesting: number): void {
    this.deep(depth);
    if (Array.isArray(v)) {
      for (const item of v) this.any(item, scope, depth + 1, nesting);
      return;
    }
    if (!isNode(v)) return;
    if (typeof v.class === 'string') this.expression(v);
    else if (typeof v.type === 'string' && 'alias' in v && 'sample' in v && 'query_location' in v) {
      this.tableRef(v, scope, depth, nesting);
      return;
    } else if (typeof v.type === 'string' && v.type.endsWith('_NODE') && 'modifiers' in v) {
      this.queryNode(v, scope, depth, nesting);
      return;
    } else if ('node' in v && 'named_param_map' in v) {
      this.statement(v, scope, depth, nesting);
      return;
    }
    for (const value of Object.values(v)) this.any(value, scope, depth + 1, nesting);
  }

  private tableRef(ref: Node, scope: readonly string[], depth: number, nesting: number): void {
    switch (ref.type) {
      case 'BASE_TABLE': {
        const name = String(ref.table_name ?? '');
        if (ref.schema_name || ref.catalog_name)
          throw new QueryRefused(`query: only the relation logs may be read (not ${qualified(ref)})`);
        if (ref.at_clause !== null && ref.at_clause !== undefined)
          throw new QueryRefused('query: AT (time travel) is not allowed');
        const lower = asciiLower(name);
        if (!PLAIN_NAME.test(name) || (lower !== 'logs' && !scope.includes(lower)))
          throw new QueryRefused(`query: only the relation logs may be read (not ${JSON.stringify(name)})`);
        break;
      }
      case 'JOIN':
      case 'SUBQUERY':
      case 'EMPTY':
      case 'EXPRESSION_LIST':
        break;
      case 'TABLE_FUNCTION': {
        const fn = isNode(ref.function) ? String(ref.function.function_name ?? '') : '';
        throw new QueryRefused(`query: table functions are not allowed (${fn}); read the relation logs`);
      }
      case 'SHOW_REF':
        throw new QueryRefused(
          'query: DESCRIBE, SHOW and SUMMARIZE are not allowed; the columns of logs are documented',
        );
      default:
        throw new QueryRefused(`query: ${String(ref.type).toLowerCase()} in FROM is not allowed`);
    }
    for (const [key, value] of Object.entries(ref)) if (key !== 'at_clause') this.any(value, scope, depth + 1, nesting);
  }

  private expression(e: Node): void {
    if (e.class === 'PARAMETER') throw new QueryRefused('query: parameters are not supported');
    if (e.class !== 'FUNCTION' && e.class !== 'WINDOW') return;
    const name = asciiLower(String(e.function_name ?? ''));
    if ((e.schema ?? '') !== '' || (e.catalog ?? '') !== '')
      throw new QueryRefused(`query: function ${JSON.stringify(name)} with a schema is not allowed`);
    const known =
      this.allowed.has(name) || SPECIAL_FUNCTIONS.has(name) || (e.class === 'WINDOW' && WINDOW_FUNCTIONS.has(name));
    if (!known || DENIED_FUNCTION.test(name)) throw new QueryRefused(`query: function ${name}() is not allowed`);
  }

  private deep(depth: number): void {
    if (depth > MAX_TREE_DEPTH) throw new QueryRefused('query: nested too deeply');
  }
}

function qualified(ref: Node): string {
  return [ref.catalog_name, ref.schema_name, ref.table_name].filter((p) => p).join('.');
}

/** Lower case of ASCII letters only: the engine folds identifiers the same way. */
function asciiLower(s: string): string {
  return s.replace(/[A-Z]/g, (c) => String.fromCharCode(c.charCodeAt(0) + 32));
}
