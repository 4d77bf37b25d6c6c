// error_page: replace the body of origin or edge answers whose status is in the rule's statuses or ranges.
import type { RuleBody } from '@platform/shared/match';

export interface ErrorPageAction {
  ranges: [number, number][];
  body: Buffer;
  contentType: string;
}

export function compileErrorPage(f: RuleBody): ErrorPageAction {
  const ranges = ((f.statuses as string[]) ?? []).map((s): [number, number] => {
    const [a, b] = s.split('-').map(Number);
    return [a, b ?? a];
  });
  return {
    ranges,
    body: Buffer.from(String(f.body ?? '')),
    contentType: String(f.content_type ?? 'text/html; charset=utf-8'),
  };
}

export function coversStatus(a: ErrorPageAction, status: number): boolean {
  for (const [lo, hi] of a.ranges) if (status >= lo && status <= hi) return true;
  return false;
}
