// TypeBox schemas of the rules API: the common Rule fields (spec "Rule") and the own fields of each of the fifteen types.
import { OptionalKind, Type, type TObject, type TProperties } from '@sinclair/typebox';
import { RULE_TYPES, type RuleType } from '@platform/shared/match';
import { StringEnum } from '../../openapi/schemas.js';

const Str = (description: string, o: Record<string, unknown> = {}) => Type.String({ description, ...o });
const Int = (description: string, o: Record<string, unknown> = {}) => Type.Integer({ description, ...o });
const Bool = (description: string) => Type.Boolean({ description });
const StrList = (description: string, o: Record<string, unknown> = {}) =>
  Type.Array(Type.String(), { description, ...o });

/** Common fields a client may send (create and update; all optional, defaults as described). */
export const commonInput = {
  record_id: Type.Optional(Int('Deprecated single-record scope; folded into record_ids')),
  record_ids: Type.Optional(
    Type.Array(Type.Integer(), {
      description: 'Proxied records of this domain the rule applies to; empty or absent means zone-wide',
    }),
  ),
  enabled: Type.Optional(Bool('Default true')),
  priority: Type.Optional(Int('Evaluation order, lower first; default 100')),
  host_pattern: Type.Optional(Str('Legacy single host filter, evaluated as one more entry of host_includes')),
  host_match_type: Type.Optional(
    StringEnum(['', 'exact', 'wildcard', 'regex'], {
      description:
        'Empty (no host filter) is the only valid value when host_pattern and both lists are empty; a list set without a type defaults to wildcard. `*.x` matches subdomains of x, not x',
    }),
  ),
  host_includes: Type.Optional(StrList('Empty or absent: every host served by the scoped records')),
  host_excludes: Type.Optional(StrList('Excludes always beat includes')),
  ip_includes: Type.Optional(
    StrList('Addresses, CIDRs (a/n) or ranges (a-b), at most 256; canonicalised on write', { maxItems: 256 }),
  ),
  ip_excludes: Type.Optional(StrList('As ip_includes; excludes beat includes', { maxItems: 256 })),
  action_mode: Type.Optional(
    StringEnum(['enforce', 'dry_run'], {
      description: 'dry_run: matched and logged as would-have-acted, request passes unchanged (cache ignores it)',
    }),
  ),
  path_match_type: Type.Optional(
    StringEnum(['wildcard', 'regex'], {
      description:
        'Applies to both path lists; wildcard `*` matches any characters over the whole path, regex is unanchored',
    }),
  ),
  path_includes: Type.Optional(StrList('Default ["/*"]')),
  path_excludes: Type.Optional(StrList('Paths excluded even when included')),
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

const HeaderOp = Type.Object({
  op: StringEnum(['set', 'add', 'remove'], { description: 'set replaces, add appends another value, remove deletes' }),
  name: Str('Header name (case-insensitive)'),
  value: Type.Optional(Str('Value for set and add')),
});
const PoolOrigin = Type.Object({
  address: Str('Origin IP address or host name'),
  port: Type.Optional(Int('Default 80 for http, 443 for https', { minimum: 1, maximum: 65535 })),
  scheme: Type.Optional(StringEnum(['http', 'https'])),
  weight: Type.Optional(
    Int('Share of traffic relative to the other origins; default 1, 0 = never chosen unless failing over', {
      minimum: 0,
      maximum: 1000,
    }),
  ),
  backup: Type.Optional(Bool('Used only when every primary origin is unhealthy')),
  host_header: Type.Optional(Str('Host header and SNI sent to this origin')),
});
const BasicAuthUser = Type.Object({
  username: Str('User name (no ":")'),
  password: Type.Optional(Str('Write only: hashed with scrypt on write, never read back')),
  password_hash: Type.Optional(Str('scrypt hash as read back; send it back to keep the password')),
});

/** Own fields of each type. `input` for requests, `output` for responses (types without an engine accept any fields). */
const TYPE_FIELDS: Record<RuleType, TProperties | null> = {
  origin_route: {
    address: Str('Origin IP address or host name for the matched paths'),
    port: Type.Optional(Int('Default 80 for http, 443 for https', { minimum: 1, maximum: 65535 })),
    scheme: Type.Optional(StringEnum(['http', 'https'], { description: 'Default http' })),
    host_header: Type.Optional(
      Str('Host header and SNI sent to this origin; inside this domain or another active domain of the same owner'),
    ),
    country: Type.Optional(Str('ISO country code detected from address; read-only', { readOnly: true })),
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
          path: Type.Optional(Str('Default /')),
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
          description:
            'Active GET probes; a 2xx or 3xx answer is healthy. Without it, connection failures mark an origin down passively',
        },
      ),
    ),
  },
  redirect: {
    status_code: Type.Optional(Int('301, 302, 307 or 308; default 302')),
    target: Str(
      'Absolute URL or path; $1..$9 are the captures of the matching path pattern (regex groups, or each * of a wildcard)',
    ),
    keep_query: Type.Optional(Bool('Append the request query string to the target; default true')),
  },
  rewrite: {
    path: Type.Optional(Str('New path sent to the origin; $1..$9 as in redirect')),
    query: Type.Optional(Str('New query string (without ?); empty removes it')),
    append_query: Type.Optional(Bool('Append query to the existing query instead of replacing it; default false')),
  },
  header: {
    request_headers: Type.Optional(Type.Array(HeaderOp, { description: 'Applied to the request sent to the origin' })),
    response_headers: Type.Optional(
      Type.Array(HeaderOp, { description: 'Applied to the response sent to the client' }),
    ),
  },
  drop: {
    action: Type.Optional(
      StringEnum(['status', 'close'], {
        description: 'status: answer status_code; close: close the connection without an answer. Default status',
      }),
    ),
    status_code: Type.Optional(Int('400 to 599; default 403')),
    body: Type.Optional(Str('Response body for action status')),
  },
  basic_auth: {
    realm: Type.Optional(Str('Default "Restricted"')),
    users: Type.Array(BasicAuthUser, { minItems: 1 }),
  },
  error_page: {
    statuses: StrList('Statuses ("404") or ranges ("500-599") of origin or edge answers to replace'),
    body: Str('Body served instead'),
    content_type: Type.Optional(Str('Default text/html; charset=utf-8')),
  },
  cache: {
    action: Type.Optional(StringEnum(['cache', 'bypass'], { description: 'Default cache' })),
    edge_ttl: Type.Optional(
      Int('Seconds kept at the edge; 0 = as the origin says (Cache-Control max-age / s-maxage)', { minimum: 0 }),
    ),
    browser_ttl: Type.Optional(
      Int('Seconds set as Cache-Control max-age towards clients; 0 = origin header unchanged', { minimum: 0 }),
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
    query_keys: Type.Optional(StrList('Query parameters kept in the key when query is only')),
  },
  waf: null,
  captcha: null,
  rate_limit: null,
  bot_route: null,
  fingerprint: null,
  optimize: null,
};

const NO_ENGINE =
  'Type-specific fields of this type are stored as sent; the edge engine for it comes in a later release.';

function optionalAll(p: TProperties): TProperties {
  return Object.fromEntries(Object.entries(p).map(([k, v]) => [k, OptionalKind in v ? v : Type.Optional(v)]));
}

export function ruleSchemas(type: RuleType): { create: TObject; update: TObject; rule: TObject } {
  const own = TYPE_FIELDS[type];
  const title = type
    .split('_')
    .map((w) => w[0].toUpperCase() + w.slice(1))
    .join('');
  const open = own === null ? { additionalProperties: true, description: NO_ENGINE } : {};
  return {
    create: Type.Object({ ...commonInput, ...(own ?? {}) }, { title: `${title}RuleCreate`, ...open }),
    update: Type.Object(
      { ...commonInput, ...optionalAll(own ?? {}) },
      {
        title: `${title}RuleUpdate`,
        description: 'Fields sent replace the stored ones; omitted fields are unchanged',
        ...open,
      },
    ),
    rule: Type.Object({ ...commonOutput, ...optionalAll(own ?? {}) }, { title: `${title}Rule`, ...open }),
  };
}

export const RuleParams = Type.Object({ domain: Type.String(), ruleId: Type.Integer({ minimum: 1 }) });
export const ReorderBody = Type.Object(
  {
    ids: Type.Array(Type.Integer(), {
      description: 'Every rule id of this type, each once, first evaluated first; priorities become 10, 20, 30…',
    }),
  },
  { title: 'RuleReorder' },
);
export const EnabledBody = Type.Object({ enabled: Type.Boolean() }, { title: 'RuleEnabled' });
