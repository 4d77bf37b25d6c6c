// Validation and normalisation of a rule's common fields (spec "Rule"), collecting every problem with its path.
import { HOST_MATCH_TYPES, hostEntryProblem, normaliseHost, type HostMatchType } from './host.js';
import { canonicaliseIpList, MAX_IP_ENTRIES } from './ip.js';
import { DEFAULT_PATH_INCLUDES, PATH_MATCH_TYPES, pathEntryProblem, type PathMatchType } from './path.js';
import { hashPasswords } from './password.js';
import { validateTypeFields, type PendingPassword } from './rule-types.js';
import { CUSTOM_RULE_TYPE, validateCustomRuleFields } from './custom-rule.js';

export const RULE_TYPES = [
  'cache',
  'drop',
  'redirect',
  'rewrite',
  'waf',
  'captcha',
  'rate_limit',
  'bot_route',
  'origin_pool',
  'origin_route',
  'fingerprint',
  'error_page',
  'optimize',
  'basic_auth',
  'header',
] as const;
export type RuleType = (typeof RULE_TYPES)[number];
/** What the rules table stores: the fifteen types and the custom rules group. */
export type StoredRuleType = RuleType | typeof CUSTOM_RULE_TYPE;
export const ACTION_MODES = ['enforce', 'dry_run'] as const;
export type ActionMode = (typeof ACTION_MODES)[number];
export const DEFAULT_PRIORITY = 100;
/** Entries of record_ids (a rule scoped to more records is better zone-wide). */
export const MAX_RECORD_IDS = 1000;
/** Entries of each host list (host_includes, host_excludes) and each path list (path_includes, path_excludes). */
export const MAX_HOST_ENTRIES = 256;
export const MAX_PATH_ENTRIES = 256;

/** The common fields of a rule after normalisation, as stored and as read back (record_id folded into record_ids). */
export interface RuleCommon {
  record_ids: number[];
  enabled: boolean;
  priority: number;
  host_pattern: string;
  host_match_type: HostMatchType;
  host_includes: string[];
  host_excludes: string[];
  ip_includes: string[];
  ip_excludes: string[];
  action_mode: ActionMode;
  path_match_type: PathMatchType;
  path_includes: string[];
  path_excludes: string[];
}

/**
 * A normalised rule: common fields plus the type's own fields. `passwords` are basic_auth passwords not hashed yet:
 * hashRulePasswords() must run before the rule is stored (their users have no password_hash until then).
 */
export interface NormalisedRule {
  common: RuleCommon;
  fields: Record<string, unknown>;
  passwords: PendingPassword[];
}

export interface Problem {
  path: string;
  message: string;
  /** Where in the field's text (a custom rule's expression): 1-based line and column, 0-based offset. */
  line?: number;
  column?: number;
  offset?: number;
}
export type RuleValidation = { ok: true; value: NormalisedRule } | { ok: false; problems: Problem[] };

export const COMMON_FIELDS = new Set([
  'id',
  'domain_id',
  'type',
  'record_id',
  'record_ids',
  'enabled',
  'priority',
  'host_pattern',
  'host_match_type',
  'host_includes',
  'host_excludes',
  'ip_includes',
  'ip_excludes',
  'action_mode',
  'path_match_type',
  'path_includes',
  'path_excludes',
  'created_at',
  'updated_at',
]);

export function isRuleType(t: string): t is RuleType {
  return (RULE_TYPES as readonly string[]).includes(t);
}

/** The list at `key`, bounded before any per-entry work (an over-long list is one problem and no entries). */
function boundedList(
  input: Record<string, unknown>,
  key: string,
  max: number,
  problems: Problem[],
  of: 'strings' | 'integers',
): unknown[] {
  const v = input[key];
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) {
    problems.push({ path: key, message: `must be an array of ${of}` });
    return [];
  }
  if (v.length > max) {
    problems.push({ path: key, message: `at most ${max} entries` });
    return [];
  }
  return v;
}

function stringList(input: Record<string, unknown>, key: string, max: number, problems: Problem[]): string[] {
  const v = boundedList(input, key, max, problems, 'strings');
  v.forEach((e, i) => {
    if (typeof e !== 'string') problems.push({ path: `${key}[${i}]`, message: 'must be a string' });
  });
  return v.filter((e): e is string => typeof e === 'string');
}

/** The host scope of a rule or an uptime monitor body, normalised (lists lower case, host_match_type defaulted). */
export interface HostScope {
  host_pattern: string;
  host_match_type: HostMatchType;
  host_includes: string[];
  host_excludes: string[];
}

/**
 * Validates host_pattern, host_match_type and the two host lists (at most `maxEntries` each; regexes compiled),
 * pushing each problem; the values returned are meaningful only when none was pushed.
 */
export function validateHostScope(input: Record<string, unknown>, maxEntries: number, problems: Problem[]): HostScope {
  const hostPattern = input.host_pattern ?? '';
  if (typeof hostPattern !== 'string') problems.push({ path: 'host_pattern', message: 'must be a string' });
  const includes = stringList(input, 'host_includes', maxEntries, problems);
  const excludes = stringList(input, 'host_excludes', maxEntries, problems);
  const anyHost =
    (typeof hostPattern === 'string' && hostPattern.trim() !== '') || includes.length > 0 || excludes.length > 0;
  let hostType = input.host_match_type as HostMatchType | undefined | null;
  if (hostType === undefined || hostType === null) hostType = anyHost ? 'wildcard' : '';
  if (!HOST_MATCH_TYPES.includes(hostType)) {
    problems.push({ path: 'host_match_type', message: 'must be one of "", exact, wildcard, regex' });
  } else if (hostType === '' && anyHost) {
    problems.push({
      path: 'host_match_type',
      message: 'must not be empty when host_pattern, host_includes or host_excludes is set',
    });
  } else if (hostType !== '' && !anyHost) {
    problems.push({
      path: 'host_match_type',
      message: 'must be empty when host_pattern, host_includes and host_excludes are all empty',
    });
  }
  const hostNorm = (h: string) => (hostType === 'regex' ? h : normaliseHost(h));
  if (hostType !== '' && HOST_MATCH_TYPES.includes(hostType)) {
    if (typeof hostPattern === 'string' && hostPattern.trim() !== '') {
      const p = hostEntryProblem(hostType, hostPattern);
      if (p) problems.push({ path: 'host_pattern', message: p });
    }
    includes.forEach((h, i) => {
      const p = hostEntryProblem(hostType, h);
      if (p) problems.push({ path: `host_includes[${i}]`, message: p });
    });
    excludes.forEach((h, i) => {
      const p = hostEntryProblem(hostType, h);
      if (p) problems.push({ path: `host_excludes[${i}]`, message: p });
    });
  }

  return {
    host_pattern: typeof hostPattern === 'string' ? (hostPattern.trim() === '' ? '' : hostNorm(hostPattern)) : '',
    host_match_type: hostType,
    host_includes: includes.map(hostNorm),
    host_excludes: excludes.map(hostNorm),
  };
}

/** The path scope of a rule or an uptime monitor body as sent (path_includes without its default). */
export interface PathScope {
  path_match_type: PathMatchType;
  path_includes: string[];
  path_excludes: string[];
}

/** Validates path_match_type and the two path lists (at most `maxEntries` each; regexes compiled), pushing each problem. */
export function validatePathScope(input: Record<string, unknown>, maxEntries: number, problems: Problem[]): PathScope {
  const pathType = (input.path_match_type ?? 'wildcard') as PathMatchType;
  if (!PATH_MATCH_TYPES.includes(pathType))
    problems.push({ path: 'path_match_type', message: 'must be wildcard or regex' });
  const pathIncludes = stringList(input, 'path_includes', maxEntries, problems);
  const pathExcludes = stringList(input, 'path_excludes', maxEntries, problems);
  if (PATH_MATCH_TYPES.includes(pathType)) {
    pathIncludes.forEach((p, i) => {
      const m = pathEntryProblem(pathType, p);
      if (m) problems.push({ path: `path_includes[${i}]`, message: m });
    });
    pathExcludes.forEach((p, i) => {
      const m = pathEntryProblem(pathType, p);
      if (m) problems.push({ path: `path_excludes[${i}]`, message: m });
    });
  }

  return { path_match_type: pathType, path_includes: pathIncludes, path_excludes: pathExcludes };
}

/**
 * Validates a rule body of `type` (snake_case, as the API receives it) and returns it normalised: host lists lower
 * case, host_match_type defaulted, IP lists canonical, path defaults applied, regexes compiled. Every problem is
 * collected, each with the field path (`ip_includes[3]`).
 */
export function validateRule(type: StoredRuleType, input: Record<string, unknown>): RuleValidation {
  const problems: Problem[] = [];

  const recordIds = new Set<number>(); // keeps the first occurrence's order; duplicates dropped in linear time
  const addRecord = (v: unknown, path: string) => {
    if (typeof v !== 'number' || !Number.isInteger(v) || v <= 0)
      problems.push({ path, message: 'must be a positive integer' });
    else recordIds.add(v);
  };
  boundedList(input, 'record_ids', MAX_RECORD_IDS, problems, 'integers').forEach((v, i) =>
    addRecord(v, `record_ids[${i}]`),
  );
  if (input.record_id !== undefined && input.record_id !== null && input.record_id !== 0)
    addRecord(input.record_id, 'record_id');

  const enabled = input.enabled ?? true;
  if (typeof enabled !== 'boolean') problems.push({ path: 'enabled', message: 'must be a boolean' });
  const priority = input.priority ?? DEFAULT_PRIORITY;
  if (typeof priority !== 'number' || !Number.isInteger(priority) || priority < -1_000_000 || priority > 1_000_000) {
    problems.push({ path: 'priority', message: 'must be an integer between -1000000 and 1000000' });
  }

  const hosts = validateHostScope(input, MAX_HOST_ENTRIES, problems);

  const ipLists: Record<'ip_includes' | 'ip_excludes', string[]> = { ip_includes: [], ip_excludes: [] };
  for (const key of ['ip_includes', 'ip_excludes'] as const) {
    const list = stringList(input, key, MAX_IP_ENTRIES, problems);
    const r = canonicaliseIpList(list);
    if (r.ok) ipLists[key] = r.value;
    else
      for (const p of r.problems)
        problems.push({
          path: p.index < 0 ? key : `${key}[${p.index}]`,
          message: p.index < 0 ? `at most ${MAX_IP_ENTRIES} entries` : p.message,
        });
  }

  const actionMode = input.action_mode ?? 'enforce';
  if (!(ACTION_MODES as readonly unknown[]).includes(actionMode))
    problems.push({ path: 'action_mode', message: 'must be enforce or dry_run' });

  const paths = validatePathScope(input, MAX_PATH_ENTRIES, problems);

  const fieldInput: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(input)) if (!COMMON_FIELDS.has(k)) fieldInput[k] = v;
  const typed =
    type === CUSTOM_RULE_TYPE
      ? { ...validateCustomRuleFields(fieldInput), passwords: [] }
      : validateTypeFields(type, fieldInput, { pathMatchType: paths.path_match_type });
  if (!typed.ok) problems.push(...typed.problems);

  if (problems.length > 0 || !typed.ok) return { ok: false, problems };
  return {
    ok: true,
    value: {
      common: {
        record_ids: [...recordIds],
        enabled: enabled as boolean,
        priority: priority as number,
        ...hosts,
        ip_includes: ipLists.ip_includes,
        ip_excludes: ipLists.ip_excludes,
        action_mode: actionMode as ActionMode,
        path_match_type: paths.path_match_type,
        path_includes: paths.path_includes.length > 0 ? paths.path_includes : [...DEFAULT_PATH_INCLUDES],
        path_excludes: paths.path_excludes,
      },
      fields: typed.value,
      passwords: typed.passwords,
    },
  };
}

/** Hashes the rule's new basic_auth passwords (off the event loop, a few at a time; see password.ts). */
export async function hashRulePasswords(rule: NormalisedRule): Promise<void> {
  const hashes = await hashPasswords(rule.passwords.map((p) => p.password));
  rule.passwords.forEach((p, i) => (p.user.password_hash = hashes[i]));
  rule.passwords = [];
}

/** One line naming every problem, for an API error body. */
export function describeProblems(problems: readonly Problem[]): string {
  return problems.map((p) => `${p.path}: ${p.message}`).join('; ');
}
