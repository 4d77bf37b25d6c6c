// Host matching for rules: exact, wildcard (`*.x` matches subdomains of x only) and regex, compiled once per rule set.
import { regexProblem, RegexPattern } from './linear-regex.js';
import { WildcardPattern } from './wildcard.js';

export type HostMatchType = '' | 'exact' | 'wildcard' | 'regex';
export const HOST_MATCH_TYPES: readonly HostMatchType[] = ['', 'exact', 'wildcard', 'regex'];

const HOST_CHARS = /^[a-z0-9*_.-]+$/;

/** Lower case, no trailing dot: the form hosts are compared in. */
export function normaliseHost(host: string): string {
  const h = host.trim().toLowerCase();
  return h.endsWith('.') ? h.slice(0, -1) : h;
}

/** Why `entry` is not a valid host entry of `type`, or undefined when it is. Regexes are compiled here. */
export function hostEntryProblem(type: HostMatchType, entry: unknown): string | undefined {
  if (typeof entry !== 'string' || entry.trim() === '') return 'must be a non-empty string';
  if (entry.length > 1024) return 'longer than 1024 characters';
  if (type === 'regex') return regexProblem(entry, 'i');
  const h = normaliseHost(entry);
  if (h.length > 253 || !HOST_CHARS.test(h))
    return `"${entry}" is not a host name${type === 'wildcard' ? ' pattern' : ''}`;
  if (type === 'exact' && h.includes('*')) return `"${entry}" contains "*" but host_match_type is exact`;
  return undefined;
}

/**
 * A compiled list of host patterns of one match type. Exact hosts sit in a Set, `*.suffix` patterns in a suffix
 * Set probed once per label of the host, and anything else (`api-*.x` wildcards, RE2 regexes) in a short list.
 */
export class HostPatternSet {
  readonly exact = new Set<string>();
  /** `*.x` stored as `.x`. */
  readonly suffixes = new Set<string>();
  readonly patterns: (WildcardPattern | RegexPattern)[] = [];

  constructor(type: HostMatchType, entries: readonly string[]) {
    for (const raw of entries) {
      if (type === 'regex') {
        this.patterns.push(new RegexPattern(raw, 'i'));
        continue;
      }
      const h = normaliseHost(raw);
      if (type === 'exact' || !h.includes('*')) this.exact.add(h);
      else if (h.startsWith('*.') && !h.slice(2).includes('*')) this.suffixes.add(h.slice(1));
      // Other wildcards: `*` stands for one or more characters.
      else this.patterns.push(new WildcardPattern(h, 1));
    }
  }

  get empty(): boolean {
    return this.exact.size === 0 && this.suffixes.size === 0 && this.patterns.length === 0;
  }

  /** True when `host` (already normalised) matches one of the patterns. */
  has(host: string): boolean {
    if (this.exact.has(host)) return true;
    if (this.suffixes.size > 0) {
      for (let i = host.indexOf('.'); i > 0; i = host.indexOf('.', i + 1)) {
        if (this.suffixes.has(host.slice(i))) return true;
      }
    }
    for (const p of this.patterns) if (p.test(host)) return true;
    return false;
  }
}

/** The host filter of one rule: excludes always beat includes; no includes means every host. */
export class HostFilter {
  readonly includes: HostPatternSet;
  readonly excludes: HostPatternSet;
  constructor(
    readonly type: HostMatchType,
    includes: readonly string[],
    excludes: readonly string[],
  ) {
    this.includes = new HostPatternSet(type, includes);
    this.excludes = new HostPatternSet(type, excludes);
  }

  matches(host: string): boolean {
    if (this.type === '') return true;
    if (!this.excludes.empty && this.excludes.has(host)) return false;
    return this.includes.empty || this.includes.has(host);
  }
}
