// Query parameters and answers of the account-wide reads (GET /analytics/...) and of the per-domain reads of
// account-read-routes.ts, in the style of read-schemas.ts.
import { Type, type TObject, type TProperties } from '@sinclair/typebox';
import { BEHAVIOUR_DIMENSIONS, GROUP_DIMENSIONS } from './account-reads.js';
import {
  counts,
  limit,
  points,
  RangeQuery,
  SeriesQuery,
  SeriesWindow,
  SummaryAnswer,
  Time,
  Window,
} from './read-schemas.js';

/** A query of read-schemas.ts with more parameters. */
const more = <B extends TProperties, T extends TProperties>(base: TObject<B>, title: string, extra: T) =>
  Type.Object({ ...base.properties, ...extra }, { additionalProperties: false, title });

/** Points of a sparkline at most; without `interval`, the shortest with at most SPARKLINE_DEFAULT_POINTS. */
export const MAX_SPARKLINE_POINTS = 200;
export const SPARKLINE_DEFAULT_POINTS = 60;
export const PROXY_DEFAULTS = { minRequests: 50, minFingerprints: 3 };
export const MAX_ATTACKS = 50;
export const DEFAULT_BEHAVIOUR_VALUES = 5;
export const MAX_BEHAVIOUR_VALUES = 10;

export const AccountTopQuery = more(RangeQuery, 'AnalyticsAccountTopQuery', {
  dimension: Type.Union(
    GROUP_DIMENSIONS.map((d) => Type.Literal(d)),
    { description: 'The column the requests are grouped by (domain_id: the domain, answered by name; status_class)' },
  ),
  limit,
});
export const ProxyClientsQuery = more(RangeQuery, 'AnalyticsProxyClientsQuery', {
  min_requests: Type.Optional(
    Type.Integer({
      minimum: 1,
      maximum: 1_000_000_000,
      default: PROXY_DEFAULTS.minRequests,
      description: 'Requests an address must have sent in the range',
    }),
  ),
  min_fingerprints: Type.Optional(
    Type.Integer({
      minimum: 2,
      maximum: 1000,
      default: PROXY_DEFAULTS.minFingerprints,
      description: 'Distinct client fingerprints (fingerprint rules) seen from the address',
    }),
  ),
  limit,
});
export const BehaviourQuery = more(SeriesQuery, 'AnalyticsBehaviourQuery', {
  dimension: Type.Union(
    BEHAVIOUR_DIMENSIONS.map((d) => Type.Literal(d)),
    { description: 'The column whose values are followed over time' },
  ),
  limit: Type.Optional(
    Type.Integer({
      minimum: 1,
      maximum: MAX_BEHAVIOUR_VALUES,
      default: DEFAULT_BEHAVIOUR_VALUES,
      description: 'Values followed (the ones with most requests); the rest is `other`',
    }),
  ),
});
export const AttacksQuery = more(RangeQuery, 'AnalyticsAttacksQuery', {
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_ATTACKS, default: 10 })),
});
export const SparklineQuery = more(RangeQuery, 'AnalyticsSparklineQuery', {
  interval: SeriesQuery.properties.interval,
});

const Coverage = {
  domains: Type.Array(Type.String(), { description: 'The domains read: yours whose plan includes analytics' }),
  excluded_domains: Type.Array(
    Type.Object({
      domain: Type.String(),
      missing: Type.String({ description: 'The plan feature it lacks (analytics_enabled)' }),
    }),
    { description: 'Your domains left out, with the plan feature each lacks' },
  ),
};
const account = <T extends TProperties>(title: string, props: T) =>
  Type.Object({ ...Window, ...Coverage, ...props }, { title });
const accountSeries = <T extends TProperties>(title: string, props: T) =>
  Type.Object({ ...SeriesWindow, ...Coverage, ...props }, { title });

const summaryTotals = Object.fromEntries(
  Object.entries(SummaryAnswer.properties).filter(([k]) => k !== 'since' && k !== 'until'),
) as Omit<typeof SummaryAnswer.properties, 'since' | 'until'>;
export const AccountSummaryAnswer = account('AnalyticsAccountSummary', summaryTotals);

export const AccountDomainsAnswer = accountSeries('AnalyticsDomainTotals', {
  items: Type.Array(
    Type.Object({
      domain: Type.String(),
      ...counts,
      visitors: Type.Integer({ description: 'Distinct client addresses' }),
      sparkline: Type.Array(Type.Integer(), {
        description: 'Requests per interval, from the one holding `since` to the one holding `until`',
      }),
    }),
    { description: 'Every domain read, most requests first (ties by name)' },
  ),
});

export const AccountPeakAnswer = account('AnalyticsAccountPeakRps', {
  requests_per_second: Type.Integer({
    description: 'Requests to all your domains in the busiest second (0 with none)',
  }),
  time: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
    description: 'Start of that second (the earliest of equals); null with no request',
  }),
});

const originProps = {
  requests: Type.Integer({ description: 'Requests passed to the origin' }),
  bytes: Type.Integer({ description: 'Bytes sent to the clients of those requests' }),
  share: Type.Number({ description: 'Of all bytes sent to clients, the part of requests passed to the origin' }),
  cached_bytes: Type.Integer({ description: 'Bytes served from the cache (HIT, STALE)' }),
  fetched_bytes: Type.Integer({ description: 'Body bytes received from the origin' }),
  points: points(
    Type.Object({ time: Time, ...counts, fetched_bytes: Type.Integer({ description: 'Received from the origin' }) }),
  ),
};
export const OriginBandwidthAnswer = accountSeries('AnalyticsOriginBandwidth', originProps);

export const ProxyClientsAnswer = account('AnalyticsProxyClients', {
  clients: Type.Array(
    Type.Object({
      client_ip: Type.String(),
      ...counts,
      fingerprints: Type.Integer({ description: 'Distinct client fingerprints seen from the address' }),
      domains: Type.Integer({ description: 'Distinct domains of yours it reached' }),
      bot_classes: Type.Integer({ description: 'Distinct bot classes of its requests' }),
    }),
    { description: 'Most fingerprints first, then most requests, then by address' },
  ),
});

export const EdgeNodesAnswer = account('AnalyticsEdgeNodes', {
  requests: Type.Integer(),
  nodes: Type.Array(
    Type.Object({
      node: Type.String(),
      ...counts,
      visitors: Type.Integer({ description: 'Distinct client addresses' }),
      share: Type.Number({ description: 'Of all requests, the part this node served' }),
    }),
    { description: 'Most requests first (ties by node), at most 100' },
  ),
});

const billableProps = {
  requests: Type.Integer(),
  bytes: Type.Integer({ description: 'All bytes sent to clients' }),
  billable_requests: Type.Integer(),
  billable_bytes: Type.Integer({
    description: 'Bytes sent to clients, less the answers the edge gave when a security rule refused the request',
  }),
  points: points(
    Type.Object({
      time: Time,
      bytes: Type.Integer(),
      billable_bytes: Type.Integer(),
    }),
  ),
};
export const AccountBillableAnswer = accountSeries('AnalyticsAccountBillable', billableProps);
export const BillableAnswer = Type.Object({ ...SeriesWindow, ...billableProps }, { title: 'AnalyticsBillable' });

export const NodeCountryQuery = more(RangeQuery, 'AnalyticsNodeCountryQuery', {
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 100 })),
});
export const NodeCountryAnswer = account('AnalyticsTrafficByNodeAndCountry', {
  items: Type.Array(
    Type.Object({
      node: Type.String(),
      country: Type.String({ description: "ISO 3166 code of the clients' country ('' unknown)" }),
      ...counts,
      visitors: Type.Integer(),
    }),
    { description: 'Per edge node and client country, most requests first (ties by node, then country)' },
  ),
});

export const TopFilesAnswer = account('AnalyticsTopFiles', {
  items: Type.Array(
    Type.Object({
      host: Type.String(),
      path: Type.String({ description: 'With its query string' }),
      ...counts,
      visitors: Type.Integer(),
    }),
    { description: 'Most requests first (ties by host and path)' },
  ),
});

export const AccountTopAnswer = account('AnalyticsAccountTop', {
  dimension: Type.String(),
  items: Type.Array(
    Type.Object({ value: Type.Union([Type.String(), Type.Integer()]), ...counts, visitors: Type.Integer() }),
    { description: 'Values of the dimension over all your domains, most requests first (ties by value)' },
  ),
});

export const BehaviourAnswer = Type.Object(
  {
    ...SeriesWindow,
    dimension: Type.String(),
    times: Type.Array(Type.String({ format: 'date-time' }), { description: 'Start of each point' }),
    series: Type.Array(
      Type.Object({
        value: Type.Union([Type.String(), Type.Integer()]),
        requests: Type.Array(Type.Integer(), { description: 'Requests per point' }),
        bytes: Type.Array(Type.Integer(), { description: 'Bytes per point' }),
      }),
      { description: 'The values with most requests in the range, most first (ties by value)' },
    ),
    other: Type.Object(
      { requests: Type.Array(Type.Integer()), bytes: Type.Array(Type.Integer()) },
      { description: 'Per point, the requests and bytes of every other value' },
    ),
  },
  { title: 'AnalyticsBehaviour' },
);

export const AiCrawlersAnswer = Type.Object(
  {
    ...SeriesWindow,
    requests: Type.Integer({ description: 'Requests of AI crawlers (bot_class ai_crawler)' }),
    bytes: Type.Integer(),
    share: Type.Number({ description: 'Of all requests in the range (with the other filters), the AI crawlers’ part' }),
    points: points(Type.Object({ time: Time, ...counts })),
    top_paths: Type.Array(Type.Object({ path: Type.String(), ...counts }), {
      description: 'The paths they asked for most, most requests first',
    }),
    by_user_agent: Type.Object(counts, {
      description: 'Requests whose user agent names an AI crawler (ua_category ai_crawler), classed by a rule or not',
    }),
    top_hosts: Type.Array(Type.Object({ host: Type.String(), ...counts }), {
      description: 'The hosts they asked most, most requests first',
    }),
  },
  { title: 'AnalyticsAiCrawlers' },
);

export const AttacksAnswer = Type.Object(
  {
    ...Window,
    attacks: Type.Array(
      Type.Object({
        id: Type.Integer(),
        kind: Type.String({ description: 'request_rate or error_rate' }),
        host: Type.String({ description: 'The host name attacked ("" for the whole domain)' }),
        path: Type.String({ description: 'The path attacked ("" for every path)' }),
        status: Type.String({ description: 'detected, enforced or ignored' }),
        started_at: Type.String({ format: 'date-time' }),
        ended_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
          description: 'null while it goes on',
        }),
        peak_requests_per_minute: Type.Integer(),
        rule_id: Type.Union([Type.Integer(), Type.Null()], { description: 'The rule enforce created, if any' }),
        requests: Type.Integer({ description: 'Requests to the domain from its start to its end (or now)' }),
        rule_hits: Type.Array(
          Type.Object({
            rule_id: Type.Integer(),
            rule_type: Type.String(),
            hits: Type.Integer(),
            dry_run: Type.Integer({ description: 'Of those, in dry run' }),
          }),
          { description: 'The rules that matched during the attack, most hits first, at most 20' },
        ),
      }),
      { description: 'Attacks that overlap the range, newest first' },
    ),
  },
  { title: 'AnalyticsAttacks' },
);
