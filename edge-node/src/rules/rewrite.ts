// rewrite: change the path and/or query sent to the origin (the client sees nothing).
import type { RuleBody } from '@platform/shared/match';
import { capturePatterns, capturesOf, expandTemplate, type CapturePattern } from './captures.js';

export interface RewriteAction {
  path: string | undefined;
  query: string | undefined;
  append: boolean;
  patterns: CapturePattern[];
}

export function compileRewrite(f: RuleBody, rule: { pathMatchType: string; pathIncludes: string[] }): RewriteAction {
  return {
    path: typeof f.path === 'string' ? f.path : undefined,
    query: typeof f.query === 'string' ? f.query : undefined,
    append: f.append_query === true,
    patterns: capturePatterns(rule.pathMatchType, rule.pathIncludes),
  };
}

export function applyRewrite(a: RewriteAction, path: string, query: string): { path: string; query: string } {
  const caps = a.path?.includes('$') || a.query?.includes('$') ? capturesOf(a.patterns, path) : [];
  const newPath = a.path === undefined ? path : expandTemplate(a.path, caps);
  let newQuery = query;
  if (a.query !== undefined) {
    const q = expandTemplate(a.query, caps);
    newQuery = a.append && query !== '' ? (q === '' ? query : `${query}&${q}`) : q;
  }
  return { path: newPath, query: newQuery };
}
