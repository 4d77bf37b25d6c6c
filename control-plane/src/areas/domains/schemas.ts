// TypeBox schemas of the domain routes: DomainDetail, DomainWithSsl, DomainCreate, DomainUpdate, NsSets.
import { Type, type Static } from '@sinclair/typebox';
import { Nullable, StringEnum } from '../../openapi/schemas.js';
import { PERMISSIONS, ROLES } from '../../auth/permissions.js';

/** Allowed cache_cap_mb tiers (spec Limits: "not shown; bounded by the plan's max_cache_cap_mb"). */
export const CACHE_CAP_TIERS_MB = [100, 250, 500, 1000, 2000, 5000, 10000] as const;
export const ORIGIN_PROTOCOLS = ['auto', 'http1', 'http2', 'http3'] as const;
export const DNS_MODES = ['managed', 'external'] as const;

const Timestamp = Type.String({ format: 'date-time' });

export const Verification = Type.Object(
  {
    type: Type.Literal('TXT'),
    name: Type.String({ description: 'Fully qualified name of the TXT record to publish' }),
    value: Type.String({ description: 'Exact TXT value' }),
    expires_at: Timestamp,
  },
  { title: 'Verification', description: 'The TXT record that proves ownership (legacy); a retry returns a new one' },
);

export const SslDelegation = Type.Object(
  {
    type: Type.Literal('CNAME'),
    name: Type.String({ description: '`_acme-challenge.<domain>`' }),
    target: Type.String({ description: 'Where the CNAME points; the service answers ACME challenges there' }),
  },
  {
    title: 'SslDelegation',
    description: 'The CNAME that proves control and lets the service issue certificates (external DNS)',
  },
);

/** Every edge setting of the domain, as the edge nodes apply it (the settings of its config-log snapshot). */
export const EdgeSettings = Type.Object(
  {
    developer_mode: Type.Boolean({ description: 'Cache reads and writes bypassed until developer_mode_expires_at' }),
    developer_mode_expires_at: Nullable(Timestamp),
    cache_l2_ttl_days: Type.Integer({ minimum: 1, maximum: 7, description: 'Days cached objects are kept' }),
    cache_cap_mb: Type.Integer({ description: "The domain's cache size per edge node, in megabytes" }),
    origin_protocol: StringEnum([...ORIGIN_PROTOCOLS], {
      description:
        'The highest HTTP version offered to origins: http1 only HTTP/1.1; auto, http2 and http3 offer HTTP/2 in TLS ' +
        'ALPN (the edge has no HTTP/3 client yet); plain-HTTP origins always get HTTP/1.1',
    }),
    under_attack: Type.Boolean({
      description: 'Under Attack Mode: every request gets the challenge page (GET/PUT /domains/{domain}/under-attack)',
    }),
  },
  { title: 'EdgeSettings' },
);

const detailFields = {
  id: Type.Integer(),
  name: Type.String({ description: 'The domain name (punycode for IDNs)' }),
  unicode_name: Type.String({ description: 'The name in Unicode (same as name unless an IDN)' }),
  dns_mode: StringEnum([...DNS_MODES]),
  state: Type.String({ description: 'pending, unverified, active, disabled, moved or banned' }),
  verification_state: Nullable(Type.String({ description: 'external domains: awaiting, failed or verified' })),
  nameservers: Type.Array(Type.String(), { description: 'The nameserver set to delegate to (managed DNS)' }),
  cache_l2_ttl_days: Type.Integer({ minimum: 1, maximum: 7 }),
  cache_cap_mb: Type.Integer(),
  origin_protocol: StringEnum([...ORIGIN_PROTOCOLS]),
  developer_mode: Type.Boolean(),
  developer_mode_expires_at: Nullable(Timestamp),
  verification: Nullable(Verification),
  ssl_delegation: Nullable(SslDelegation),
  settings: EdgeSettings,
  role: StringEnum([...ROLES]),
  permissions: Type.Array(StringEnum([...PERMISSIONS])),
  created_at: Timestamp,
  updated_at: Timestamp,
};

export const DomainDetail = Type.Object(detailFields, { title: 'DomainDetail' });
export type DomainDetailT = Static<typeof DomainDetail>;

export const SslSummary = Type.Object(
  {
    status: Type.String({ description: 'missing, pending, failed or active' }),
    expires_at: Nullable(Timestamp),
  },
  { title: 'SslSummary' },
);

export const SubscriptionSummary = Type.Object(
  {
    plan: Type.String({ description: 'Plan slug' }),
    plan_name: Type.String(),
    status: Type.String(),
    expires_at: Nullable(Timestamp),
  },
  { title: 'SubscriptionSummary' },
);

export const DomainWithSsl = Type.Object(
  {
    ...detailFields,
    ssl: SslSummary,
    subscription: Nullable(SubscriptionSummary),
  },
  { title: 'DomainWithSsl' },
);
export type DomainWithSslT = Static<typeof DomainWithSsl>;

export const DomainCreate = Type.Object(
  {
    name: Type.String({
      minLength: 1,
      maxLength: 1024,
      description: 'Domain name; IDNs are accepted and stored as punycode',
    }),
    dns_mode: Type.Optional(StringEnum([...DNS_MODES], { default: 'managed' })),
  },
  { title: 'DomainCreate', additionalProperties: false },
);

export const DomainUpdate = Type.Object(
  {
    dns_mode: Type.Optional(StringEnum([...DNS_MODES])),
    cache_l2_ttl_days: Type.Optional(Type.Integer({ minimum: 1, maximum: 7 })),
    cache_cap_mb: Type.Optional(
      Type.Unsafe<number>({
        type: 'integer',
        enum: [...CACHE_CAP_TIERS_MB],
        description: "A tier in megabytes, at most the plan's max_cache_cap_mb",
      }),
    ),
    origin_protocol: Type.Optional(StringEnum([...ORIGIN_PROTOCOLS])),
  },
  { title: 'DomainUpdate', additionalProperties: false },
);

export const DomainParams = Type.Object({
  domain: Type.String({ description: 'Domain name, percent-encoded when needed' }),
});

export const NsSets = Type.Object(
  {
    sets: Type.Array(Type.Array(Type.String()), {
      description: 'Each inner array is one complete acceptable set; the first is recommended',
    }),
  },
  { title: 'NsSets' },
);
