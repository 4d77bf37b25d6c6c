// Captures of the path pattern that matched ($1..$9 in redirect targets and rewrite paths).
import { RegexPattern, WildcardPattern } from '@platform/shared/match';

export type CapturePattern = WildcardPattern | RegexPattern;

/** Patterns with groups for the include patterns: each `*` of a wildcard is a group; regexes keep their own groups. */
export function capturePatterns(pathMatchType: string, includes: readonly string[]): CapturePattern[] {
  return includes.map((p) => (pathMatchType === 'regex' ? new RegexPattern(p) : new WildcardPattern(p)));
}

/** The groups of the first include pattern that matches `path` ([] when none has groups or none matches). */
export function capturesOf(patterns: readonly CapturePattern[], path: string): string[] {
  for (const p of patterns) {
    const groups = p.captures(path);
    if (groups !== null) return groups;
  }
  return [];
}

/** Replaces $1..$9 in `template` with the captures (missing ones become ''). */
export function expandTemplate(template: string, caps: readonly string[]): string {
  if (!template.includes('$')) return template;
  return template.replace(/\$([1-9])/g, (_, d: string) => caps[Number(d) - 1] ?? '');
}
