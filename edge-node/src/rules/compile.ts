// Compiles a domain's rule set once per snapshot into per-type indexes whose per-request cost barely grows with the
// number of rules: exact-host maps, wildcard-suffix maps and first-path-segment maps pick the few candidates, and
// only those run their full filter (records, host, IP ranges by binary search, path).
import { decodeRuleBody, HostFilter, IpRangeSet, PathFilter, type RuleBody } from '@platform/shared/match';
import type { EngineRuleType } from './index.js';
import type { Rule } from '@platform/shared/config';
import { firstSegment, type RequestContext } from '../context.js';

/** One compiled rule: its filters and the action its type compiled from the fields. */
export interface CompiledRule<A = unknown> {
  id: number;
  type: string;
  priority: number;
  /** Position in (priority, id) order among the rules of its type: candidates are merged by it. */
  order: number;
  dryRun: boolean;
  records: Set<number> | null;
  host: HostFilter;
  path: PathFilter;
  ipIncludes: IpRangeSet | null;
  ipExcludes: IpRangeSet | null;
  fields: RuleBody;
  action: A;
  /** Evaluation stamp: a rule found through two buckets is looked at once per evaluation. */
  stamp: number;
}

export type ActionCompiler = (
  fields: RuleBody,
  rule: { id: number; pathMatchType: string; pathIncludes: string[] },
) => unknown;

/** True when the rule's filters all accept the request. */
export function ruleMatches(r: CompiledRule, ctx: RequestContext): boolean {
  if (r.records !== null && !r.records.has(ctx.recordId)) return false;
  if (!r.host.matches(ctx.host)) return false;
  if (r.ipExcludes !== null && r.ipExcludes.has(ctx.peer)) return false;
  if (r.ipIncludes !== null && !r.ipIncludes.has(ctx.peer)) return false;
  return r.path.matches(ctx.path);
}

let evalStamp = 0;
/**
 * Up to this many rules of a type, a plain walk in order beats the bucket merge (bench/edge-node/rules.bench.ts:
 * 10 rules, linear 1.2M ops/s against indexed 0.76M; the two meet between 10 and 100 rules).
 */
const LINEAR_MAX = 16;

/** The rules of one type, bucketed. Buckets are sorted by `order`. */
export class RuleIndex<A = unknown> {
  private readonly hostExact = new Map<string, CompiledRule<A>[]>();
  private readonly hostSuffix = new Map<string, CompiledRule<A>[]>();
  private readonly segment = new Map<string, CompiledRule<A>[]>();
  private readonly generic: CompiledRule<A>[] = [];
  private readonly lists: CompiledRule<A>[][] = [];
  private readonly pos: number[] = [];
  /**
   * When every rule's path filter names its first segments (segmentKeys: exact paths, `/seg/…` prefixes and
   * patterns, regexes anchored at one), those segments: a request whose path starts with none of them matches no
   * rule of the index and walks none. null when some rule may match any path.
   */
  private readonly segmentGate: Set<string> | null;
  readonly size: number;

  constructor(readonly rules: CompiledRule<A>[]) {
    this.size = rules.length;
    const push = (m: Map<string, CompiledRule<A>[]>, k: string, r: CompiledRule<A>) => {
      const l = m.get(k);
      if (l) {
        if (l[l.length - 1] !== r) l.push(r);
      } else m.set(k, [r]);
    };
    let gate: Set<string> | null = new Set();
    for (const r of rules) {
      const keys = segmentKeys(r.path);
      if (keys === null) gate = null;
      else if (gate !== null) for (const k of keys) gate.add(k);
    }
    this.segmentGate = gate;
    for (const r of rules) {
      const inc = r.host.includes;
      if (r.host.type !== '' && !inc.empty && inc.patterns.length === 0) {
        for (const h of inc.exact) push(this.hostExact, h, r);
        for (const s of inc.suffixes) push(this.hostSuffix, s, r);
        continue;
      }
      const keys = segmentKeys(r.path);
      if (keys) for (const k of keys) push(this.segment, k, r);
      else this.generic.push(r);
    }
  }

  /**
   * Walks the candidates for `ctx` in (priority, id) order. With `out` null it returns the first matching rule;
   * otherwise it appends every matching rule to `out` and returns undefined. Dry-run matches are reported to the
   * context and skipped (they pass the request) when `honourDryRun`. No closure is made per call (hot path).
   */
  private walk(ctx: RequestContext, honourDryRun: boolean, out: CompiledRule<A>[] | null): CompiledRule<A> | undefined {
    if (this.size === 0) return undefined;
    if (this.segmentGate !== null && !this.segmentGate.has(ctx.firstSegment())) return undefined;
    if (this.size <= LINEAR_MAX) {
      for (const r of this.rules) {
        if (!ruleMatches(r, ctx)) continue;
        if (honourDryRun && r.dryRun) {
          ctx.hit(r.id, r.type, true);
          continue;
        }
        if (out === null) return r;
        out.push(r);
      }
      return undefined;
    }
    const lists = this.lists;
    lists.length = 0;
    const exact = this.hostExact.get(ctx.host);
    if (exact) lists.push(exact);
    if (this.hostSuffix.size > 0) {
      const h = ctx.host;
      for (let i = h.indexOf('.'); i > 0; i = h.indexOf('.', i + 1)) {
        const l = this.hostSuffix.get(h.slice(i));
        if (l) lists.push(l);
      }
    }
    if (this.segment.size > 0) {
      const l = this.segment.get(ctx.firstSegment());
      if (l) lists.push(l);
    }
    if (this.generic.length > 0) lists.push(this.generic);
    if (lists.length === 0) return undefined;
    const stamp = ++evalStamp;
    const pos = this.pos;
    for (let i = 0; i < lists.length; i++) pos[i] = 0;
    for (;;) {
      // k-way merge by order; k is small (host bucket, a few suffixes, a segment bucket, the generic list).
      let best = -1;
      let bestOrder = Infinity;
      for (let i = 0; i < lists.length; i++) {
        const l = lists[i];
        if (pos[i] < l.length && l[pos[i]].order < bestOrder) {
          best = i;
          bestOrder = l[pos[i]].order;
        }
      }
      if (best < 0) return undefined;
      const r = lists[best][pos[best]++];
      if (r.stamp === stamp) continue;
      r.stamp = stamp;
      if (!ruleMatches(r, ctx)) continue;
      if (honourDryRun && r.dryRun) {
        ctx.hit(r.id, r.type, true);
        continue;
      }
      if (out === null) return r;
      out.push(r);
    }
  }

  /** The first matching enforced rule (dry-run matches are logged on the way), or undefined. */
  first(ctx: RequestContext, honourDryRun = true): CompiledRule<A> | undefined {
    return this.walk(ctx, honourDryRun, null);
  }

  /** Appends every matching enforced rule to `out`, in priority order; returns `out`. */
  all(ctx: RequestContext, out: CompiledRule<A>[], honourDryRun = true): CompiledRule<A>[] {
    this.walk(ctx, honourDryRun, out);
    return out;
  }

  /** Calls `visit` for each matching enforced rule in order until it returns true (convenience; not for the hot path). */
  each(ctx: RequestContext, visit: (r: CompiledRule<A>) => boolean, honourDryRun = true): void {
    for (const r of this.all(ctx, [], honourDryRun)) if (visit(r)) return;
  }
}

/**
 * First-segment keys of a path filter whose includes all start with a whole first segment: exact paths, `prefix*`,
 * inner wildcards (`/img/*.png`) and regexes anchored at one (`^/api/v[0-9]+/`).
 */
function segmentKeys(path: PathFilter): string[] | null {
  const inc = path.includes;
  if (inc.all) return null;
  const keys: string[] = [];
  for (const p of inc.patterns) {
    if (p.leadingSegment === null) return null;
    keys.push(p.leadingSegment);
  }
  for (const p of inc.exact) keys.push(firstSegment(p));
  for (const p of inc.prefixes) {
    const i = p.indexOf('/', 1);
    if (!p.startsWith('/') || i < 0) return null;
    keys.push(p.slice(0, i));
  }
  return keys.length > 0 ? keys : null;
}

/**
 * Compiles one rule (the type's own compiler for the action); throws on a body it cannot read. `order` is set when
 * the rule is indexed (indexRules).
 */
export function compileRule(rule: Rule, compile: ActionCompiler): CompiledRule {
  const f = decodeRuleBody(rule.body);
  const hostIncludes = f.host_pattern ? [...f.host_includes, f.host_pattern] : f.host_includes;
  return {
    id: rule.id,
    type: rule.type,
    priority: rule.priority,
    order: -1,
    dryRun: f.action_mode === 'dry_run' && rule.type !== 'cache',
    records: f.record_ids.length > 0 ? new Set(f.record_ids) : null,
    host: new HostFilter(f.host_match_type, hostIncludes, f.host_excludes),
    path: new PathFilter(f.path_match_type, f.path_includes, f.path_excludes),
    ipIncludes: f.ip_includes.length > 0 ? new IpRangeSet(f.ip_includes) : null,
    ipExcludes: f.ip_excludes.length > 0 ? new IpRangeSet(f.ip_excludes) : null,
    fields: f,
    action: compile(f, { id: rule.id, pathMatchType: f.path_match_type, pathIncludes: f.path_includes }),
    stamp: 0,
  };
}

/**
 * The index of one type's compiled rules, given in any order: sorted by (priority, id), each with its position as
 * `order`. A rule whose position moved is copied rather than changed, so an index still in use by a request keeps
 * its own order.
 */
export function indexRules(rules: Iterable<CompiledRule>): RuleIndex {
  const sorted = [...rules].sort((a, b) => a.priority - b.priority || a.id - b.id);
  for (let i = 0; i < sorted.length; i++) {
    const r = sorted[i];
    if (r.order === -1)
      r.order = i; // not in any index yet
    else if (r.order !== i) sorted[i] = { ...r, order: i, stamp: 0 };
  }
  return new RuleIndex(sorted);
}

/** Compiles the rules of a set into one index per type, with the type's own compiler for the action. */
export function compileRuleSet(
  rules: readonly Rule[],
  compilers: Readonly<Partial<Record<EngineRuleType, ActionCompiler>>>,
  onError: (rule: Rule, err: unknown) => void,
): Map<EngineRuleType, RuleIndex> {
  const byType = new Map<EngineRuleType, CompiledRule[]>();
  for (const rule of rules) {
    const type = rule.type as EngineRuleType;
    const compile = Object.hasOwn(compilers, type) ? compilers[type] : undefined;
    if (!rule.enabled || compile === undefined) continue;
    let c: CompiledRule;
    try {
      c = compileRule(rule, compile);
    } catch (err) {
      onError(rule, err);
      continue;
    }
    const list = byType.get(type);
    if (list) list.push(c);
    else byType.set(type, [c]);
  }
  const out = new Map<EngineRuleType, RuleIndex>();
  for (const [type, list] of byType) out.set(type, indexRules(list));
  return out;
}
