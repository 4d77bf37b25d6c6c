// Query parameters and answers of the per-domain analytics reads, one style for all: since/until, interval, filters.
import { Type, type TProperties, type TSchema } from '@sinclair/typebox';
import {
  DIMENSIONS,
  DEFAULT_LOGS_PAGE,
  DEFAULT_TOP,
  INTERVALS,
  MAX_LOGS_PAGE,
  MAX_POINTS,
  MAX_RANGE_DAYS,
  MAX_TOP,
} from './reads.js';

const TIME_TEXT = { maxLength: 40, examples: ['2026-11-25T00:00:00Z'] };

/** The range and filter parameters every read takes. */
const RANGE_AND_FILTERS = {
  since: Type.Optional(
    Type.String({
      ...TIME_TEXT,
      description: 'Start of the range (inclusive), ISO 8601 with a zone; default: a day before `until`',
    }),
  ),
  until: Type.Optional(
    Type.String({
      ...TIME_TEXT,
      description: `End of the range (exclusive), ISO 8601 with a zone; default: now. At most ${MAX_RANGE_DAYS} days after \`since\``,
    }),
  ),
  host: Type.Optional(Type.String({ minLength: 1, maxLength: 253, description: 'Only requests to this Host' })),
  path: Type.Optional(
    Type.String({ minLength: 1, maxLength: 2048, description: 'Only requests of this path (with its query string)' }),
  ),
  method: Type.Optional(Type.String({ minLength: 1, maxLength: 16, description: 'Only requests of this HTTP method' })),
  status: Type.Optional(
    Type.Integer({ minimum: 100, maximum: 599, description: 'Only requests answered with this status' }),
  ),
  cache_status: Type.Optional(
    Type.String({
      maxLength: 32,
      description: "Only requests with this cache outcome (HIT, MISS, BYPASS, …; '' none)",
    }),
  ),
  node: Type.Optional(
    Type.String({ minLength: 1, maxLength: 128, description: 'Only requests served by this edge node' }),
  ),
  bot_class: Type.Optional(
    Type.String({
      maxLength: 32,
      description: "Only requests of this bot class (verified_crawler, ai_crawler, automation, human, …; '' none)",
    }),
  ),
  country: Type.Optional(
    Type.String({ maxLength: 2, description: "Only requests from this country (ISO 3166 code; '' unknown)" }),
  ),
  asn: Type.Optional(
    Type.Integer({ minimum: 0, maximum: 4294967295, description: 'Only requests from this AS number (0 unknown)' }),
  ),
  http_protocol: Type.Optional(
    Type.String({ maxLength: 16, description: "Only requests of this HTTP version (HTTP/1.1, …; '' unknown)" }),
  ),
  tls_version: Type.Optional(
    Type.String({ maxLength: 16, description: "Only requests of this TLS (none, TLS, TLSv1.3, …; '' unknown)" }),
  ),
  ua_category: Type.Optional(
    Type.String({
      maxLength: 16,
      description:
        "Only requests of this user-agent category (browser, mobile, crawler, ai_crawler, library, empty, other; '' unknown)",
    }),
  ),
  serving_path: Type.Optional(
    Type.String({ maxLength: 16, description: "Only requests answered this way (cache, origin, edge; '' unknown)" }),
  ),
  unserved_reason: Type.Optional(
    Type.String({
      maxLength: 32,
      description: "Only requests the origin did not answer for this reason ('' those it answered)",
    }),
  ),
  markdown: Type.Optional(Type.Boolean({ description: 'Only requests answered (or not) with Markdown for agents' })),
} satisfies TProperties;

/** `limit` of the top-N reads: 1-MAX_TOP, DEFAULT_TOP by default. */
export const limit = Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_TOP, default: DEFAULT_TOP }));

const query = <T extends TProperties>(title: string, extra: T) =>
  Type.Object({ ...RANGE_AND_FILTERS, ...extra }, { additionalProperties: false, title });

export const RangeQuery = query('AnalyticsRangeQuery', {});
export const SeriesQuery = query('AnalyticsSeriesQuery', {
  interval: Type.Optional(
    Type.Union(
      Object.keys(INTERVALS).map((k) => Type.Literal(k)),
      {
        description: `Length of each point; default: the shortest that keeps the points within ${MAX_POINTS}. 400 when the one given gives more`,
      },
    ),
  ),
});
export const TopQuery = query('AnalyticsTopQuery', {
  dimension: Type.Union(
    DIMENSIONS.map((d) => Type.Literal(d)),
    { description: 'The column of the logs the requests are grouped by' },
  ),
  limit,
});
export const TopUrisQuery = query('AnalyticsTopUrisQuery', {
  limit,
});
export const LimitQuery = query('AnalyticsLimitQuery', {
  limit,
});
export const LogsQuery = query('AnalyticsLogsQuery', {
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_LOGS_PAGE, default: DEFAULT_LOGS_PAGE })),
  cursor: Type.Optional(
    Type.String({ minLength: 1, maxLength: 40, description: 'The `next_cursor` of the previous page' }),
  ),
});

export const Window = {
  since: Type.String({ format: 'date-time' }),
  until: Type.String({ format: 'date-time' }),
};
export const SeriesWindow = {
  ...Window,
  interval: Type.String({ description: 'The interval of the points' }),
};
export const Time = Type.String({
  format: 'date-time',
  description: 'Start of the point (UTC, a multiple of the interval)',
});
/** The points of an over-time answer. */
export const points = (item: TSchema) =>
  Type.Array(item, {
    description: 'One point per interval from the one holding `since` to the one holding `until`; empty ones are 0',
  });
const point = (field: string, description: string) =>
  points(Type.Object({ time: Time, [field]: Type.Integer({ description }) }));

export const RequestsAnswer = Type.Object(
  {
    ...SeriesWindow,
    requests: Type.Integer({ description: 'Requests in the range' }),
    points: point('requests', 'Requests'),
  },
  { title: 'AnalyticsRequests' },
);
export const BandwidthAnswer = Type.Object(
  {
    ...SeriesWindow,
    bytes: Type.Integer({ description: 'Bytes sent to clients in the range' }),
    points: point('bytes', 'Bytes sent to clients'),
  },
  { title: 'AnalyticsBandwidth' },
);
export const VisitorsAnswer = Type.Object(
  {
    ...SeriesWindow,
    visitors: Type.Integer({ description: 'Distinct client addresses in the whole range' }),
    points: point('visitors', 'Distinct client addresses in the point'),
  },
  { title: 'AnalyticsVisitors' },
);
const Ms = Type.Number({ description: 'milliseconds' });
export const SummaryAnswer = Type.Object(
  {
    ...Window,
    requests: Type.Integer(),
    bytes: Type.Integer({ description: 'Bytes sent to clients' }),
    visitors: Type.Integer({ description: 'Distinct client addresses' }),
    cached_requests: Type.Integer({ description: 'Requests served from the cache (HIT, STALE)' }),
    cached_bytes: Type.Integer(),
    origin_requests: Type.Integer({ description: 'Requests passed to the origin' }),
    origin_bytes: Type.Integer({ description: 'Bytes sent to the clients of those requests' }),
    errors_4xx: Type.Integer(),
    errors_5xx: Type.Integer(),
  },
  { title: 'AnalyticsSummary' },
);
export const OriginAnswer = Type.Object(
  {
    ...Window,
    requests: Type.Integer({ description: 'Requests passed to the origin' }),
    bytes: Type.Integer({ description: 'Bytes sent to the clients of those requests' }),
    share: Type.Number({ description: 'Of all requests, the part passed to the origin (0 with none)' }),
    upstream_ms: Type.Union(
      [Type.Object({ avg: Ms, p50: Ms, p95: Ms, p99: Ms }, { description: 'nearest-rank percentiles' }), Type.Null()],
      { description: 'Time waiting for the origin; null when no request went to it' },
    ),
    bytes_from_origin: Type.Integer({ description: 'Body bytes received from the origin' }),
    failures: Type.Object(
      {
        unreachable: Type.Integer({ description: 'No connection to the origin (502)' }),
        timeout: Type.Integer({ description: 'The origin did not answer in time (504)' }),
        refused: Type.Integer({ description: 'The edge refused the address (a private or own address; 502)' }),
        certificate: Type.Integer({ description: "The origin's certificate was not accepted (526)" }),
        stale_served: Type.Integer({ description: 'The origin failed and a stale cached copy was served' }),
      },
      { description: 'Requests the origin failed, by how' },
    ),
  },
  { title: 'AnalyticsOrigin' },
);
export const PeakAnswer = Type.Object(
  {
    ...Window,
    requests_per_second: Type.Integer({ description: 'Requests in the busiest second (0 with none)' }),
    time: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
      description: 'Start of that second (the earliest of equals); null with no request',
    }),
  },
  { title: 'AnalyticsPeakRps' },
);
const busy = (description: string) =>
  Type.Union([Type.Object({ time: Type.String({ format: 'date-time' }), requests: Type.Integer() }), Type.Null()], {
    description,
  });
export const BusiestAnswer = Type.Object(
  {
    ...Window,
    day: busy('The UTC day with the most requests (its start; the earliest of equals); null with none'),
    hour: busy('The UTC hour with the most requests (its start; the earliest of equals); null with none'),
  },
  { title: 'AnalyticsBusiest' },
);
export const BotScoresAnswer = Type.Object(
  {
    ...Window,
    requests: Type.Integer(),
    bands: Type.Object(
      {
        not_scored: Type.Integer({ description: 'score 0: no bot_route rule looked' }),
        automated: Type.Integer({ description: 'score 1' }),
        likely_automated: Type.Integer({ description: 'scores 2-29' }),
        likely_human: Type.Integer({ description: 'scores 30-99' }),
      },
      { description: 'Requests per bot score band (the bands of Cloudflare Bot Management)' },
    ),
    scores: Type.Array(Type.Object({ score: Type.Integer(), requests: Type.Integer() }), {
      description: 'Requests per score 1-99 present, by score',
    }),
    bot_classes: Type.Array(Type.Object({ bot_class: Type.String(), requests: Type.Integer() }), {
      description: "Requests per bot class, most first ('' when no bot_route rule looked)",
    }),
  },
  { title: 'AnalyticsBotScores' },
);
const change = Type.Union([Type.Number(), Type.Null()]);
export const CompareAnswer = Type.Object(
  {
    current: SummaryAnswer,
    previous: { ...SummaryAnswer, description: 'The period of the same length just before `since`' },
    change: Type.Object(
      Object.fromEntries(
        Object.keys(SummaryAnswer.properties)
          .filter((k) => k !== 'since' && k !== 'until')
          .map((k) => [k, change]),
      ),
      { description: '(current - previous) / previous per total; null when the previous one is 0' },
    ),
  },
  { title: 'AnalyticsComparison' },
);
export const RulesAnswer = Type.Object(
  {
    ...Window,
    rules: Type.Array(
      Type.Object({
        rule_id: Type.Integer(),
        rule_type: Type.String(),
        hits: Type.Integer({ description: 'Requests the rule matched' }),
        dry_run: Type.Integer({ description: 'Of those, matched in dry run (logged, not enforced)' }),
      }),
      { description: 'Most hits first (ties by rule id)' },
    ),
  },
  { title: 'AnalyticsBusiestRules' },
);
export const SecurityActionsAnswer = Type.Object(
  {
    ...Window,
    actions: Type.Array(
      Type.Object({
        action: Type.String({ description: 'The action of the WAF finding (block, log, challenge, …)' }),
        events: Type.Integer({ description: 'Findings with this action' }),
        requests: Type.Integer({ description: 'Requests with at least one such finding' }),
      }),
      { description: 'Most findings first (ties by action)' },
    ),
  },
  { title: 'AnalyticsSecurityActions' },
);
export const counts = { requests: Type.Integer(), bytes: Type.Integer({ description: 'Bytes sent to clients' }) };
/** Requests and bytes per value of one field, most requests first (ties by value). */
const perValue = <P extends TProperties>(title: string, item: P, description: string) =>
  Type.Object(
    {
      ...Window,
      requests: Type.Integer({ description: 'Requests in the range' }),
      items: Type.Array(Type.Object({ ...item, ...counts }), { description }),
    },
    { title },
  );
export const CountriesAnswer = perValue(
  'AnalyticsCountries',
  { country: Type.String() },
  "Requests per country of the client address (ISO 3166 code; '' unknown), most first",
);
export const NetworksAnswer = perValue(
  'AnalyticsNetworks',
  { asn: Type.Integer(), organisation: Type.String({ description: "The AS's organisation ('' unknown)" }) },
  'Requests per autonomous system of the client address (0 unknown), most first, `limit` of them',
);
export const ProtocolsAnswer = perValue(
  'AnalyticsProtocols',
  { http_protocol: Type.String() },
  "Requests per HTTP version of the request (HTTP/1.1, HTTP/2, HTTP/3; '' logged before the edge recorded it)",
);
export const TlsAnswer = perValue(
  'AnalyticsTlsVersions',
  { tls_version: Type.String() },
  "Requests per TLS of the client connection (none: plain HTTP; TLS: HTTPS whose version the edge does not know; TLSv1.2, TLSv1.3; '' logged before the edge recorded it)",
);
export const UserAgentsAnswer = perValue(
  'AnalyticsUserAgentCategories',
  { category: Type.String() },
  "Requests per user-agent category (browser, mobile, crawler, ai_crawler, library, empty, other; '' logged before the edge recorded it)",
);
export const UnservedAnswer = Type.Object(
  {
    ...Window,
    requests: Type.Integer({ description: 'Requests in the range' }),
    unserved: Type.Integer({ description: 'Of those, the ones the origin did not answer' }),
    reasons: Type.Array(Type.Object({ reason: Type.String(), ...counts }), {
      description:
        'Per reason, most first: host_not_served, acme_challenge, drop, custom_block, fingerprint_block, bot_block, rate_limited, challenge_issued, challenge_passed, challenge_failed, waf_block, auth_required, auth_throttled, auth_denied, sso_sign_in, redirect, origin_unreachable, origin_timeout, origin_refused, origin_certificate, stale_on_origin_error, client_aborted, edge_error',
    }),
  },
  { title: 'AnalyticsUnserved' },
);
export const EgressAnswer = Type.Object(
  {
    ...Window,
    bytes: Type.Integer({ description: 'Bytes sent to clients in the range' }),
    bytes_from_origin: Type.Integer({ description: 'Body bytes received from the origin in the range' }),
    cache_statuses: Type.Array(
      Type.Object({ cache_status: Type.String(), ...counts, bytes_from_origin: Type.Integer() }),
      { description: "Per cache outcome, most requests first ('' when no cache rule applied)" },
    ),
    serving_paths: Type.Array(
      Type.Object({ serving_path: Type.String(), ...counts, bytes_from_origin: Type.Integer() }),
      {
        description:
          "Per serving path (cache, origin, edge; '' logged before the edge recorded it), most requests first",
      },
    ),
  },
  { title: 'AnalyticsEgress' },
);
export const UnderAttackAnswer = Type.Object(
  {
    ...Window,
    issued: Type.Integer({
      description: 'Challenge pages answered (Under Attack Mode, captcha rules and flags, rate limits)',
    }),
    passed: Type.Integer({ description: 'Answers to the challenge accepted (a clearance cookie set)' }),
    failed: Type.Integer({ description: 'Answers to the challenge refused (wrong, expired, malformed or too large)' }),
    solve_rate: Type.Number({ description: 'passed / issued (0 with none issued)' }),
    under_attack_issued: Type.Integer({
      description: 'Of the pages issued, those asked for by Under Attack Mode itself (not by a rule or a record flag)',
    }),
  },
  { title: 'AnalyticsUnderAttack' },
);
export const RateLimitKeysAnswer = Type.Object(
  {
    ...Window,
    requests: Type.Integer({ description: 'Requests an enforced rate_limit rule refused (429) or challenged' }),
    keys: Type.Array(Type.Object({ key: Type.String(), ...counts }), {
      description: 'The keys that tripped (ip=…, path=…, <header>=…), most requests first, `limit` of them',
    }),
    rules: Type.Array(Type.Object({ rule_id: Type.Integer(), ...counts }), {
      description: 'The rules that tripped, most requests first, `limit` of them',
    }),
  },
  { title: 'AnalyticsRateLimitKeys' },
);
export const MarkdownAnswer = Type.Object(
  {
    ...Window,
    requests: Type.Integer({ description: 'Requests answered with Markdown for agents' }),
    bytes: Type.Integer({ description: 'Bytes of those answers sent to clients' }),
    bytes_from_origin: Type.Integer({
      description: 'Bytes of the HTML the origin sent for them (a cached answer: 0): the size before conversion',
    }),
    share_of_ai_crawlers: Type.Number({
      description:
        'Of the requests of AI crawlers (ua_category ai_crawler), the part answered with Markdown (0 with none)',
    }),
    user_agents: Type.Array(Type.Object({ category: Type.String(), ...counts }), {
      description: 'The Markdown answers per user-agent category, most first',
    }),
    paths: Type.Array(Type.Object({ path: Type.String(), ...counts }), {
      description: 'The paths answered most with Markdown, `limit` of them',
    }),
  },
  { title: 'AnalyticsMarkdown' },
);
export const StatusCodesAnswer = Type.Object(
  {
    ...Window,
    requests: Type.Integer(),
    classes: Type.Object(
      {
        '1xx': Type.Integer(),
        '2xx': Type.Integer(),
        '3xx': Type.Integer(),
        '4xx': Type.Integer(),
        '5xx': Type.Integer(),
      },
      { description: 'Requests per status class' },
    ),
    status_codes: Type.Array(Type.Object({ status: Type.Integer(), ...counts }), {
      description: 'Every status answered, most requests first',
    }),
  },
  { title: 'AnalyticsStatusCodes' },
);
export const CacheAnswer = Type.Object(
  {
    ...Window,
    requests: Type.Integer(),
    hit_ratio: Type.Number({
      description:
        'Requests served from the cache (HIT, STALE) over those that looked in it (HIT, STALE, MISS, EXPIRED); 0 when none did',
    }),
    cache_statuses: Type.Array(Type.Object({ cache_status: Type.String(), ...counts }), {
      description: "Requests per cache outcome, most first ('' when no cache rule applied)",
    }),
  },
  { title: 'AnalyticsCache' },
);
export const TopUrisAnswer = Type.Object(
  { ...Window, items: Type.Array(Type.Object({ path: Type.String(), ...counts })) },
  { title: 'AnalyticsTopUris' },
);
export const TopAnswer = Type.Object(
  {
    ...Window,
    dimension: Type.String(),
    items: Type.Array(Type.Object({ value: Type.Union([Type.String(), Type.Integer()]), ...counts }), {
      description: 'Values of the dimension, most requests first (ties by value)',
    }),
  },
  { title: 'AnalyticsTop' },
);
export const LogsAnswer = Type.Object(
  {
    ...Window,
    logs: Type.Array(
      Type.Object({
        time: Type.String({ format: 'date-time' }),
        host: Type.String(),
        path: Type.String(),
        method: Type.String(),
        status: Type.Integer(),
        bytes: Type.Integer(),
        cache_status: Type.String(),
        node: Type.String(),
        client_ip: Type.String(),
        duration_ms: Type.Number(),
        upstream_ms: Type.Number(),
        rule_hits: Type.Unknown({ description: '[rule id, rule type, dry run] per rule that matched' }),
        waf_events: Type.Unknown({
          description: '[edge rule id, managed rule id, phase, target, data, action] per finding',
        }),
        fingerprint: Type.String(),
        bot_score: Type.Integer(),
        bot_class: Type.String(),
        tls_version: Type.String(),
        http_protocol: Type.String(),
        ua_category: Type.String(),
        serving_path: Type.String(),
        unserved_reason: Type.String(),
        origin_bytes: Type.Integer(),
        markdown: Type.Boolean(),
        rate_limit_rule: Type.Integer(),
        rate_limit_key: Type.String(),
        country: Type.String(),
        asn: Type.Integer(),
        as_org: Type.String(),
      }),
      { description: 'Newest first' },
    ),
    next_cursor: Type.Union([Type.String(), Type.Null()], {
      description: 'Pass as `cursor` (with the same range and filters) for the next page; null on the last page',
    }),
  },
  { title: 'AnalyticsLogs' },
);
