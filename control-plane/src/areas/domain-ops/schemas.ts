// TypeBox schemas of the remaining domain operations: manual check results, the analytics tag, custom pages and the
// origin protocol probe.
import { Type, type Static } from '@sinclair/typebox';
import { CUSTOM_PAGE_KINDS, CUSTOM_PAGE_MAX_BYTES } from '@platform/shared/config';
import { Nullable, StringEnum } from '../../openapi/schemas.js';

const Timestamp = Type.String({ format: 'date-time' });

const CheckSlot = Type.Object(
  {
    last_run_at: Nullable(Type.String({ format: 'date-time', description: 'When a user last ran it (null: never)' })),
    next_allowed_at: Nullable(Type.String({ format: 'date-time', description: 'When it may run again (null: now)' })),
    result: Nullable(
      Type.Object({}, { additionalProperties: true, description: 'What the last run found, as that check answered' }),
    ),
  },
  { title: 'ManualCheck' },
);

export const ManualChecks = Type.Object(
  {
    check_ns: CheckSlot,
    delegation: CheckSlot,
    acme_dns_test: CheckSlot,
  },
  {
    title: 'ManualChecks',
    description:
      'The last result of each manual check of the domain: POST check-ns (`check_ns`), POST verify and POST ' +
      'ssl/delegation/check (they share `delegation`), POST ssl/acme-dns/test (`acme_dns_test`). A result written ' +
      'by a background check (the delegation watch) shows with `last_run_at` null.',
  },
);
export type ManualChecksT = Static<typeof ManualChecks>;

export const AnalyticsTag = Type.Object(
  {
    enabled: Type.Boolean({ description: 'Whether the domain has a tag' }),
    tag: Nullable(Type.String({ description: "The site tag: 32 lower-case hex digits, the beacon's identifier" })),
    created_at: Nullable(Timestamp),
    updated_at: Nullable(Timestamp),
  },
  { title: 'AnalyticsTag' },
);
export type AnalyticsTagT = Static<typeof AnalyticsTag>;

export const AnalyticsTagUpdate = Type.Object(
  {
    regenerate: Type.Optional(
      Type.Boolean({ description: 'true draws a new tag (the old one stops identifying the site); default false' }),
    ),
  },
  { title: 'AnalyticsTagUpdate', additionalProperties: false },
);

const KIND_NAMES = Object.keys(CUSTOM_PAGE_KINDS) as Array<keyof typeof CUSTOM_PAGE_KINDS>;

export const CustomPage = Type.Object(
  {
    kind: StringEnum(KIND_NAMES),
    description: Type.String({ description: 'When the edge serves the page' }),
    placeholder: Type.String({ description: 'What the edge replaces in the page' }),
    placeholder_required: Type.Boolean(),
    html: Nullable(Type.String({ description: "The domain's page; null: the edge's default page" })),
    updated_at: Nullable(Timestamp),
  },
  { title: 'CustomPage' },
);
export const CustomPages = Type.Object(
  { pages: Type.Array(CustomPage), max_bytes: Type.Integer({ description: 'Largest page in UTF-8 bytes' }) },
  { title: 'CustomPages' },
);
export type CustomPagesT = Static<typeof CustomPages>;

export const CustomPagesUpdate = Type.Object(
  Object.fromEntries(
    KIND_NAMES.map((k) => [
      k,
      Type.Optional(
        Nullable(
          Type.String({
            maxLength: CUSTOM_PAGE_MAX_BYTES,
            description: `${CUSTOM_PAGE_KINDS[k].description}; null restores the default page`,
          }),
        ),
      ),
    ]),
  ),
  {
    title: 'CustomPagesUpdate',
    additionalProperties: false,
    minProperties: 1,
    description: 'The pages to set (HTML) or reset (null), by kind; kinds left out are unchanged',
  },
);
export type CustomPagesUpdateT = Record<string, string | null | undefined>;

export const OriginProtocols = Type.Object(
  {
    origin_protocol: Type.String({ description: "The domain's setting (auto, http1, http2, http3)" }),
    origins: Type.Array(
      Type.Object({
        scheme: StringEnum(['https', 'http', 'auto'], { description: 'auto: TLS on 443 first, as the edge tries' }),
        host: Type.String({ description: 'Address or name the records point to' }),
        port: Type.Integer(),
        server_name: Type.String({ description: 'TLS SNI and Host header sent' }),
        hostnames: Type.Array(Type.String(), { description: 'Proxied host names served from this origin' }),
        http1: Type.Boolean({ description: 'Answered HEAD / over HTTP/1.1' }),
        http2: Type.Boolean({ description: 'Picked h2 in the TLS handshake (ALPN)' }),
        http3: Type.Boolean({ description: 'Advertises HTTP/3' }),
        http3_via: Nullable(
          StringEnum(['alt-svc', 'quic'], {
            description: 'How HTTP/3 was established: always alt-svc here (no QUIC client in Node 20)',
          }),
        ),
        status: Nullable(Type.Integer({ description: "The HEAD's status" })),
        error: Nullable(Type.String({ description: 'Why a step failed' })),
        checked_at: Nullable(Timestamp),
        cached: Type.Boolean({ description: 'Reused from a probe less than 20 seconds old' }),
      }),
    ),
  },
  { title: 'OriginProtocols' },
);
