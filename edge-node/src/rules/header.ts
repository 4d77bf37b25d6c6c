// header: set/add/remove request headers (towards the origin) and response headers (towards the client).
import { EDGE_OWNED_HEADERS, type RuleBody } from '@platform/shared/match';

export interface HeaderOp {
  op: 'set' | 'add' | 'remove';
  name: string;
  value: string;
}
export interface HeaderAction {
  request: HeaderOp[];
  response: HeaderOp[];
}

/** The rule's operations, minus those on headers the edge owns (a rule stored before the API refused them). */
function ops(v: unknown, owned: ReadonlySet<string>): HeaderOp[] {
  return ((v as { op: HeaderOp['op']; name: string; value?: string }[]) ?? [])
    .map((o) => ({ op: o.op, name: o.name.toLowerCase(), value: o.value ?? '' }))
    .filter((o) => !owned.has(o.name));
}

export function compileHeader(f: RuleBody): HeaderAction {
  return {
    request: ops(f.request_headers, EDGE_OWNED_HEADERS.request_headers),
    response: ops(f.response_headers, EDGE_OWNED_HEADERS.response_headers),
  };
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
