// The per-domain analytics reads: GET /domains/{domain}/analytics/{requests,bandwidth,visitors,summary,origin,
// peak-rps,busiest,bot-scores,compare,rules,security-actions,status-codes,cache,top-uris,top,logs}. Any role on the
// domain may read; the plan must include analytics (and logs for the raw logs). Every read takes the same since/until and filter
// parameters (reads.ts) and asks the store fixed queries (duckdb-reads.ts).
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Static, TSchema } from '@sinclair/typebox';
import { loadDomain } from '../../auth/domain-access.js';
import { ApiError } from '../../errors.js';
import { errorResponses } from '../../openapi/schemas.js';
import { effectiveFeatures, requireFeature } from '../../plans/entitlements.js';
import { DomainParams } from '../domains/schemas.js';
import {
  BandwidthAnswer,
  BotScoresAnswer,
  BusiestAnswer,
  CompareAnswer,
  CacheAnswer,
  CountriesAnswer,
  EgressAnswer,
  LimitQuery,
  LogsAnswer,
  MarkdownAnswer,
  NetworksAnswer,
  ProtocolsAnswer,
  RateLimitKeysAnswer,
  TlsAnswer,
  UnderAttackAnswer,
  UnservedAnswer,
  UserAgentsAnswer,
  LogsQuery,
  OriginAnswer,
  PeakAnswer,
  RangeQuery,
  RequestsAnswer,
  RulesAnswer,
  SecurityActionsAnswer,
  SeriesQuery,
  StatusCodesAnswer,
  SummaryAnswer,
  TopAnswer,
  TopQuery,
  TopUrisAnswer,
  TopUrisQuery,
  VisitorsAnswer,
} from './read-schemas.js';
import {
  DEFAULT_LOGS_PAGE,
  DEFAULT_TOP,
  DIMENSIONS,
  decodeCursor,
  encodeCursor,
  INTERVALS,
  parseInterval,
  parseRange,
  type BreakdownItem,
  type Dimension,
  type Interval,
  type RangeQuery as RangeParams,
  type RangeSummary,
  type ReadRange,
  type RuleHits,
  type SeriesBucket,
} from './reads.js';
import { QueryFailed, StoreUnavailable, type AnalyticsStore } from './store.js';

const tags = ['analytics'];
/** Status codes are 100-599: every one fits in a status-codes answer. */
const MAX_STATUSES = 500;
/** Distinct cache outcomes answered at most. */
const MAX_CACHE_STATUSES = 50;
/** Distinct unserved reasons, serving paths, categories, protocols answered at most (each a short fixed list). */
const MAX_REASONS = 50;
/** Countries answered at most (ISO 3166 has 249 codes, and '' unknown). */
const MAX_COUNTRIES = 300;

export const RANGE_TEXT =
  'Range: `since` (inclusive) and `until` (exclusive), ISO 8601 date-times with a zone; `until` defaults to now and `since` to a day before it; 400 when `since` is not before `until` or the range is longer than 366 days. Filters (exact match, all optional): `host`, `path`, `method`, `status`, `cache_status`, `node`, `bot_class`, `country`, `asn`, `http_protocol`, `tls_version`, `ua_category`, `serving_path`, `unserved_reason`, `markdown`; any other parameter is a 400.';

/** The domain, its caller's access and its plan's features; 404 invisible, 403 naming the missing feature. */
export async function readDomain(request: FastifyRequest, name: string, logs = false): Promise<number> {
  const { domain } = await loadDomain(request, name, 'domain.view');
  const features = await effectiveFeatures(request.server.db, domain.id);
  requireFeature(features, 'analytics_enabled');
  if (logs) requireFeature(features, 'logs_enabled');
  return domain.id;
}

/** A store failure as the API answers it: the time limit is a 400 naming itself; an unopenable store 503. */
export async function guarded<T>(request: FastifyRequest, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    if (err instanceof QueryFailed) throw new ApiError('CP_ERR_INVALID_INPUT', err.message);
    if (err instanceof StoreUnavailable) {
      request.log.error({ err }, 'analytics store unavailable');
      throw new ApiError('CP_ERR_UNAVAILABLE', 'analytics store unavailable');
    }
    throw err;
  }
}

/** The range and filters of the request, then its domain (access and plan as readDomain). */
export async function rangeOf(
  request: FastifyRequest<{ Params: { domain: string }; Querystring: RangeParams }>,
  logs = false,
): Promise<{ range: ReadRange; id: number }> {
  const range = parseRange(request.query);
  return { range, id: await readDomain(request, request.params.domain, logs) };
}

/** The totals of the summary and comparison reads. */
const TOTALS = [
  'requests',
  'bytes',
  'visitors',
  'cached_requests',
  'cached_bytes',
  'origin_requests',
  'origin_bytes',
  'errors_4xx',
  'errors_5xx',
] as const;
export const totalsOf = (range: ReadRange, t: RangeSummary) => ({
  ...window(range),
  requests: t.requests,
  bytes: t.bytes,
  visitors: t.visitors,
  cached_requests: t.cachedRequests,
  cached_bytes: t.cachedBytes,
  origin_requests: t.originRequests,
  origin_bytes: t.originBytes,
  errors_4xx: t.status4xx,
  errors_5xx: t.status5xx,
});

export const window = (range: ReadRange) => ({ since: range.since.toISOString(), until: range.until.toISOString() });

/** The points of an over-time read (parseInterval). */
export type Iv = ReturnType<typeof parseInterval>;

/** Per point of `iv`, the value of each bucket (0 where none). */
export function fill<B extends { bucket: number }>(iv: Iv, buckets: B[], get: (b: B) => number): number[] {
  const out = new Array<number>(iv.points).fill(0);
  for (const b of buckets) if (b.bucket >= 0 && b.bucket < iv.points) out[b.bucket] += get(b);
  return out;
}
export const timeOf = (iv: Iv, i: number) => new Date(iv.startMs + i * iv.intervalMs).toISOString();

/** The range and interval of an over-time read, then its domain (access and plan as readDomain). */
export async function seriesOf(
  request: FastifyRequest<{ Params: { domain: string }; Querystring: RangeParams & { interval?: string } }>,
): Promise<{ range: ReadRange; iv: Iv; id: number }> {
  const range = parseRange(request.query);
  // The schema allows only the names of INTERVALS.
  const iv = parseInterval(range, request.query.interval as Interval | undefined);
  return { range, iv, id: await readDomain(request, request.params.domain) };
}

/**
 * Requests, bytes and visitors per point over the range, every point present (0 where no request); the visitors only
 * when asked (`visitors`: counting them is most of the read's cost under a filter), else 0.
 */
async function series(
  request: FastifyRequest<{ Params: { domain: string }; Querystring: RangeParams & { interval?: string } }>,
  visitors: boolean,
) {
  const { range, iv, id } = await seriesOf(request);
  const cfg = request.server.config.analytics;
  const buckets = await guarded(request, () =>
    request.server.analytics.store.series(id, range, iv.startMs, iv.intervalMs, cfg.queryTimeoutMs, visitors),
  );
  return {
    id,
    range,
    interval: iv.interval,
    requests: fill(iv, buckets, (b) => b.requests),
    bytes: fill(iv, buckets, (b) => b.bytes),
    visitors: fill(iv, buckets, (b) => b.visitors),
    time: (i: number) => timeOf(iv, i),
  };
}

/** A page of log rows (the logs and WAF-logs reads): newest first, `limit` of them, after the given cursor. */
export async function logsPage(
  request: FastifyRequest<{ Params: { domain: string }; Querystring: Static<typeof LogsQuery> }>,
  read: AnalyticsStore['logs'],
) {
  const cursor = request.query.cursor !== undefined ? decodeCursor(request.query.cursor) : null;
  const { range, id } = await rangeOf(request, true);
  const limit = request.query.limit ?? DEFAULT_LOGS_PAGE;
  const timeout = request.server.config.analytics.queryTimeoutMs;
  const page = await guarded(request, () => read(id, range, limit, cursor, timeout));
  return { ...window(range), logs: page.logs, next_cursor: page.next ? encodeCursor(page.next) : null };
}

/** The requests of rows summed. */
const requestsOf = (rows: { requests: number }[]) => rows.reduce((a, b) => a + b.requests, 0);

/** A rule's hits as the rules and attacks reads answer them. */
export const ruleHitOf = (h: RuleHits) => ({
  rule_id: h.ruleId,
  rule_type: h.ruleType,
  hits: h.hits,
  dry_run: h.dryRun,
});

/** How a family of reads is routed: under what path, with what parameters, description text and errors. */
interface ReadFamily<P extends TSchema | undefined> {
  prefix: string;
  params: P;
  text: string;
  errors: number[];
}
type ReadRequest<P extends TSchema | undefined, Q extends TSchema> = FastifyRequest<{
  Params: P extends TSchema ? Static<P> : unknown;
  Querystring: Static<Q>;
}>;

/** GET <prefix><path>: its schema, with the family's text appended to the description. */
export const readRoute =
  <P extends TSchema | undefined>(app: FastifyInstance, family: ReadFamily<P>) =>
  <Q extends TSchema, A extends TSchema>(
    path: string,
    summary: string,
    description: string,
    querystring: Q,
    answer: A,
    handler: (request: ReadRequest<P, Q>) => Promise<Static<A>>,
  ) =>
    app.get(
      `${family.prefix}${path}`,
      {
        schema: {
          summary,
          description: `${description} ${family.text}`,
          tags,
          ...(family.params && { params: family.params }),
          querystring,
          response: { 200: answer, ...errorResponses(...family.errors) },
        },
      },
      (request) =>
        // the provider cannot resolve a generic schema's types; the caller's Q and A are concrete
        handler(request as unknown as ReadRequest<P, Q>) as never,
    );

/** GET /domains/{domain}/analytics/<path>. */
export const domainReadRoute = (app: FastifyInstance) =>
  readRoute(app, {
    prefix: '/domains/:domain/analytics/',
    params: DomainParams,
    text: RANGE_TEXT,
    errors: [400, 403, 404, 503],
  });

export default async function analyticsReadRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const store = () => app.analytics.store;
  const timeout = () => app.config.analytics.queryTimeoutMs;
  const route = domainReadRoute(app);

  route(
    'requests',
    'Requests over time',
    'Requests to the domain per interval.',
    SeriesQuery,
    RequestsAnswer,
    async (request) => {
      const s = await series(request, false);
      return {
        ...window(s.range),
        interval: s.interval,
        requests: s.requests.reduce((a, b) => a + b, 0),
        points: s.requests.map((requests, i) => ({ time: s.time(i), requests })),
      };
    },
  );

  route(
    'bandwidth',
    'Bandwidth over time',
    'Bytes sent to clients per interval.',
    SeriesQuery,
    BandwidthAnswer,
    async (request) => {
      const s = await series(request, false);
      return {
        ...window(s.range),
        interval: s.interval,
        bytes: s.bytes.reduce((a, b) => a + b, 0),
        points: s.bytes.map((bytes, i) => ({ time: s.time(i), bytes })),
      };
    },
  );

  route(
    'visitors',
    'Visitors over time',
    'Distinct client addresses per interval and over the whole range.',
    SeriesQuery,
    VisitorsAnswer,
    async (request) => {
      const s = await series(request, true);
      const total = await guarded(request, () => store().summary(s.id, s.range, timeout()));
      return {
        ...window(s.range),
        interval: s.interval,
        visitors: total.visitors,
        points: s.visitors.map((visitors, i) => ({ time: s.time(i), visitors })),
      };
    },
  );

  route(
    'summary',
    'Domain summary',
    'Totals of the range: requests, bytes, visitors, served from cache, passed to the origin, errors.',
    RangeQuery,
    SummaryAnswer,
    async (request) => {
      const { range, id } = await rangeOf(request);
      return totalsOf(range, await guarded(request, () => store().summary(id, range, timeout())));
    },
  );

  route(
    'origin',
    'Edge-to-origin statistics',
    'Requests passed to the origin, their bytes and share, the time waiting for the origin (mean, p50, p95, p99), the bytes received from it, and the requests it failed by how.',
    RangeQuery,
    OriginAnswer,
    async (request) => {
      const { range, id } = await rangeOf(request);
      const t = await guarded(request, () => store().summary(id, range, timeout()));
      const reasons = await guarded(request, () =>
        store().breakdown(id, range, 'unserved_reason', MAX_REASONS, timeout()),
      );
      const of = (reason: string) => reasons.find((it) => it.value === reason)?.requests ?? 0;
      return {
        ...window(range),
        requests: t.originRequests,
        bytes: t.originBytes,
        share: t.requests === 0 ? 0 : t.originRequests / t.requests,
        upstream_ms: t.upstreamMs,
        bytes_from_origin: t.originFetchedBytes,
        failures: {
          unreachable: of('origin_unreachable'),
          timeout: of('origin_timeout'),
          refused: of('origin_refused'),
          certificate: of('origin_certificate'),
          stale_served: of('stale_on_origin_error'),
        },
      };
    },
  );

  route(
    'peak-rps',
    'Peak requests per second',
    'The busiest second of the range and its requests.',
    RangeQuery,
    PeakAnswer,
    async (request) => {
      const { range, id } = await rangeOf(request);
      const peak = await guarded(request, () => store().peak(id, range, timeout()));
      return { ...window(range), requests_per_second: peak?.requests ?? 0, time: peak?.time.toISOString() ?? null };
    },
  );

  route(
    'busiest',
    'Busiest day and hour',
    'The UTC day and the UTC hour of the range with the most requests.',
    RangeQuery,
    BusiestAnswer,
    async (request) => {
      const { range, id } = await rangeOf(request);
      const busiest = async (ms: number) => {
        const startMs = Math.floor(range.since.getTime() / ms) * ms;
        const buckets = await guarded(request, () => store().series(id, range, startMs, ms, timeout(), false));
        let best: SeriesBucket | null = null;
        for (const b of buckets) if (!best || b.requests > best.requests) best = b;
        return best && { time: new Date(startMs + best.bucket * ms).toISOString(), requests: best.requests };
      };
      return { ...window(range), day: await busiest(INTERVALS['1d']), hour: await busiest(INTERVALS['1h']) };
    },
  );

  route(
    'bot-scores',
    'Bot scores',
    'Requests per bot score band, per score and per bot class (scores and classes of bot_route rules).',
    RangeQuery,
    BotScoresAnswer,
    async (request) => {
      const { range, id } = await rangeOf(request);
      const scores = await guarded(request, () => store().breakdown(id, range, 'bot_score', 100, timeout()));
      const classes = await guarded(request, () => store().breakdown(id, range, 'bot_class', 20, timeout()));
      const bands = { not_scored: 0, automated: 0, likely_automated: 0, likely_human: 0 };
      for (const { value, requests } of scores) {
        const n = Number(value);
        const band = n <= 0 ? 'not_scored' : n === 1 ? 'automated' : n < 30 ? 'likely_automated' : 'likely_human';
        bands[band] += requests;
      }
      return {
        ...window(range),
        requests: requestsOf(scores),
        bands,
        scores: scores
          .filter((s) => Number(s.value) > 0)
          .map((s) => ({ score: Number(s.value), requests: s.requests }))
          .sort((a, b) => a.score - b.score),
        bot_classes: classes.map((c) => ({ bot_class: String(c.value), requests: c.requests })),
      };
    },
  );

  route(
    'compare',
    'Period comparison',
    'Totals of the range beside those of the period of the same length just before it, and the change of each.',
    RangeQuery,
    CompareAnswer,
    async (request) => {
      const { range, id } = await rangeOf(request);
      const span = range.until.getTime() - range.since.getTime();
      const before: ReadRange = { ...range, since: new Date(range.since.getTime() - span), until: range.since };
      const totals = async (r: ReadRange) =>
        totalsOf(r, await guarded(request, () => store().summary(id, r, timeout())));
      const current = await totals(range);
      const previous = await totals(before);
      const change = Object.fromEntries(
        TOTALS.map((k) => [k, previous[k] === 0 ? null : (current[k] - previous[k]) / previous[k]]),
      ) as Record<(typeof TOTALS)[number], number | null>;
      return { current, previous, change };
    },
  );

  route(
    'rules',
    'Busiest rules',
    'The edge rules that matched most requests, with how many in dry run. `limit`: 1-100, 10 by default.',
    TopUrisQuery,
    RulesAnswer,
    async (request) => {
      const { range, id } = await rangeOf(request);
      const limit = request.query.limit ?? DEFAULT_TOP;
      const rules = await guarded(request, () => store().ruleHits(id, range, limit, timeout()));
      return {
        ...window(range),
        rules: rules.map(ruleHitOf),
      };
    },
  );

  route(
    'security-actions',
    'Security actions',
    'WAF findings per action: how many findings and how many requests had one.',
    RangeQuery,
    SecurityActionsAnswer,
    async (request) => {
      const { range, id } = await rangeOf(request);
      return { ...window(range), actions: await guarded(request, () => store().wafActions(id, range, timeout())) };
    },
  );

  route(
    'status-codes',
    'Status codes',
    'Requests and bytes per status code answered, and per class.',
    RangeQuery,
    StatusCodesAnswer,
    async (request) => {
      const { range, id } = await rangeOf(request);
      const items = await guarded(request, () => store().breakdown(id, range, 'status', MAX_STATUSES, timeout()));
      const classes = { '1xx': 0, '2xx': 0, '3xx': 0, '4xx': 0, '5xx': 0 };
      for (const it of items) {
        const k = `${Math.floor(Number(it.value) / 100)}xx`;
        if (k in classes) classes[k as keyof typeof classes] += it.requests;
      }
      return {
        ...window(range),
        requests: requestsOf(items),
        classes,
        status_codes: items.map((it) => ({ status: Number(it.value), requests: it.requests, bytes: it.bytes })),
      };
    },
  );

  route(
    'cache',
    'Cache counts',
    "Requests and bytes per cache outcome (HIT, MISS, STALE, EXPIRED, BYPASS, DYNAMIC; '' when no cache rule applied), and the hit ratio.",
    RangeQuery,
    CacheAnswer,
    async (request) => {
      const { range, id } = await rangeOf(request);
      return cacheCounts(request, id, range);
    },
  );
  /** Requests per cache outcome and the hit ratio (the cache and search-crawler cache reads). */
  const cacheCounts = async (request: FastifyRequest, id: number, range: ReadRange) => {
    const items = await guarded(request, () =>
      store().breakdown(id, range, 'cache_status', MAX_CACHE_STATUSES, timeout()),
    );
    const of = (s: string) => items.find((it) => it.value === s)?.requests ?? 0;
    const served = of('HIT') + of('STALE');
    const looked = served + of('MISS') + of('EXPIRED');
    return {
      ...window(range),
      requests: requestsOf(items),
      hit_ratio: looked === 0 ? 0 : served / looked,
      cache_statuses: items.map((it) => ({ cache_status: String(it.value), requests: it.requests, bytes: it.bytes })),
    };
  };

  route(
    'crawler-cache',
    'Search-crawler cache counters',
    "The cache outcomes of search engines' and other self-declared crawlers' requests (user-agent category `crawler`; AI crawlers are `ua_category=ai_crawler` of the cache read): requests and bytes per cache outcome, and their hit ratio.",
    RangeQuery,
    CacheAnswer,
    async (request) => {
      const { range, id } = await rangeOf(request);
      return cacheCounts(request, id, { ...range, filter: { ...range.filter, ua_category: 'crawler' } });
    },
  );

  /** Requests and bytes per value of a dimension, named `field` in the answer. */
  const perValue = async <F extends string>(
    request: FastifyRequest,
    id: number,
    range: ReadRange,
    dimension: Dimension,
    limit: number,
    field: F,
  ) => {
    const items = await guarded(request, () => store().breakdown(id, range, dimension, limit, timeout()));
    return items.map(
      (it) =>
        ({ [field]: it.value, requests: it.requests, bytes: it.bytes }) as Record<F, string> & {
          requests: number;
          bytes: number;
        },
    );
  };
  const total = async (request: FastifyRequest, id: number, range: ReadRange) =>
    (await guarded(request, () => store().summary(id, range, timeout()))).requests;

  /** A read of the requests and bytes per value of `dimension` (named `field` in `answer`), and their sum. */
  const perValueRead = (
    path: string,
    summary: string,
    description: string,
    answer: TSchema,
    dimension: Dimension,
    field: string,
    limit = MAX_REASONS,
  ) =>
    route(path, summary, description, RangeQuery, answer, async (request) => {
      const { range, id } = await rangeOf(request);
      const items = await perValue(request, id, range, dimension, limit, field);
      // items carry `field` as `answer` names it
      return { ...window(range), requests: requestsOf(items), items } as never;
    });

  perValueRead(
    'countries',
    'Traffic by country',
    "Requests and bytes per country of the client address (looked up when the logs arrive, from an offline database; '' unknown), most requests first.",
    CountriesAnswer,
    'country',
    'country',
    MAX_COUNTRIES,
  );

  route(
    'networks',
    'Traffic by network',
    'Requests and bytes per autonomous system of the client address, with its organisation (0 unknown), most requests first. `limit`: 1-100, 10 by default.',
    LimitQuery,
    NetworksAnswer,
    async (request) => {
      const { range, id } = await rangeOf(request);
      const limit = request.query.limit ?? DEFAULT_TOP;
      const items = await guarded(request, () => store().breakdown(id, range, 'asn', limit, timeout()));
      return {
        ...window(range),
        requests: await total(request, id, range),
        items: items.map((it) => ({
          asn: Number(it.value),
          organisation: it.label ?? '',
          requests: it.requests,
          bytes: it.bytes,
        })),
      };
    },
  );

  perValueRead(
    'protocols',
    'HTTP versions',
    "Requests and bytes per HTTP version of the client's request.",
    ProtocolsAnswer,
    'http_protocol',
    'http_protocol',
  );
  perValueRead(
    'tls',
    'TLS versions',
    'Requests and bytes per TLS of the client connection.',
    TlsAnswer,
    'tls_version',
    'tls_version',
  );
  perValueRead(
    'user-agents',
    'User-agent categories',
    'Requests and bytes per user-agent category (what the User-Agent header says of the client).',
    UserAgentsAnswer,
    'ua_category',
    'category',
  );

  route(
    'unserved',
    'Unserved-request reasons',
    'The requests the origin did not answer, per reason: refused by a rule (WAF, rate limit, custom, fingerprint or bot rule, drop), challenged, answered by the edge (redirect, sign-in, ACME), the origin failing, the client leaving.',
    RangeQuery,
    UnservedAnswer,
    async (request) => {
      const { range, id } = await rangeOf(request);
      const items = await guarded(request, () =>
        store().breakdown(id, range, 'unserved_reason', MAX_REASONS, timeout()),
      );
      const reasons = items
        .filter((it) => it.value !== '')
        .map((it) => ({ reason: String(it.value), requests: it.requests, bytes: it.bytes }));
      return {
        ...window(range),
        requests: requestsOf(items),
        unserved: requestsOf(reasons),
        reasons,
      };
    },
  );

  route(
    'egress',
    'Egress by cache status and serving path',
    'Bytes sent to clients (and received from the origin) per cache outcome and per serving path (cache, origin, edge).',
    RangeQuery,
    EgressAnswer,
    async (request) => {
      const { range, id } = await rangeOf(request);
      const by = async (dimension: Dimension) =>
        guarded(request, () => store().breakdown(id, range, dimension, MAX_CACHE_STATUSES, timeout()));
      const caches = await by('cache_status');
      const paths = await by('serving_path');
      const row = (it: BreakdownItem) => ({
        requests: it.requests,
        bytes: it.bytes,
        bytes_from_origin: it.originBytes,
      });
      return {
        ...window(range),
        bytes: caches.reduce((a, b) => a + b.bytes, 0),
        bytes_from_origin: caches.reduce((a, b) => a + b.originBytes, 0),
        cache_statuses: caches.map((it) => ({ cache_status: String(it.value), ...row(it) })),
        serving_paths: paths.map((it) => ({ serving_path: String(it.value), ...row(it) })),
      };
    },
  );

  route(
    'under-attack',
    'Under Attack Mode results',
    'Challenges issued, passed and failed (the challenge page of Under Attack Mode, captcha rules and record flags, and rate limits that challenge), and how many of the pages Under Attack Mode itself asked for.',
    RangeQuery,
    UnderAttackAnswer,
    async (request) => {
      const { range, id } = await rangeOf(request);
      const items = await guarded(request, () =>
        store().breakdown(id, range, 'unserved_reason', MAX_REASONS, timeout()),
      );
      const of = (reason: string) => items.find((it) => it.value === reason)?.requests ?? 0;
      const issued = of('challenge_issued');
      const passed = of('challenge_passed');
      const pages: ReadRange = { ...range, filter: { ...range.filter, unserved_reason: 'challenge_issued' } };
      const askers = await guarded(request, () => store().ruleHits(id, pages, 100, timeout()));
      return {
        ...window(range),
        issued,
        passed,
        failed: of('challenge_failed'),
        solve_rate: issued === 0 ? 0 : passed / issued,
        under_attack_issued: askers.find((h) => h.ruleId === 0 && h.ruleType === 'under_attack')?.hits ?? 0,
      };
    },
  );

  route(
    'rate-limit-keys',
    'Tripped rate-limit keys',
    'The keys (client address, path, header value, as the rule counts) and rules of enforced rate_limit rules that refused or challenged requests. `limit`: 1-100, 10 by default.',
    LimitQuery,
    RateLimitKeysAnswer,
    async (request) => {
      const { range, id } = await rangeOf(request);
      const limit = request.query.limit ?? DEFAULT_TOP;
      // One more than asked: the '' group (requests no limit tripped) is left out. Rules are read before keys: a
      // batch ingested between the two reads then only adds keys, never counts refusals whose keys are missing.
      const rules = await guarded(request, () => store().breakdown(id, range, 'rate_limit_rule', limit + 1, timeout()));
      const keys = await guarded(request, () => store().breakdown(id, range, 'rate_limit_key', limit + 1, timeout()));
      const tripped = rules.filter((it) => Number(it.value) !== 0);
      return {
        ...window(range),
        requests: requestsOf(tripped),
        keys: keys
          .filter((it) => it.value !== '')
          .slice(0, limit)
          .map((it) => ({ key: String(it.value), requests: it.requests, bytes: it.bytes })),
        rules: tripped
          .slice(0, limit)
          .map((it) => ({ rule_id: Number(it.value), requests: it.requests, bytes: it.bytes })),
      };
    },
  );

  route(
    'markdown',
    'Markdown-for-Agents preview',
    "What Markdown for agents (an optimize rule's markdown_for_agents) does for the domain: the requests answered with Markdown, their bytes and the HTML bytes the origin sent for them, the share of AI crawlers' requests that got Markdown, which user-agent categories asked, and the paths answered most. `limit` (paths): 1-100, 10 by default.",
    LimitQuery,
    MarkdownAnswer,
    async (request) => {
      const { range, id } = await rangeOf(request);
      const limit = request.query.limit ?? DEFAULT_TOP;
      const md: ReadRange = { ...range, filter: { ...range.filter, markdown: true } };
      const agents = await guarded(request, () => store().breakdown(id, md, 'ua_category', MAX_REASONS, timeout()));
      const paths = await guarded(request, () => store().breakdown(id, md, 'path', limit, timeout()));
      const ai: ReadRange = { ...range, filter: { ...range.filter, ua_category: 'ai_crawler' } };
      const aiAll = await total(request, id, ai);
      const aiMd = await total(request, id, { ...ai, filter: { ...ai.filter, markdown: true } });
      return {
        ...window(range),
        requests: requestsOf(agents),
        bytes: agents.reduce((a, b) => a + b.bytes, 0),
        bytes_from_origin: agents.reduce((a, b) => a + b.originBytes, 0),
        share_of_ai_crawlers: aiAll === 0 ? 0 : aiMd / aiAll,
        user_agents: agents.map((it) => ({ category: String(it.value), requests: it.requests, bytes: it.bytes })),
        paths: paths.map((it) => ({ path: String(it.value), requests: it.requests, bytes: it.bytes })),
      };
    },
  );

  route(
    'top-uris',
    'Top URIs',
    `The paths (with query string) with the most requests, and their bytes. \`limit\`: 1-100, 10 by default.`,
    TopUrisQuery,
    TopUrisAnswer,
    async (request) => {
      const { range, id } = await rangeOf(request);
      const limit = request.query.limit ?? DEFAULT_TOP;
      const items = await guarded(request, () => store().breakdown(id, range, 'path', limit, timeout()));
      return {
        ...window(range),
        items: items.map((it) => ({ path: String(it.value), requests: it.requests, bytes: it.bytes })),
      };
    },
  );

  route(
    'top',
    'Top-N breakdown by a dimension',
    `Requests and bytes per value of \`dimension\` (${DIMENSIONS.join(', ')}), most requests first. \`limit\`: 1-100, 10 by default.`,
    TopQuery,
    TopAnswer,
    async (request) => {
      const { range, id } = await rangeOf(request);
      const { dimension } = request.query;
      const limit = request.query.limit ?? DEFAULT_TOP;
      const items = await guarded(request, () => store().breakdown(id, range, dimension, limit, timeout()));
      return { ...window(range), dimension, items };
    },
  );

  route(
    'logs',
    'Raw request logs',
    `The domain's request log rows, newest first, \`limit\` per page (1-1000, 100 by default); \`next_cursor\` continues with the same parameters. Needs analytics and logs in the plan.`,
    LogsQuery,
    LogsAnswer,
    (request) => logsPage(request, store().logs.bind(store())),
  );
}
