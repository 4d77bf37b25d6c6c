// header: set/add/remove request headers (towards the origin) and response headers (towards the client).
import type { RuleBody } from '@platform/shared/match';

export interface HeaderOp {
  op: 'set' | 'add' | 'remove';
  name: string;
  value: string;
}
export interface HeaderAction {
  request: HeaderOp[];
  response: HeaderOp[];
}

function ops(v: unknown): HeaderOp[] {
  return ((v as { op: HeaderOp['op']; name: string; value?: string }[]) ?? []).map((o) => ({
    op: o.op,
    name: o.name.toLowerCase(),
    value: o.value ?? '',
  }));
}

export function compileHeader(f: RuleBody): HeaderAction {
  return { request: ops(f.request_headers), response: ops(f.response_headers) };
}

/** Applies operations to a header list in place (names lower case). */
export function applyHeaderOps(headers: [string, string][], list: readonly HeaderOp[]): void {
  for (const o of list) {
    if (o.op === 'add') {
      headers.push([o.name, o.value]);
      continue;
    }
    for (let i = headers.length - 1; i >= 0; i--) if (headers[i][0] === o.name) headers.splice(i, 1);
    if (o.op === 'set') headers.push([o.name, o.value]);
  }
}
