// The host and path matchers as they were before issue 10 (commit ae3c004, shared/src/match/{host,path}.ts): every
// wildcard but `prefix*` and `*.suffix`, and every user regex, compiled to a backtracking V8 RegExp. Kept here only so
// rules.bench.ts can measure today's engine against it in the same run; nothing else may import this file.
import { DEFAULT_PATH_INCLUDES, normaliseHost, type HostMatchType, type PathMatchType } from '@platform/shared/match';

function escapeRegex(s: string): string {
  return s.replace(/[.+?^${}()|[\]\\]/g, '\\$&');
}

class V8HostPatternSet {
  readonly exact = new Set<string>();
  readonly suffixes = new Set<string>();
  /** `regexes` before; named like today's field so the rule index buckets both the same way. */
  readonly patterns: RegExp[] = [];
  constructor(type: HostMatchType, entries: readonly string[]) {
    for (const raw of entries) {
      if (type === 'regex') {
        this.patterns.push(new RegExp(raw, 'i'));
        continue;
      }
      const h = normaliseHost(raw);
      if (type === 'exact' || !h.includes('*')) this.exact.add(h);
      else if (h.startsWith('*.') && !h.slice(2).includes('*')) this.suffixes.add(h.slice(1));
      else this.patterns.push(new RegExp(`^${h.split('*').map(escapeRegex).join('.+')}$`));
    }
  }
  get empty(): boolean {
    return this.exact.size === 0 && this.suffixes.size === 0 && this.patterns.length === 0;
  }
  has(host: string): boolean {
    if (this.exact.has(host)) return true;
    if (this.suffixes.size > 0) {
      for (let i = host.indexOf('.'); i > 0; i = host.indexOf('.', i + 1)) {
        if (this.suffixes.has(host.slice(i))) return true;
      }
    }
    for (const re of this.patterns) if (re.test(host)) return true;
    return false;
  }
}

export class V8HostFilter {
  readonly includes: V8HostPatternSet;
  readonly excludes: V8HostPatternSet;
  constructor(
    readonly type: HostMatchType,
    includes: readonly string[],
    excludes: readonly string[],
  ) {
    this.includes = new V8HostPatternSet(type, includes);
    this.excludes = new V8HostPatternSet(type, excludes);
  }
  matches(host: string): boolean {
    if (this.type === '') return true;
    if (!this.excludes.empty && this.excludes.has(host)) return false;
    return this.includes.empty || this.includes.has(host);
  }
}

class V8PathPatternSet {
  readonly exact = new Set<string>();
  readonly prefixes: string[] = [];
  readonly patterns: RegExp[] = [];
  readonly all: boolean = false;
  constructor(type: PathMatchType, entries: readonly string[]) {
    for (const p of entries) {
      if (type === 'regex') {
        this.patterns.push(new RegExp(p));
        continue;
      }
      const star = p.indexOf('*');
      if (star < 0) this.exact.add(p);
      else if (star === p.length - 1) {
        if (p === '*' || p === '/*') this.all = true;
        this.prefixes.push(p.slice(0, -1));
      } else this.patterns.push(new RegExp(`^${p.split('*').map(escapeRegex).join('.*')}$`));
    }
  }
  get empty(): boolean {
    return this.exact.size === 0 && this.prefixes.length === 0 && this.patterns.length === 0;
  }
  has(path: string): boolean {
    if (this.all || this.exact.has(path)) return true;
    for (const p of this.prefixes) if (path.startsWith(p)) return true;
    for (const re of this.patterns) if (re.test(path)) return true;
    return false;
  }
}

export class V8PathFilter {
  readonly includes: V8PathPatternSet;
  readonly excludes: V8PathPatternSet;
  constructor(type: PathMatchType, includes: readonly string[], excludes: readonly string[]) {
    this.includes =
      includes.length > 0
        ? new V8PathPatternSet(type, includes)
        : new V8PathPatternSet('wildcard', DEFAULT_PATH_INCLUDES);
    this.excludes = new V8PathPatternSet(type, excludes);
  }
  get all(): boolean {
    return this.includes.all && this.excludes.empty;
  }
  matches(path: string): boolean {
    if (!this.excludes.empty && this.excludes.has(path)) return false;
    return this.includes.has(path);
  }
}
