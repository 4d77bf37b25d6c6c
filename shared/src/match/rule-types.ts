// Validation of each rule type's own fields (the types with an edge engine; the others are stored as given).
import { isIP } from 'node:net';
import { isPasswordHash } from './password.js';
import { normaliseHost } from './host.js';
import { pathEntryProblem, type PathMatchType } from './path.js';
import { namesWafRules, WAF_DEFAULT_MARK } from './waf-rules.js';
import type { Problem, RuleType } from './validate-rule.js';

type Fields = Record<string, unknown>;
/** A basic_auth password to hash after validation: `user.password_hash` is set by hashRulePasswords. */
export interface PendingPassword {
  user: { username: unknown; password_hash?: string };
  password: string;
}
type Result = { ok: true; value: Fields; passwords: PendingPassword[] } | { ok: false; problems: Problem[] };
interface Ctx {
  pathMatchType: PathMatchType;
}

class Checker {
  readonly problems: Problem[] = [];
  readonly out: Fields = {};
  readonly passwords: PendingPassword[] = [];
  readonly seen = new Set<string>(['country']);
  constructor(
    readonly input: Fields,
    readonly prefix = '',
  ) {}
  problem(path: string, message: string) {
    this.problems.push({ path: this.prefix + path, message });
  }

  /** A list that must not be empty; an over-long list already has its problem. */
  nonEmpty(key: string, list: unknown[], message: string) {
    if (list.length === 0 && !this.problems.some((p) => p.path === this.prefix + key)) this.problem(key, message);
  }

  /** A field left out: a problem when required, else its default (recorded in the output when there is one). */
  private absent<T>(key: string, opts: { required?: boolean; def?: T }): T | undefined {
    if (opts.required) this.problem(key, 'is required');
    if (opts.def !== undefined) this.out[key] = opts.def;
    return opts.def;
  }

  str(
    key: string,
    opts: { required?: boolean; max?: number; def?: string; oneOf?: readonly string[] } = {},
  ): string | undefined {
    this.seen.add(key);
    const v = this.input[key];
    if (v === undefined || v === null) return this.absent(key, opts);
    if (typeof v !== 'string') {
      this.problem(key, 'must be a string');
      return undefined;
    }
    if (opts.max !== undefined && v.length > opts.max) this.problem(key, `at most ${opts.max} characters`);
    if (opts.oneOf && !opts.oneOf.includes(v)) this.problem(key, `must be one of ${opts.oneOf.join(', ')}`);
    if (opts.required && v === '') this.problem(key, 'must not be empty');
    this.out[key] = v;
    return v;
  }

  int(
    key: string,
    opts: { min: number; max: number; def?: number; oneOf?: readonly number[]; required?: boolean },
  ): number | undefined {
    this.seen.add(key);
    const v = this.input[key];
    if (v === undefined || v === null) return this.absent(key, opts);
    if (typeof v !== 'number' || !Number.isInteger(v) || v < opts.min || v > opts.max) {
      this.problem(key, `must be an integer from ${opts.min} to ${opts.max}`);
      return undefined;
    }
    if (opts.oneOf && !opts.oneOf.includes(v)) {
      this.problem(key, `must be one of ${opts.oneOf.join(', ')}`);
      return undefined;
    }
    this.out[key] = v;
    return v;
  }

  bool(key: string, def: boolean): boolean {
    this.seen.add(key);
    const v = this.input[key];
    if (v === undefined || v === null) {
      this.out[key] = def;
      return def;
    }
    if (typeof v !== 'boolean') {
      this.problem(key, 'must be a boolean');
      return def;
    }
    this.out[key] = v;
    return v;
  }

  array(key: string, max: number): unknown[] {
    this.seen.add(key);
    const v = this.input[key];
    if (v === undefined || v === null) return [];
    if (!Array.isArray(v)) {
      this.problem(key, 'must be an array');
      return [];
    }
    if (v.length > max) {
      this.problem(key, `at most ${max} entries`);
      return []; // the limit is checked before any per-entry work
    }
    return v;
  }

  result(): Result {
    return this.problems.length > 0
      ? { ok: false, problems: this.problems }
      : { ok: true, value: this.out, passwords: this.passwords };
  }
}

/** Entries of excluded_rules and of an exclusion's rule_ids; exclusions per rule; paths and args per exclusion. */
export const MAX_WAF_RULE_ENTRIES = 100;
export const MAX_WAF_EXCLUSIONS = 50;
export const MAX_WAF_EXCLUSION_PATHS = 50;
export const MAX_WAF_EXCLUSION_ARGS = 50;

/** Content codings an optimize rule compresses with, in the edge's order of preference. */
export const OPTIMIZE_CODINGS = ['br', 'gzip'] as const;
/** Entries of an optimize rule's content_types. */
export const MAX_OPTIMIZE_CONTENT_TYPES = 32;
/** A media type (`text/html`) or a range of one (`text/*`); parameters are not part of it. */
const MEDIA_RANGE = /^[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*\/(\*|[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*)$/;

/** Managed rule ids, id prefixes or class names, lower-cased and without duplicates; unknown ones are problems. */
function wafRuleList(c: Checker, key: string, list: unknown[]): string[] {
  const out = new Set<string>();
  list.forEach((v, i) => {
    const s = typeof v === 'string' ? v.trim().toLowerCase() : undefined;
    if (s === undefined || s.length > 64 || !namesWafRules(s))
      c.problem(
        `${key}[${i}]`,
        'must be a managed rule id (942100), an id prefix (942) or a class (sqli, xss, lfi, rfi, rce, php, java, generic, protocol, scanner)',
      );
    else out.add(s);
  });
  return [...out];
}

/** What a rate_limit rule counts by: client address, path, one header, or the address with the path or a header. */
export const RATE_LIMIT_KEYS = ['ip', 'ip_path', 'path', 'header', 'ip_header'] as const;

const HOST_RE = /^[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*$/;
function addressProblem(v: string): string | undefined {
  if (isIP(v) || (v.length <= 253 && HOST_RE.test(normaliseHost(v)))) return undefined;
  return 'must be an IP address or a host name';
}

const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/**
 * Headers the edge owns: message framing and hop-by-hop (RFC 9110 §7.6.1), which a rule could use to desynchronise a
 * connection shared with other tenants, and on requests the Host (set from the record or host_header, whose owner is
 * checked). header rules may not touch them; the edge also ignores them in rules stored before this check.
 */
export const EDGE_OWNED_HEADERS: Readonly<Record<'request_headers' | 'response_headers', ReadonlySet<string>>> = {
  response_headers: new Set([
    'content-length',
    'transfer-encoding',
    'connection',
    'keep-alive',
    'proxy-connection',
    'te',
    'trailer',
    'upgrade',
  ]),
  request_headers: new Set([
    'host',
    'content-length',
    'transfer-encoding',
    'connection',
    'keep-alive',
    'proxy-connection',
    'te',
    'trailer',
    'upgrade',
  ]),
};

function headerOps(c: Checker, key: 'request_headers' | 'response_headers') {
  const ops = c.array(key, 100).map((raw, i) => {
    const path = `${key}[${i}]`;
    if (typeof raw !== 'object' || raw === null) {
      c.problem(path, 'must be an object');
      return undefined;
    }
    const o = raw as Fields;
    if (!['set', 'add', 'remove'].includes(o.op as string)) c.problem(`${path}.op`, 'must be set, add or remove');
    if (typeof o.name !== 'string' || !HEADER_NAME.test(o.name)) c.problem(`${path}.name`, 'must be a header name');
    else if (EDGE_OWNED_HEADERS[key].has(o.name.toLowerCase()))
      c.problem(`${path}.name`, `${o.name.toLowerCase()} is managed by the edge and cannot be changed by a rule`);
    if (o.op !== 'remove' && (typeof o.value !== 'string' || /[\r\n\0]/.test(o.value)))
      c.problem(`${path}.value`, 'must be a string without CR, LF or NUL');
    return {
      op: o.op,
      name: typeof o.name === 'string' ? o.name.toLowerCase() : '',
      ...(o.op === 'remove' ? {} : { value: o.value }),
    };
  });
  c.out[key] = ops;
  return ops.length;
}

/** Client classes of bot_route rules (edge-node/src/rules/bot.ts classifies; README "bot_route"). */
export const BOT_CLASSES = ['verified_crawler', 'unverified_crawler', 'ai_crawler', 'automation', 'human'] as const;
export type BotClass = (typeof BOT_CLASSES)[number];
export const BOT_ROUTE_ACTIONS = ['block', 'challenge', 'allow', 'route', 'log'] as const;
export const FINGERPRINT_ACTIONS = ['block', 'challenge', 'allow', 'log'] as const;
/** Fingerprints one fingerprint rule lists. */
export const MAX_FINGERPRINTS = 1000;
/** A JA4H-style fingerprint: `a_b_c_d`, a 12 letters and digits, b, c, d 12 hex digits (lower case). */
const FINGERPRINT_RE = /^[a-z0-9]{12}_[0-9a-f]{12}_[0-9a-f]{12}_[0-9a-f]{12}$/;

/** origin_route's fields (address, scheme, port, host_header, name), also a routing bot_route rule's. */
function originFields(c: Checker): void {
  const address = c.str('address', { required: true, max: 253 });
  if (address) {
    const p = addressProblem(address);
    if (p) c.problem('address', p);
  }
  const scheme = c.str('scheme', { def: 'http', oneOf: ['http', 'https'] });
  c.int('port', { min: 1, max: 65535, def: scheme === 'https' ? 443 : 80 });
  const hh = c.str('host_header', { def: '', max: 253 });
  if (hh) c.out.host_header = normaliseHost(hh);
  c.str('name', { def: '', max: 64 });
}

const STATUS_ENTRY = /^([1-5]\d\d)(?:-([1-5]\d\d))?$/;

const VALIDATORS: Partial<Record<RuleType, (c: Checker, ctx: Ctx) => void>> = {
  origin_route(c) {
    originFields(c);
    // country is read-only: the API detects it from the address (a value sent in is ignored).
  },
  origin_pool(c) {
    const origins = c.array('origins', 64);
    c.nonEmpty('origins', origins, 'at least one origin is required');
    c.out.origins = origins.map((raw, i) => {
      const o = new Checker((raw ?? {}) as Fields, `origins[${i}].`);
      const address = o.str('address', { required: true, max: 253 });
      if (address) {
        const p = addressProblem(address);
        if (p) o.problem('address', p);
      }
      const scheme = o.str('scheme', { def: 'http', oneOf: ['http', 'https'] });
      o.int('port', { min: 1, max: 65535, def: scheme === 'https' ? 443 : 80 });
      o.int('weight', { min: 0, max: 1000, def: 1 });
      o.bool('backup', false);
      const hh = o.str('host_header', { def: '', max: 253 });
      if (hh) o.out.host_header = normaliseHost(hh);
      c.problems.push(...o.problems);
      return o.out;
    });
    c.seen.add('health_check');
    const hcIn = c.input.health_check;
    if (hcIn !== undefined && hcIn !== null) {
      const h = new Checker(hcIn as Fields, 'health_check.');
      h.bool('enabled', true);
      h.str('path', { def: '/', max: 2048 });
      h.int('interval_s', { min: 1, max: 3600, def: 10 });
      h.int('timeout_s', { min: 1, max: 60, def: 5 });
      h.int('unhealthy_threshold', { min: 1, max: 20, def: 2 });
      h.int('healthy_threshold', { min: 1, max: 20, def: 2 });
      c.problems.push(...h.problems);
      c.out.health_check = h.out;
    }
    c.str('method', { def: 'weighted', oneOf: ['weighted', 'failover'] });
  },
  redirect(c) {
    c.int('status_code', { min: 301, max: 308, def: 302, oneOf: [301, 302, 307, 308] });
    const t = c.str('target', { required: true, max: 4096 });
    if (t !== undefined && !/^(https?:\/\/|\/)/.test(t))
      c.problem('target', 'must be an absolute http(s) URL or a path starting with /');
    c.bool('keep_query', true);
  },
  rewrite(c) {
    const p = c.str('path', { max: 4096 });
    if (p !== undefined && !p.startsWith('/')) c.problem('path', 'must start with /');
    const q = c.str('query', { max: 4096 });
    c.bool('append_query', false);
    if (p === undefined && q === undefined) c.problem('path', 'path or query is required');
  },
  header(c) {
    const n = headerOps(c, 'request_headers') + headerOps(c, 'response_headers');
    if (n === 0) c.problem('request_headers', 'request_headers or response_headers needs at least one operation');
  },
  drop(c) {
    const action = c.str('action', { def: 'status', oneOf: ['status', 'close'] });
    c.int('status_code', { min: 400, max: 599, def: 403 });
    c.str('body', { def: '', max: 65536 });
    void action;
  },
  basic_auth(c) {
    const realm = c.str('realm', { def: 'Restricted', max: 128 });
    if (realm && /["\r\n\\]/.test(realm)) c.problem('realm', 'must not contain quotes, backslashes or line breaks');
    const sso = ssoBlock(c);
    const users = c.array('users', 1000);
    if (!sso) c.nonEmpty('users', users, 'at least one user is required (or an sso block)');
    const names = new Set<string>();
    // New passwords are only collected here: hashing (slow by design) comes after every check has passed.
    c.out.users = users.map((raw, i) => {
      const u = (raw ?? {}) as Fields;
      const path = `users[${i}]`;
      if (typeof u.username !== 'string' || u.username === '' || u.username.includes(':') || u.username.length > 128) {
        c.problem(`${path}.username`, 'must be 1 to 128 characters without ":"');
      } else if (names.has(u.username)) c.problem(`${path}.username`, 'duplicate username');
      else names.add(u.username);
      const user: PendingPassword['user'] = { username: u.username };
      if (typeof u.password === 'string' && u.password.length > 0 && u.password.length <= 1024)
        c.passwords.push({ user, password: u.password });
      else if (typeof u.password_hash === 'string' && isPasswordHash(u.password_hash))
        user.password_hash = u.password_hash;
      else
        c.problem(
          `${path}.password`,
          'password (1 to 1024 characters) or a password_hash read back from the API is required',
        );
      return user;
    });
  },
  error_page(c) {
    const statuses = c.array('statuses', 100);
    c.nonEmpty('statuses', statuses, 'at least one status or range ("404", "500-599") is required');
    statuses.forEach((s, i) => {
      const m = typeof s === 'string' ? STATUS_ENTRY.exec(s) : null;
      if (!m || (m[2] !== undefined && Number(m[2]) < Number(m[1])) || Number(m[1]) < 400)
        c.problem(`statuses[${i}]`, 'must be a status 400-599 or a range "500-599"');
    });
    c.out.statuses = statuses;
    c.str('body', { required: true, max: 262144 });
    c.str('content_type', { def: 'text/html; charset=utf-8', max: 256 });
  },
  rate_limit(c) {
    c.int('requests', { min: 1, max: 1_000_000, required: true });
    c.int('period_s', { min: 1, max: 86400, required: true });
    const key = c.str('key', { def: 'ip', oneOf: RATE_LIMIT_KEYS });
    const header = c.str('key_header', { max: 64 });
    if (key === 'header' || key === 'ip_header') {
      if (header === undefined || header.length > 64 || !HEADER_NAME.test(header))
        c.problem('key_header', 'a header name is required when key counts a header');
      else c.out.key_header = header.toLowerCase();
    } else if (header !== undefined && header !== '') c.problem('key_header', 'only with key header or ip_header');
    else delete c.out.key_header;
    c.str('action', { def: 'block', oneOf: ['block', 'captcha'] });
    c.int('block_s', { min: 1, max: 86400, def: 60 });
  },
  fingerprint(c) {
    const list = c.array('fingerprints', MAX_FINGERPRINTS);
    c.nonEmpty('fingerprints', list, 'at least one fingerprint is required');
    const values = new Set<string>();
    list.forEach((v, i) => {
      const s = typeof v === 'string' ? v.trim().toLowerCase() : '';
      if (!FINGERPRINT_RE.test(s))
        c.problem(
          `fingerprints[${i}]`,
          'must be a JA4H fingerprint such as ge11nn05enus_1a2b3c4d5e6f_000000000000_000000000000',
        );
      else values.add(s);
    });
    c.out.fingerprints = [...values];
    c.str('action', { def: 'block', oneOf: FINGERPRINT_ACTIONS });
  },
  bot_route(c) {
    const list = c.array('classes', BOT_CLASSES.length);
    c.nonEmpty('classes', list, 'at least one class is required');
    const classes = new Set<string>();
    list.forEach((v, i) => {
      if (typeof v !== 'string' || !(BOT_CLASSES as readonly string[]).includes(v))
        c.problem(`classes[${i}]`, `must be one of ${BOT_CLASSES.join(', ')}`);
      else classes.add(v);
    });
    c.out.classes = [...classes];
    const action = c.str('action', { def: 'block', oneOf: BOT_ROUTE_ACTIONS });
    if (action === 'route') originFields(c);
    else
      for (const k of ['address', 'port', 'scheme', 'host_header', 'name']) {
        c.seen.add(k); // null: left out
        if (c.input[k] !== undefined && c.input[k] !== null) c.problem(k, 'only with action route');
      }
  },
  optimize(c) {
    // Compression, minification and Markdown for agents act at the edge (edge-node/src/rules/optimize*.ts);
    // image_format is stored and not acted on yet (docs/decisions.md).
    const codings = c.array('compression', OPTIMIZE_CODINGS.length);
    const seen = new Set<string>();
    codings.forEach((v, i) => {
      if (typeof v !== 'string' || !(OPTIMIZE_CODINGS as readonly string[]).includes(v))
        c.problem(`compression[${i}]`, `must be one of ${OPTIMIZE_CODINGS.join(', ')}`);
      else if (seen.has(v)) c.problem(`compression[${i}]`, `${v} is listed twice`);
      else seen.add(v);
    });
    c.out.compression =
      c.input.compression === undefined || c.input.compression === null ? [...OPTIMIZE_CODINGS] : codings;
    const types = c.array('content_types', MAX_OPTIMIZE_CONTENT_TYPES);
    c.out.content_types = types.map((v, i) => {
      if (typeof v !== 'string' || v.length > 127 || !MEDIA_RANGE.test(v)) {
        c.problem(`content_types[${i}]`, 'must be a media type such as text/html, or type/* (at most 127 characters)');
        return '';
      }
      return v.toLowerCase();
    });
    c.int('min_size', { min: 0, max: 10 * 1024 * 1024, def: 1024 });
    c.bool('minify_html', false);
    c.bool('minify_css', false);
    c.bool('minify_js', false);
    c.bool('markdown_for_agents', false);
    c.str('image_format', { def: 'original', oneOf: ['original', 'webp', 'avif'] });
  },
  captcha(c) {
    c.int('pass_ttl_s', { min: 60, max: 86400, def: 1800 });
  },
  waf(c) {
    c.seen.add(WAF_DEFAULT_MARK); // read-only: set by the API on the default protection rule, ignored on input
    c.int('paranoia_level', { min: 1, max: 4, def: 1 });
    c.int('anomaly_threshold', { min: 1, max: 10000, def: 5 });
    c.bool('inspect_body', true);
    c.out.excluded_rules = wafRuleList(c, 'excluded_rules', c.array('excluded_rules', MAX_WAF_RULE_ENTRIES));
    c.out.exclusions = c.array('exclusions', MAX_WAF_EXCLUSIONS).map((raw, i) => {
      const prefix = `exclusions[${i}].`;
      if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
        c.problem(`exclusions[${i}]`, 'must be an object with rule_ids, paths and/or args');
        return {};
      }
      const e = new Checker(raw as Fields, prefix);
      const ruleIn = e.array('rule_ids', MAX_WAF_RULE_ENTRIES);
      const rules = wafRuleList(e, 'rule_ids', ruleIn);
      const paths = e.array('paths', MAX_WAF_EXCLUSION_PATHS);
      paths.forEach((p, j) => {
        const m = pathEntryProblem('wildcard', p);
        if (m) e.problem(`paths[${j}]`, m);
      });
      const args = e.array('args', MAX_WAF_EXCLUSION_ARGS);
      args.forEach((a, j) => {
        if (typeof a !== 'string' || a === '' || a.length > 256)
          e.problem(`args[${j}]`, 'must be an argument name of 1 to 256 characters');
      });
      for (const k of Object.keys(e.input)) if (!e.seen.has(k)) e.problem(k, 'unknown field of a waf exclusion');
      if (ruleIn.length === 0 && paths.length === 0 && args.length === 0 && e.problems.length === 0)
        c.problem(
          `exclusions[${i}]`,
          'names nothing: give rule_ids, paths or args (to switch the rule off, disable it)',
        );
      c.problems.push(...e.problems);
      return {
        rule_ids: rules,
        paths: paths as string[],
        args: (args as string[]).map((a) => a.toLowerCase()),
      };
    });
  },
  cache(c) {
    c.str('action', { def: 'cache', oneOf: ['cache', 'bypass'] });
    c.int('edge_ttl', { min: 0, max: 31536000, def: 0 });
    c.int('browser_ttl', { min: 0, max: 31536000, def: 0 });
    c.bool('respect_origin', true);
    c.bool('stale_on_error', true);
    c.str('query', { def: 'include', oneOf: ['include', 'ignore', 'sort', 'only'] });
    const keys = c.array('query_keys', 100);
    keys.forEach((k, i) => {
      if (typeof k !== 'string' || k === '') c.problem(`query_keys[${i}]`, 'must be a non-empty string');
    });
    c.out.query_keys = keys;
  },
};

/** Entries of a basic_auth rule's sso.emails; bounds of its sso.session_ttl_s (seconds a signed-in edge session lasts). */
export const MAX_SSO_EMAILS = 1000;
export const SSO_SESSION_TTL = { min: 60, max: 86_400, def: 3600 } as const;
/** Where the control plane sends a signed-in browser back to, on the protected hostname (answered by the edge). */
export const EDGE_SSO_PATH = '/.well-known/edge-sso';
/** The `typ` of an edge session token: an ID token (or any other JWT of the provider) is never taken for one. */
export const EDGE_SSO_TOKEN_TYPE = 'edge-sso+jwt';
/** The edge's sign-in state (a cookie of the browser, echoed in the token's `nonce`): 22–64 base64url characters. */
export const EDGE_SSO_STATE = /^[A-Za-z0-9_-]{22,64}$/;
/** Longest return_to the control plane takes (an absolute URL) and the edge sends back to (a path). */
export const MAX_SSO_RETURN_TO = 2048;
/** An account address as accounts are stored (admin/users.ts normalizeEmail): trimmed, lower-cased, local@host.tld. */
const SSO_EMAIL = /^[^\s@\p{Cc}\p{Cf}]+@[^\s@\p{Cc}\p{Cf}]+\.[^\s@\p{Cc}\p{Cf}]+$/u;

/**
 * basic_auth's optional `sso` block (issue 19): `{ emails: [...], session_ttl_s }`, the accounts signed in through the
 * platform's SSO that the rule lets through. Returns whether a block was given (then `users` may be empty).
 */
function ssoBlock(c: Checker): boolean {
  c.seen.add('sso');
  const raw = c.input.sso;
  if (raw === undefined || raw === null) return false;
  if (typeof raw !== 'object' || Array.isArray(raw)) {
    c.problem('sso', 'must be an object { "emails": [...] }');
    return true;
  }
  const s = new Checker(raw as Fields, 'sso.');
  const list = s.array('emails', MAX_SSO_EMAILS);
  s.nonEmpty('emails', list, 'at least one account email is required');
  const emails = new Set<string>();
  list.forEach((v, i) => {
    const e = typeof v === 'string' && v.length <= 254 ? v.trim().toLowerCase() : undefined;
    if (e === undefined || !SSO_EMAIL.test(e))
      s.problem(`emails[${i}]`, 'must be an email address (at most 254 characters)');
    else emails.add(e);
  });
  s.out.emails = [...emails];
  s.int('session_ttl_s', { ...SSO_SESSION_TTL });
  for (const k of Object.keys(s.input)) if (k === 'country' || !s.seen.has(k)) s.problem(k, 'unknown field of sso');
  c.problems.push(...s.problems);
  c.out.sso = s.out;
  return true;
}

/** Validates and normalises the type-specific fields of a rule; types without an engine keep their fields as given. */
export function validateTypeFields(type: RuleType, input: Fields, ctx: Ctx): Result {
  const v = VALIDATORS[type];
  if (!v) return { ok: true, value: { ...input }, passwords: [] };
  const c = new Checker({ ...input });
  v(c, ctx);
  for (const k of Object.keys(c.input)) {
    if (!c.seen.has(k)) c.problem(k, `unknown field for ${type} rules`);
  }
  return c.result();
}
