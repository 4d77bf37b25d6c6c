// The node's read view of the config: per-domain compiled snapshots (records by name, rule indexes), swapped whole
// when the node store applies a new entry.
import { componentLogger } from '@platform/shared';
import type { DomainSnapshot, ZoneRecord } from '@platform/shared/config';
import { compileRuleSet, type RuleIndex } from '../rules/compile.js';
import { RULE_COMPILERS } from '../rules/index.js';
import type { OriginPoolAction } from '../rules/origin-pool.js';

const log = componentLogger('edge-node.snapshot');
const PROXYABLE = new Set(['A', 'AAAA', 'CNAME']);
/** Domains in these states are not served by the edge (421 like an unknown host). */
const NOT_SERVED = new Set(['disabled', 'banned']);

export interface CompiledDomain {
  name: string;
  snapshot: DomainSnapshot;
  /** Relative name → the record that answers for it ('@' apex, '*.dev' wildcard); `proxied` false means not served. */
  records: Map<string, ZoneRecord>;
  rules: Map<string, RuleIndex>;
  /** origin_pool actions, for the node's active health checks. */
  poolActions: OriginPoolAction[];
  compiledAt: number;
}

export function compileDomain(snapshot: DomainSnapshot): CompiledDomain {
  const records = new Map<string, ZoneRecord>();
  for (const r of snapshot.zone?.records ?? []) {
    if (!PROXYABLE.has(r.type)) {
      if (!records.has(r.name)) records.set(r.name, { ...r, proxied: false });
      continue;
    }
    const prev = records.get(r.name);
    // The first proxied A/AAAA/CNAME of a name is its origin; a non-proxied one only counts when nothing is proxied.
    if (!prev || (!prev.proxied && r.proxied)) records.set(r.name, r);
  }
  const rules = compileRuleSet(snapshot.ruleSet?.rules ?? [], RULE_COMPILERS, (rule, err) => {
    log.error({ err, domain: snapshot.name, rule: rule.id }, 'rule failed to compile; skipped');
  });
  const poolActions = (rules.get('origin_pool')?.rules ?? []).map((r) => r.action as OriginPoolAction);
  return { name: snapshot.name, snapshot, records, rules, poolActions, compiledAt: Date.now() };
}

export interface HostMatch {
  domain: CompiledDomain;
  record: ZoneRecord;
}

export class DomainTable {
  private readonly domains = new Map<string, CompiledDomain>();

  get size(): number {
    return this.domains.size;
  }

  get(name: string): CompiledDomain | undefined {
    return this.domains.get(name);
  }

  all(): IterableIterator<CompiledDomain> {
    return this.domains.values();
  }

  /** Replaces (or removes, when `snapshot` is undefined) one domain; a snapshot that fails to compile keeps the previous one. */
  set(name: string, snapshot: DomainSnapshot | undefined): CompiledDomain | undefined {
    if (!snapshot) {
      this.domains.delete(name);
      return undefined;
    }
    try {
      const c = compileDomain(snapshot);
      this.domains.set(name, c);
      return c;
    } catch (err) {
      log.error({ err, domain: name }, 'snapshot failed to compile; keeping the previous one');
      return this.domains.get(name);
    }
  }

  /** The domain and proxied record serving `host` (exact name first, then DNS-style wildcards), or undefined. */
  lookup(host: string): HostMatch | undefined {
    for (let i = -1; ;) {
      const name = i < 0 ? host : host.slice(i + 1);
      const domain = name === '' ? undefined : this.domains.get(name);
      if (domain) {
        if (NOT_SERVED.has(domain.snapshot.state)) return undefined;
        const rel = name === host ? '@' : host.slice(0, host.length - name.length - 1);
        const record = findRecord(domain.records, rel);
        return record && record.proxied ? { domain, record } : undefined;
      }
      i = host.indexOf('.', i + 1);
      if (i < 0) return undefined;
    }
  }
}

function findRecord(records: Map<string, ZoneRecord>, rel: string): ZoneRecord | undefined {
  const exact = records.get(rel);
  if (exact) return exact;
  if (rel === '@') return undefined;
  // `a.b.dev` → `*.b.dev`, `*.dev`, `*`
  for (let i = rel.indexOf('.'); i >= 0; i = rel.indexOf('.', i + 1)) {
    const w = records.get(`*${rel.slice(i)}`);
    if (w) return w;
  }
  return records.get('*');
}
