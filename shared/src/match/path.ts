// Path matching for rules: wildcard (`*` = any characters, whole path) or regex (unanchored), compiled once.
import { regexProblem, RegexPattern } from './linear-regex.js';
import { WildcardPattern } from './wildcard.js';

export type PathMatchType = 'wildcard' | 'regex';
export const PATH_MATCH_TYPES: readonly PathMatchType[] = ['wildcard', 'regex'];
/** path_includes when absent or empty (spec Rule table). */
export const DEFAULT_PATH_INCLUDES: readonly string[] = ['/*'];

/** Why `entry` is not a valid path entry of `type`, or undefined when it is. */
export function pathEntryProblem(type: PathMatchType, entry: unknown): string | undefined {
  if (typeof entry !== 'string' || entry === '') return 'must be a non-empty string';
  if (entry.length > 2048) return 'longer than 2048 characters';
  if (type === 'regex') return regexProblem(entry);
  if (!entry.startsWith('/') && !entry.startsWith('*')) return `"${entry}" must start with "/" or "*"`;
  return undefined;
}

/**
 * A compiled list of path patterns: exact paths in a Set, `prefix*` patterns as a prefix list, everything else
 * (inner wildcards, RE2 regexes) as patterns. A wildcard pattern matches the whole path (`/img/*` matches
 * `/img/a.png`, not `/img`).
 */
export class PathPatternSet {
  readonly exact = new Set<string>();
  readonly prefixes: string[] = [];
  readonly patterns: (WildcardPattern | RegexPattern)[] = [];
  /** True when one pattern is `*` or `/*`: every path matches. */
  readonly all: boolean = false;

  constructor(type: PathMatchType, entries: readonly string[]) {
    for (const p of entries) {
      if (type === 'regex') {
        this.patterns.push(new RegexPattern(p));
        continue;
      }
      const star = p.indexOf('*');
      if (star < 0) this.exact.add(p);
      else if (star === p.length - 1) {
        if (p === '*' || p === '/*') this.all = true;
        this.prefixes.push(p.slice(0, -1));
      } else this.patterns.push(new WildcardPattern(p));
    }
  }

  get empty(): boolean {
    return this.exact.size === 0 && this.prefixes.length === 0 && this.patterns.length === 0;
  }

  has(path: string): boolean {
    if (this.all || this.exact.has(path)) return true;
    for (const p of this.prefixes) if (path.startsWith(p)) return true;
    for (const p of this.patterns) if (p.test(path)) return true;
    return false;
  }
}

/** The path filter of one rule: default includes `[/*]`, excludes beat includes. */
export class PathFilter {
  readonly includes: PathPatternSet;
  readonly excludes: PathPatternSet;
  constructor(type: PathMatchType, includes: readonly string[], excludes: readonly string[]) {
    this.includes =
      includes.length > 0 ? new PathPatternSet(type, includes) : new PathPatternSet('wildcard', DEFAULT_PATH_INCLUDES);
    this.excludes = new PathPatternSet(type, excludes);
  }

  /** True when the filter lets every path through (no excludes, includes `/*`). */
  get all(): boolean {
    return this.includes.all && this.excludes.empty;
  }

  matches(path: string): boolean {
    if (!this.excludes.empty && this.excludes.has(path)) return false;
    return this.includes.has(path);
  }
}
