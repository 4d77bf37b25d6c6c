// Uptime monitor scope (spec "Uptime monitor"): validation and normalisation of a monitor body, with the rules'
// own host and path matchers (shared/src/match: RE2 regexes compiled at write time, wildcard entries checked), the
// spec's monitor limits (200 host entries, 50 path entries per list) and the "narrows nothing" check.
import {
  DEFAULT_PATH_INCLUDES,
  PathFilter,
  validateHostScope,
  validatePathScope,
  type HostMatchType,
  type PathMatchType,
  type Problem,
} from '@platform/shared/match';

/** Spec Limits: at most 200 entries in each host list, 50 in each path list; names at most 64 characters. */
export const MAX_MONITOR_HOST_ENTRIES = 200;
export const MAX_MONITOR_PATH_ENTRIES = 50;
export const MAX_MONITOR_NAME = 64;
/**
 * Monitors per domain (spec Limits: "a cap exists, reported by the monitor list endpoint"): a ceiling on the
 * detector's work per proxied request, the same on every plan.
 */
export const MAX_MONITORS_PER_DOMAIN = 20;

/** The monitor's scope as stored (uptime_monitors.scope) and read back. host_pattern is folded into host_includes. */
export interface MonitorScope {
  host_match_type: HostMatchType;
  host_includes: string[];
  host_excludes: string[];
  path_match_type: PathMatchType;
  path_includes: string[];
  path_excludes: string[];
}

export interface NormalisedMonitor {
  name: string;
  enabled: boolean;
  scope: MonitorScope;
}

export const MONITOR_FIELDS = [
  'name',
  'enabled',
  'host_pattern',
  'host_match_type',
  'host_includes',
  'host_excludes',
  'path_match_type',
  'path_includes',
  'path_excludes',
] as const;

/**
 * Validates a monitor body (all fields optional; the create defaults applied) and returns it normalised, or every
 * problem with its field path. A monitor with no host scope and a path scope of every path is refused: the
 * whole-host watch already covers it.
 */
export function validateMonitor(
  input: Record<string, unknown>,
): { ok: true; value: NormalisedMonitor } | { ok: false; problems: Problem[] } {
  const problems: Problem[] = [];
  const name = input.name ?? '';
  if (typeof name !== 'string') problems.push({ path: 'name', message: 'must be a string' });
  else if (name.length > MAX_MONITOR_NAME)
    problems.push({ path: 'name', message: `at most ${MAX_MONITOR_NAME} characters` });
  const enabled = input.enabled ?? true;
  if (typeof enabled !== 'boolean') problems.push({ path: 'enabled', message: 'must be a boolean' });

  const hosts = validateHostScope(input, MAX_MONITOR_HOST_ENTRIES, problems);
  const paths = validatePathScope(input, MAX_MONITOR_PATH_ENTRIES, problems);
  if (problems.length > 0) return { ok: false, problems };

  // host_pattern is folded into host_includes (spec: "legacy single host scope, folded into host_includes").
  const hostIncludes = [...hosts.host_includes];
  if (hosts.host_pattern !== '' && !hostIncludes.includes(hosts.host_pattern)) hostIncludes.unshift(hosts.host_pattern);
  const scope: MonitorScope = {
    host_match_type: hosts.host_match_type,
    host_includes: hostIncludes,
    host_excludes: hosts.host_excludes,
    path_match_type: paths.path_match_type,
    path_includes: paths.path_includes.length > 0 ? paths.path_includes : [...DEFAULT_PATH_INCLUDES],
    path_excludes: paths.path_excludes,
  };
  if (
    scope.host_match_type === '' &&
    new PathFilter(scope.path_match_type, scope.path_includes, scope.path_excludes).all
  ) {
    return {
      ok: false,
      problems: [
        {
          path: 'monitor',
          message:
            'narrows nothing: with no host scope and every path it is the whole-host watch, which always runs; set host_includes or path_includes',
        },
      ],
    };
  }
  return { ok: true, value: { name: name as string, enabled: enabled as boolean, scope } };
}

/**
 * A PUT body merged onto the stored monitor: omitted fields keep their values, an explicit empty array clears a list
 * (path_includes cleared is the default `[/*]`). Setting any host field without host_match_type re-derives it.
 */
export function mergeMonitorBody(stored: NormalisedMonitor, body: Record<string, unknown>): Record<string, unknown> {
  const merged: Record<string, unknown> = { name: stored.name, enabled: stored.enabled, ...stored.scope, ...body };
  if (body.host_match_type === undefined && ['host_pattern', 'host_includes', 'host_excludes'].some((k) => k in body))
    delete merged.host_match_type;
  return merged;
}
