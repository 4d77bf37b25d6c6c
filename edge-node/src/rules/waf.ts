// waf: managed protection (src/waf/engine.ts). The rule's fields compile once per rule version into the engine's
// configuration: paranoia level, anomaly threshold, rules switched off, exclusions with their path patterns.
import { WildcardPattern, normalisePath } from '@platform/shared/match';
import { DEFAULT_THRESHOLD, type CompiledExclusion, type WafConfig } from '../waf/engine.js';

export type WafAction = WafConfig;

function strings(v: unknown): string[] {
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
}

/** Fields as validated by the API (shared rule-types.ts `waf`); absent ones take their defaults. */
export function compileWaf(f: Record<string, unknown>): WafAction {
  const exclusions: CompiledExclusion[] = [];
  if (Array.isArray(f.exclusions)) {
    for (const e of f.exclusions as Record<string, unknown>[]) {
      const rules = strings(e.rule_ids).map((r) => r.toLowerCase());
      const paths = strings(e.paths).map((p) => new WildcardPattern(p.includes('*') ? p : normalisePath(p)));
      const args = strings(e.args).map((a) => a.toLowerCase());
      exclusions.push({
        rules: rules.length > 0 ? rules : null,
        paths: paths.length > 0 ? paths : null,
        targets: args.length > 0 ? new Set(args) : null,
      });
    }
  }
  return {
    paranoia: typeof f.paranoia_level === 'number' ? f.paranoia_level : 1,
    threshold: typeof f.anomaly_threshold === 'number' ? f.anomaly_threshold : DEFAULT_THRESHOLD,
    excluded: strings(f.excluded_rules).map((r) => r.toLowerCase()),
    exclusions,
    inspectBody: f.inspect_body !== false,
  };
}
