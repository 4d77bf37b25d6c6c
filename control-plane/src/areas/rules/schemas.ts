// TypeBox schemas of the rules API: the common Rule fields (spec "Rule") and the own fields of each of the fifteen types.
import { OptionalKind, Type, type TObject, type TProperties } from '@sinclair/typebox';
import {
  BOT_CLASSES,
  BOT_ROUTE_ACTIONS,
  CUSTOM_RULE_ACTIONS,
  CUSTOM_RULE_TYPE,
  EXPRESSION_LIMITS,
  FINGERPRINT_ACTIONS,
  MAX_DESCRIPTION_LENGTH,
  MAX_FINGERPRINTS,
  MAX_IP_ENTRIES,
  MAX_SSO_EMAILS,
  RATE_LIMIT_KEYS,
  RULE_TYPES,
  SSO_SESSION_TTL,
  type StoredRuleType,
} from '@platform/shared/match';
import { Id, MAX_ID, StringEnum } from '../../openapi/schemas.js';

const Str = (description: string, o: Record<string, unknown> = {}) => Type.String({ description, ...o });
const Int = (description: string, o: Record<string, unknown> = {}) => Type.Integer({ description, ...o });
const Bool = (description: string) => Type.Boolean({ description });
/** Most record ids one rule may be scoped to. */
export const MAX_RULE_RECORD_IDS = 1000;
/** Most entries in host_includes, host_excludes, path_includes and path_excludes. */
export const MAX_RULE_PATTERNS = 256;

const closed = { additionalProperties: false } as const;
const HostEntries = (description: string) =>
  Type.Array(Type.String({ minLength: 1, maxLength: 1024 }), { description, maxItems: MAX_RULE_PATTERNS });
const PathEntries = (description: string) =>
  Type.Array(Type.String({ minLength: 1, maxLength: 2048 }), { description, maxItems: MAX_RULE_PATTERNS });
const IpEntries = (description: string) =>
  Type.Array(Type.String({ minLength: 1, maxLength: 100 }), { description, maxItems: MAX_IP_ENTRIES });
/** A host name or IP address: letters, digits, `_`, `-` and dots (a trailing dot is dropped), or an IPv6 address. */
const Address = (description: string) =>
  Type.String({
    description,
    minLength: 1,
    maxLength: 253,
    pattern: '^[^\\s"\'/?#@\\\\\\u0000]+$',
    'x-expected': 'an IP address or a host name',
  });

/** Common fields a client may send (create and update; all optional, defaults as described). */
export const commonInput = {
  record_id: Type.Optional(
    Int('Deprecated single-record scope; folded into record_ids (0: none)', { minimum: 0, maximum: MAX_ID }),
  ),
  record_ids: Type.Optional(
    Type.Array(Id(), {
      description: 'Proxied records of this domain the rule applies to; empty or absent means zone-wide',
      maxItems: MAX_RULE_RECORD_IDS,
    }),
  ),
  enabled: Type.Optional(Bool('Default true')),
  priority: Type.Optional(
    Int('Evaluation order, lower first; default 100', { minimum: -1_000_000, maximum: 1_000_000 }),
  ),
  host_pattern: Type.Optional(
    Str('Legacy single host filter, evaluated as one more entry of host_includes', { maxLength: 1024 }),
  ),
  host_match_type: Type.Optional(
    StringEnum(['', 'exact', 'wildcard', 'regex'], {
      description:
        'Empty (no host filter) is the only valid value when host_pattern and both lists are empty; a list set without a type defaults to wildcard. `*.x` matches subdomains of x, not x; regex: unanchored, case-insensitive RE2 syntax (linear time: no backreferences, no lookaround)',
    }),
  ),
  host_includes: Type.Optional(HostEntries('Empty or absent: every host served by the scoped records')),
  host_excludes: Type.Optional(HostEntries('Excludes always beat includes')),
  ip_includes: Type.Optional(
    IpEntries(`Addresses, CIDRs (a/n) or ranges (a-b), at most ${MAX_IP_ENTRIES}; canonicalised on write`),
  ),
  ip_excludes: Type.Optional(IpEntries('As ip_includes; excludes beat includes')),
  action_mode: Type.Optional(
    StringEnum(['enforce', 'dry_run'], {
      description: 'dry_run: matched and logged as would-have-acted, request passes unchanged (cache ignores it)',
    }),
  ),
  path_match_type: Type.Optional(
    StringEnum(['wildcard', 'regex'], {
      description:
        'Applies to both path lists, matched against the normalised path (unreserved escapes decoded, dot segments removed, runs of / merged); wildcard `*` matches any characters over the whole path, regex is unanchored RE2 syntax (linear time: no backreferences, no lookaround)',
    }),
  ),
  path_includes: Type.Optional(PathEntries('Default ["/*"]; wildcard entries start with / or *')),
  path_excludes: Type.Optional(PathEntries('Paths excluded even when included')),
};

const commonOutput = {
  id: Type.Integer(),
  domain_id: Type.Integer(),
  type: StringEnum([...RULE_TYPES]),
  record_id: Type.Optional(Int('Present only when the rule is scoped to exactly one record')),
  record_ids: Type.Array(Type.Integer()),
  enabled: Type.Boolean(),
  priority: Type.Integer(),
  host_pattern: Type.String(),
  host_match_type: StringEnum(['', 'exact', 'wildcard', 'regex']),
  host_includes: Type.Array(Type.String()),
  host_excludes: Type.Array(Type.String()),
  ip_includes: Type.Array(Type.String()),
  ip_excludes: Type.Array(Type.String()),
  action_mode: StringEnum(['enforce', 'dry_run']),
  path_match_type: StringEnum(['wildcard', 'regex']),
  path_includes: Type.Array(Type.String()),
  path_excludes: Type.Array(Type.String()),
  created_at: Type.String({ format: 'date-time' }),
  updated_at: Type.String({ format: 'date-time' }),
};

const HeaderOp = Type.Object(
  {
    op: StringEnum(['set', 'add', 'remove'], {
      description: 'set replaces, add appends another value, remove deletes',
    }),
    name: Str('Header name (case-insensitive)', {
      minLength: 1,
      maxLength: 256,
      pattern: "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$",
      'x-expected': 'a header name',
    }),
    value: Type.Optional(
      Str('Value for set and add; no CR, LF or NUL', {
        maxLength: 8192,
        pattern: '^[^\\r\\n\\u0000]*$',
        'x-expected': 'a string without CR, LF or NUL',
      }),
    ),
  },
  closed,
);
const Port = (description: string) => Int(description, { minimum: 1, maximum: 65535 });
const PoolOrigin = Type.Object(
  {
    address: Address('Origin IP address or host name'),
    port: Type.Optional(Port('Default 80 for http, 443 for https')),
    scheme: Type.Optional(StringEnum(['http', 'https'])),
    weight: Type.Optional(
      Int('Share of traffic relative to the other origins; default 1, 0 = never chosen unless failing over', {
        minimum: 0,
        maximum: 1000,
      }),
    ),
    backup: Type.Optional(Bool('Used only when every primary origin is unhealthy')),
    host_header: Type.Optional(Str('Host header and SNI sent to this origin', { maxLength: 253 })),
  },
  closed,
);
const BasicAuthUser = Type.Object(
  {
    username: Str('User name (no ":")', {
      minLength: 1,
      maxLength: 128,
      pattern: '^[^:\\u0000]*$',
      'x-expected': 'a user name without ":"',
    }),
    password: Type.Optional(
      Str('Write only: hashed on write, never read back. Omit it to keep the password stored for this username', {
        minLength: 1,
        maxLength: 1024,
      }),
    ),
    password_hash: Type.Optional(
      Str('Write only: an scrypt hash made by this platform (neither it nor the password is ever read back)', {
        maxLength: 512,
      }),
    ),
  },
  closed,
);
const RuleAction = (values: string[], description: string) => Type.Optional(StringEnum(values, { description }));

/** Own fields of each type (spec "Rule"; the types without an edge engine yet have the fields listed here, no others). */
const TYPE_FIELDS: Record<StoredRuleType, TProperties> = {
  custom: {
    expression: Str(
      'Wirefilter-style expression over request fields, compiled on write (a syntax error is a 400 naming its line ' +
        'and column): e.g. `http.request.uri.path wildcard "/admin/*" and not ip.src in {10.0.0.0/8}`. Fields, ' +
        'operators and bounds: edge-node/src/rules/README.md "Custom rules"',
      { minLength: 1, maxLength: EXPRESSION_LIMITS.maxLength },
    ),
    action: StringEnum([...CUSTOM_RULE_ACTIONS], {
      description:
        'block: 403; challenge: the proof-of-work page unless the client holds a clearance; allow: later custom ' +
        'rules, rate_limit and challenges (captcha rules, the record flag, Under Attack Mode) are skipped; skip: ' +
        'later custom rules are skipped; log: recorded, evaluation goes on',
    }),
    description: Type.Optional(Str('Free text', { maxLength: MAX_DESCRIPTION_LENGTH })),
  },
  origin_route: {
    address: Address('Origin IP address or host name for the matched paths'),
    port: Type.Optional(Port('Default 80 for http, 443 for https')),
    scheme: Type.Optional(StringEnum(['http', 'https'], { description: 'Default http' })),
    host_header: Type.Optional(
      Str('Host header and SNI sent to this origin; inside this domain or another active domain of the same owner', {
        maxLength: 253,
      }),
    ),
    country: Type.Optional(
      Str('ISO country code detected from address; read-only (a value sent is ignored)', {
        readOnly: true,
        maxLength: 2,
      }),
    ),
    name: Type.Optional(Str('Optional label, no effect on routing', { maxLength: 64 })),
  },
  origin_pool: {
    origins: Type.Array(PoolOrigin, { description: 'At least one origin', minItems: 1, maxItems: 64 }),
    method: Type.Optional(
      StringEnum(['weighted', 'failover'], {
        description:
          'weighted: random by weight among healthy origins; failover: first healthy in list order. Default weighted',
      }),
    ),
    health_check: Type.Optional(
      Type.Object(
        {
          enabled: Type.Optional(Bool('Default true')),
          path: Type.Optional(Str('Default /', { maxLength: 2048 })),
          interval_s: Type.Optional(Int('Default 10', { minimum: 1, maximum: 3600 })),
          timeout_s: Type.Optional(Int('Default 5', { minimum: 1, maximum: 60 })),
          unhealthy_threshold: Type.Optional(
            Int('Failures before an origin is taken out; default 2', { minimum: 1, maximum: 20 }),
          ),
          healthy_threshold: Type.Optional(
            Int('Successes before it is taken back; default 2', { minimum: 1, maximum: 20 }),
          ),
        },
        {
          ...closed,
          description:
            'Active GET probes; a 2xx or 3xx answer is healthy. Without it, connection failures mark an origin down passively',
        },
      ),
    ),
  },
  redirect: {
    status_code: Type.Optional(
      Type.Unsafe<number>({ type: 'integer', enum: [301, 302, 307, 308], description: 'Default 302' }),
    ),
    target: Str(
      'Absolute http(s) URL or path starting with /; $1..$9 are the captures of the matching path pattern (regex groups, or each * of a wildcard)',
      {
        minLength: 1,
        maxLength: 4096,
        pattern: '^(https?://|/)[^\\u0000]*$',
        'x-expected': 'an absolute http(s) URL or a path starting with /',
      },
    ),
    keep_query: Type.Optional(Bool('Append the request query string to the target; default true')),
  },
  rewrite: {
    path: Type.Optional(
      Str('New path sent to the origin; $1..$9 as in redirect', {
        maxLength: 4096,
        pattern: '^/[^\\u0000]*$',
        'x-expected': 'a path starting with /',
      }),
    ),
    query: Type.Optional(Str('New query string (without ?); empty removes it', { maxLength: 4096 })),
    append_query: Type.Optional(Bool('Append query to the existing query instead of replacing it; default false')),
  },
  header: {
    request_headers: Type.Optional(
      Type.Array(HeaderOp, { description: 'Applied to the request sent to the origin', maxItems: 100 }),
    ),
    response_headers: Type.Optional(
      Type.Array(HeaderOp, { description: 'Applied to the response sent to the client', maxItems: 100 }),
    ),
  },
  drop: {
    action: RuleAction(
      ['status', 'close'],
      'status: answer status_code; close: close the connection without an answer. Default status',
    ),
    status_code: Type.Optional(Int('Default 403', { minimum: 400, maximum: 599 })),
    body: Type.Optional(Str('Response body for action status', { maxLength: 65536 })),
  },
  basic_auth: {
    realm: Type.Optional(
      Str('Default "Restricted"; no quotes, backslashes or line breaks', {
        maxLength: 128,
        pattern: '^[^"\\\\\\r\\n\\u0000]*$',
        'x-expected': 'free of quotes, backslashes and line breaks',
      }),
    ),
    users: Type.Optional(
      Type.Array(BasicAuthUser, {
        maxItems: 1000,
        description: 'HTTP Basic users; at least one unless `sso` is given',
      }),
    ),
    sso: Type.Optional(
      Type.Object(
        {
          emails: Type.Array(Type.String({ minLength: 3, maxLength: 254, 'x-expected': 'an email address' }), {
            minItems: 1,
            maxItems: MAX_SSO_EMAILS,
            description: 'Accounts (their sign-in addresses) let through once signed in through the platform',
          }),
          session_ttl_s: Type.Optional(
            Int('Seconds a browser stays signed in at the edge before it asks the control plane again; default 3600', {
              minimum: SSO_SESSION_TTL.min,
              maximum: SSO_SESSION_TTL.max,
            }),
          ),
        },
        {
          ...closed,
          description:
            'Lets through browsers signed in to the platform as one of these accounts (as Cloudflare Access does): ' +
            'a request without an edge session is redirected (302) to the control plane to sign in, one signed in ' +
            'as another account is refused (403). Basic credentials of `users` keep working beside it.',
        },
      ),
    ),
  },
  error_page: {
    statuses: Type.Array(
      Type.String({ pattern: '^[45][0-9]{2}(-[45][0-9]{2})?$', 'x-expected': 'a status 400-599 or a range "500-599"' }),
      {
        description: 'Statuses ("404") or ranges ("500-599", low to high) of origin or edge answers to replace',
        minItems: 1,
        maxItems: 100,
      },
    ),
    body: Str('Body served instead', { minLength: 1, maxLength: 262144 }),
    content_type: Type.Optional(Str('Default text/html; charset=utf-8', { maxLength: 256 })),
  },
  cache: {
    action: RuleAction(['cache', 'bypass'], 'Default cache'),
    edge_ttl: Type.Optional(
      Int('Seconds kept at the edge; 0 = as the origin says (Cache-Control max-age / s-maxage)', {
        minimum: 0,
        maximum: 31536000,
      }),
    ),
    browser_ttl: Type.Optional(
      Int('Seconds set as Cache-Control max-age towards clients; 0 = origin header unchanged', {
        minimum: 0,
        maximum: 31536000,
      }),
    ),
    respect_origin: Type.Optional(
      Bool('Do not store responses marked no-store, private or with Set-Cookie; default true'),
    ),
    stale_on_error: Type.Optional(Bool('Serve an expired entry when the origin fails or answers 5xx; default true')),
    query: Type.Optional(
      StringEnum(['include', 'ignore', 'sort', 'only'], {
        description: 'Cache key query handling: whole query, none, sorted, or only query_keys',
      }),
    ),
    query_keys: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 256 }), {
        description: 'Query parameters kept in the key when query is only',
        maxItems: 100,
      }),
    ),
  },
  // waf, captcha, rate_limit, bot_route, fingerprint and optimize (compression, minify, Markdown for agents; images not yet) run at
  // the edge. Each schema is closed, so a rule cannot carry anything else (issue 8).
  waf: {
    paranoia_level: Type.Optional(
      Int('Rule-set strictness, 1 (fewest false positives) to 4; default 1', { minimum: 1, maximum: 4 }),
    ),
    anomaly_threshold: Type.Optional(
      Int('Anomaly score at which a request is blocked (critical finding 5, warning 3, notice 2); default 5', {
        minimum: 1,
        maximum: 10000,
      }),
    ),
    excluded_rules: Type.Optional(WafRuleList('Managed rules switched off for the matched requests')),
    exclusions: Type.Optional(
      Type.Array(
        Type.Object(
          {
            rule_ids: Type.Optional(WafRuleList('Managed rules the exclusion drops; empty or absent: all')),
            paths: Type.Optional(
              Type.Array(Type.String({ minLength: 1, maxLength: 2048 }), {
                description: 'Wildcard paths (normalised form) the exclusion applies to; empty or absent: all',
                maxItems: 50,
              }),
            ),
            args: Type.Optional(
              Type.Array(Type.String({ minLength: 1, maxLength: 256 }), {
                description:
                  'Arguments not inspected by those rules: names as sent (JSON paths as a.b.0), cookie:<name>, ' +
                  'header:<name>, path; empty or absent: the whole request',
                maxItems: 50,
              }),
            ),
          },
          { ...closed },
        ),
        { description: 'Findings dropped by rule, path and argument', maxItems: 50 },
      ),
    ),
    inspect_body: Type.Optional(Bool('Read form, JSON, multipart and XML bodies (first 128 KiB); default true')),
    default_protection: Type.Optional(
      Bool(
        'True on the default protection rule created with the domain (see default-protection); read-only (a value ' +
          'sent is ignored)',
      ),
    ),
  },
  captcha: {
    pass_ttl_s: Type.Optional(
      Int('Seconds a solved challenge stays valid for the visitor; default 1800', { minimum: 60, maximum: 86400 }),
    ),
  },
  rate_limit: {
    requests: Int('Requests allowed per period and key', { minimum: 1, maximum: 1_000_000 }),
    period_s: Int('Length of the counting window in seconds', { minimum: 1, maximum: 86400 }),
    key: RuleAction(
      [...RATE_LIMIT_KEYS],
      'What is counted: per client address (ip), path, one header (key_header), or the address with the path or ' +
        'the header. Default ip',
    ),
    key_header: Type.Optional(
      Str('Header counted when key is header or ip_header (a missing header counts as empty)', {
        maxLength: 64,
        pattern: "^[!#$%&'*+.^_`|~0-9A-Za-z-]*$",
      }),
    ),
    action: RuleAction(
      ['block', 'captcha'],
      'What happens above the limit: 429 with Retry-After, or the challenge; default block',
    ),
    block_s: Type.Optional(Int('Seconds a key stays limited once over; default 60', { minimum: 1, maximum: 86400 })),
  },
  bot_route: {
    classes: Type.Array(StringEnum([...BOT_CLASSES]), {
      description:
        'Client classes the rule acts on: verified_crawler (a search crawler whose address passed reverse-then-forward ' +
        'DNS), unverified_crawler (claims one, not verified), ai_crawler, automation (tools, scripts, headless ' +
        'browsers, other self-declared bots), human (a browser-shaped request)',
      minItems: 1,
      maxItems: BOT_CLASSES.length,
    }),
    action: RuleAction(
      [...BOT_ROUTE_ACTIONS],
      'block (403), challenge, allow (no later bot_route rule acts), route (to the origin below) or log; default block',
    ),
    address: Type.Optional(Address('With action route: origin IP address or host name the clients are sent to')),
    port: Type.Optional(Port('With action route: default 80 for http, 443 for https')),
    scheme: Type.Optional(StringEnum(['http', 'https'], { description: 'With action route: default http' })),
    host_header: Type.Optional(
      Str(
        'With action route: Host header and SNI sent to that origin; inside this domain or another active domain ' +
          'of the same owner',
        { maxLength: 253 },
      ),
    ),
    name: Type.Optional(Str('With action route: optional label', { maxLength: 64 })),
  },
  fingerprint: {
    fingerprints: Type.Array(
      Type.String({
        minLength: 1,
        maxLength: 64,
        pattern: '^[A-Za-z0-9_]+$',
        'x-expected': 'a JA4H fingerprint (ge11nn05enus_1a2b3c4d5e6f_000000000000_000000000000)',
      }),
      {
        description: 'JA4H-style HTTP request fingerprints (as the request log records them) the rule matches exactly',
        minItems: 1,
        maxItems: MAX_FINGERPRINTS,
      },
    ),
    action: RuleAction(
      [...FINGERPRINT_ACTIONS],
      'block (403), challenge, allow (no later fingerprint or bot_route rule acts) or log; default block',
    ),
  },
  optimize: {
    compression: Type.Optional(
      Type.Array(StringEnum(['br', 'gzip']), {
        description:
          'Codings the edge compresses uncompressed origin answers with, for clients whose Accept-Encoding takes ' +
          'them (q=0 refuses); empty: no compression. Default ["br", "gzip"]',
        maxItems: 2,
        uniqueItems: true,
      }),
    ),
    content_types: Type.Optional(
      Type.Array(
        Type.String({
          minLength: 3,
          maxLength: 127,
          pattern: '^[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*/(\\*|[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*)$',
          'x-expected': 'a media type such as text/html, or type/*',
        }),
        {
          description:
            'Content types compressed; empty or absent: text/*, JSON, JavaScript, XML, SVG and the other text formats',
          maxItems: 32,
        },
      ),
    ),
    min_size: Type.Optional(
      Int('Answers with a smaller Content-Length are sent as they are (a chunked answer is compressed); default 1024', {
        minimum: 0,
        maximum: 10 * 1024 * 1024,
      }),
    ),
    minify_html: Type.Optional(
      Bool('HTML answers (text/html) of at most 1 MiB minified: comments and spaces between tags; default false'),
    ),
    minify_css: Type.Optional(
      Bool('CSS answers (text/css) of at most 1 MiB minified (comments and spaces); default false'),
    ),
    minify_js: Type.Optional(
      Bool('JavaScript answers of at most 1 MiB minified (whitespace and local names); default false'),
    ),
    markdown_for_agents: Type.Optional(
      Bool(
        'HTML answers of at most 1 MiB converted to Markdown for a client that sends Accept: text/markdown; default false',
      ),
    ),
    image_format: RuleAction(
      ['original', 'webp', 'avif'],
      'Images re-encoded for clients that accept it; default original; stored, not acted on yet',
    ),
  },
};

function WafRuleList(description: string) {
  return Type.Array(
    Type.String({
      minLength: 1,
      maxLength: 64,
      pattern: '^[A-Za-z0-9_.-]+$',
      'x-expected': 'a managed rule id (942100), an id prefix (942) or a class (sqli, xss, lfi, rfi, rce, …)',
    }),
    { description, maxItems: 100 },
  );
}

/**
 * A working create body of each type, shown in the OpenAPI document (`examples`): the API reference shows it, and
 * the fuzzer's examples phase sends it (scripts/api-fuzz.sh); a test creates every one on an enterprise domain.
 */
export const CREATE_EXAMPLES: Record<StoredRuleType, Record<string, unknown>> = {
  custom: {
    expression: 'http.request.uri.path wildcard "/admin/*" and not ip.src in {10.0.0.0/8}',
    action: 'block',
    description: 'admin only from the office network',
  },
  origin_route: { address: '192.0.2.20', scheme: 'https', port: 8443, path_includes: ['/api/*'] },
  origin_pool: {
    origins: [{ address: '192.0.2.21' }, { address: '192.0.2.22', weight: 2 }],
    method: 'weighted',
    health_check: { path: '/health', interval_s: 30 },
  },
  redirect: { target: 'https://www.example.org/$1', status_code: 301, path_includes: ['/old/*'] },
  rewrite: { path: '/v2/$1', path_includes: ['/v1/*'] },
  header: { response_headers: [{ op: 'set', name: 'X-Frame-Options', value: 'DENY' }] },
  drop: { action: 'status', status_code: 403, ip_includes: ['203.0.113.0/24'] },
  basic_auth: {
    realm: 'Staff',
    users: [{ username: 'staff', password: 'correct horse battery' }],
    path_includes: ['/admin/*'],
  },
  error_page: { statuses: ['500-599'], body: '<h1>Back soon</h1>' },
  cache: { action: 'cache', edge_ttl: 3600, path_includes: ['/static/*'] },
  waf: {
    paranoia_level: 2,
    excluded_rules: ['942100'],
    exclusions: [{ rule_ids: ['sqli'], paths: ['/admin/sql/*'], args: ['query'] }],
  },
  captcha: { pass_ttl_s: 3600, path_includes: ['/login'] },
  rate_limit: { requests: 100, period_s: 60, key: 'ip', action: 'block', path_includes: ['/api/*'] },
  bot_route: { classes: ['ai_crawler'], action: 'route', address: '192.0.2.30' },
  fingerprint: { fingerprints: ['ge11nn05enus_1a2b3c4d5e6f_000000000000_000000000000'], action: 'block' },
  optimize: { compression: ['br', 'gzip'], content_types: ['text/*', 'application/json'], min_size: 512 },
};

function optionalAll(p: TProperties): TProperties {
  return Object.fromEntries(Object.entries(p).map(([k, v]) => [k, OptionalKind in v ? v : Type.Optional(v)]));
}

/** Fields of a rule as read back that an update accepts and ignores, so that a rule read can be sent back as is. */
function readBackFields(type: StoredRuleType): TProperties {
  const ignored = (description: string) => ({ readOnly: true, description: `${description}; ignored on update` });
  const timestamp = Type.Optional(Type.String({ maxLength: 64, ...ignored('Timestamp as read back') }));
  return {
    id: Type.Optional(Id('Rule id as read back; ignored on update')),
    domain_id: Type.Optional(Id('Domain id as read back; ignored on update')),
    type: Type.Optional(StringEnum([type], ignored('The rule type'))),
    created_at: timestamp,
    updated_at: timestamp,
  };
}

export function ruleSchemas(type: StoredRuleType): { create: TObject; update: TObject; rule: TObject } {
  const own = TYPE_FIELDS[type];
  const title = type
    .split('_')
    .map((w) => w[0].toUpperCase() + w.slice(1))
    .join('');
  return {
    create: Type.Object(
      { ...commonInput, ...own },
      { title: `${title}RuleCreate`, examples: [CREATE_EXAMPLES[type]], ...closed },
    ),
    update: Type.Object(
      { ...commonInput, ...optionalAll(own), ...readBackFields(type) },
      {
        title: `${title}RuleUpdate`,
        description: 'Fields sent replace the stored ones; omitted fields are unchanged',
        ...closed,
      },
    ),
    rule: Type.Object(
      { ...commonOutput, ...(type === CUSTOM_RULE_TYPE ? { type: StringEnum([type]) } : {}), ...optionalAll(own) },
      { title: `${title}Rule` },
    ),
  };
}

export const RuleParams = Type.Object({ domain: Type.String(), ruleId: Id('Rule id') });
export const ReorderBody = Type.Object(
  {
    ids: Type.Array(Id(), {
      description: 'Every rule id of this type, each once, first evaluated first; priorities become 10, 20, 30…',
      maxItems: 1000,
      uniqueItems: true,
    }),
  },
  { title: 'RuleReorder', ...closed },
);
export const EnabledBody = Type.Object({ enabled: Type.Boolean() }, { title: 'RuleEnabled', ...closed });
