// redirect: 301/302/307/308 to a target with $1..$9 from the matching path pattern, keeping the query by default.
import type { RuleBody } from '@platform/shared/match';
import { capturePatterns, capturesOf, expandTemplate, type CapturePattern } from './captures.js';

export interface RedirectAction {
  status: number;
  target: string;
  keepQuery: boolean;
  patterns: CapturePattern[];
}

export function compileRedirect(f: RuleBody, rule: { pathMatchType: string; pathIncludes: string[] }): RedirectAction {
  return {
    status: Number(f.status_code ?? 302),
    target: String(f.target),
    keepQuery: f.keep_query !== false,
    patterns: capturePatterns(rule.pathMatchType, rule.pathIncludes),
  };
}

export function redirectLocation(a: RedirectAction, path: string, query: string): string {
  const target = expandTemplate(a.target, a.target.includes('$') ? capturesOf(a.patterns, path) : []);
  if (!a.keepQuery || query === '') return target;
  return `${target}${target.includes('?') ? '&' : '?'}${query}`;
}
