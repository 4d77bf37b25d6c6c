// The account-wide analytics reads, GET /analytics/{summary,domains,peak-rps,origin-bandwidth,proxy-clients,
// edge-nodes,node-country,billable,top-files,top}: over every domain of the caller (owned, or any role as a member) whose plan
// includes analytics; the others are named in `excluded_domains`, and none qualifying is a 403 naming the feature.
// Read-only keys may read. And the per-domain reads GET /domains/{domain}/analytics/{waf-logs,attacks,behaviour,
// ai-crawlers,billable}, with access and plan as in read-routes.ts. Same since/until/interval/filter parameters.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { and, desc, eq, gte, isNull, lt, or } from 'drizzle-orm';
import { attacks } from '../../db/schema.js';
import { ApiError } from '../../errors.js';
import type { GroupDimension, GroupItem, TrafficBucket } from './account-reads.js';
import {
  AccountBillableAnswer,
  AccountDomainsAnswer,
  AccountPeakAnswer,
  AccountSummaryAnswer,
  AccountTopAnswer,
  AccountTopQuery,
  AiCrawlersAnswer,
  AttacksAnswer,
  AttacksQuery,
  BehaviourAnswer,
  BehaviourQuery,
  BillableAnswer,
  EdgeNodesAnswer,
  MAX_SPARKLINE_POINTS,
  NodeCountryAnswer,
  NodeCountryQuery,
  OriginBandwidthAnswer,
  PROXY_DEFAULTS,
  ProxyClientsAnswer,
  ProxyClientsQuery,
  SPARKLINE_DEFAULT_POINTS,
  SparklineQuery,
  TopFilesAnswer,
  DEFAULT_BEHAVIOUR_VALUES,
} from './account-read-schemas.js';
import {
  domainReadRoute,
  fill,
  guarded,
  logsPage,
  RANGE_TEXT,
  rangeOf,
  readRoute,
  ruleHitOf,
  seriesOf,
  timeOf,
  totalsOf,
  window,
  type Iv,
} from './read-routes.js';
import { LimitQuery, LogsAnswer, LogsQuery, RangeQuery, SeriesQuery } from './read-schemas.js';
import {
  DEFAULT_TOP,
  INTERVALS,
  parseInterval,
  parseRange,
  type Interval,
  type RangeQuery as RangeParams,
  type ReadRange,
} from './reads.js';
import { accountDomains } from './service.js';

/** Nodes answered by the edge-nodes read at most. */
const MAX_NODES = 100;
/** Rules listed per attack. */
const ATTACK_RULES = 20;

/** The interval of a sparkline: the given one if it gives at most MAX_SPARKLINE_POINTS, else the shortest within 60. */
function sparklineInterval(range: ReadRange, interval: Interval | undefined): Iv {
  if (interval !== undefined) {
    const iv = parseInterval(range, interval);
    if (iv.points > MAX_SPARKLINE_POINTS)
      throw new ApiError(
        'CP_ERR_INVALID_INPUT',
        `interval: ${interval} over this range gives ${iv.points} points, more than ${MAX_SPARKLINE_POINTS} for a sparkline`,
      );
    return iv;
  }
  for (const name of Object.keys(INTERVALS) as Interval[]) {
    const s = spanOf(range, name);
    if (s.points <= SPARKLINE_DEFAULT_POINTS) return s;
  }
  return spanOf(range, '1d'); // beyond 60 days: a point a day (367 at most)
}
function spanOf(range: ReadRange, name: Interval): Iv {
  const intervalMs = INTERVALS[name];
  const startMs = Math.floor(range.since.getTime() / intervalMs) * intervalMs;
  return {
    interval: name,
    intervalMs,
    startMs,
    points: Math.floor((range.until.getTime() - 1 - startMs) / intervalMs) + 1,
  };
}

/** Billable totals and points of traffic buckets. */
function billable(iv: Iv, buckets: TrafficBucket[]) {
  const sum = (f: (b: TrafficBucket) => number) => buckets.reduce((a, b) => a + f(b), 0);
  const bytes = fill(iv, buckets, (b) => b.bytes);
  const billed = fill(iv, buckets, (b) => b.billableBytes);
  return {
    requests: sum((b) => b.requests),
    bytes: sum((b) => b.bytes),
    billable_requests: sum((b) => b.billableRequests),
    billable_bytes: sum((b) => b.billableBytes),
    points: bytes.map((v, i) => ({ time: timeOf(iv, i), bytes: v, billable_bytes: billed[i] })),
  };
}

/** Requests, bytes and visitors of a group of rows. */
const countsOf = (g: GroupItem) => ({ requests: g.requests, bytes: g.bytes, visitors: g.visitors });

export default async function accountReadRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const store = () => app.analytics.store;
  const timeout = () => app.config.analytics.queryTimeoutMs;

  /** The range of the request, then the caller's domains whose plan includes analytics (403 when none). */
  const scope = async (request: FastifyRequest, q: RangeParams) => {
    const range = parseRange(q);
    const { allowed, excluded } = await accountDomains(request, ['analytics_enabled']);
    const names = new Map(allowed.map((d) => [d.id, d.name]));
    return {
      range,
      ids: allowed.map((d) => d.id),
      names,
      coverage: {
        ...window(range),
        domains: allowed.map((d) => d.name),
        excluded_domains: excluded.map((d) => ({ domain: d.name, missing: d.missing })),
      },
    };
  };

  /** The scope and interval of an over-time account read, and the traffic per bucket of the caller's domains. */
  const traffic = async (request: FastifyRequest, q: RangeParams & { interval?: string }) => {
    const s = await scope(request, q);
    const iv = parseInterval(s.range, q.interval as Interval | undefined);
    const buckets = await guarded(request, () => store().traffic(s.ids, s.range, iv.startMs, iv.intervalMs, timeout()));
    return { s, iv, buckets };
  };

  /** GET /analytics/<path>. */
  const account = readRoute(app, {
    prefix: '/analytics/',
    params: undefined,
    text: `Over every domain you own or are a member of whose plan includes analytics; the others are listed in \`excluded_domains\` (403 naming the feature when none has it). ${RANGE_TEXT}`,
    errors: [400, 403, 503],
  });
  const domain = domainReadRoute(app);

  account(
    'summary',
    'Account summary',
    'Totals of the range over your domains together: requests, bytes, visitors (a client of two domains is one), served from cache, passed to the origin, errors.',
    RangeQuery,
    AccountSummaryAnswer,
    async (request) => {
      const s = await scope(request, request.query);
      const t = await guarded(request, () => store().accountSummary(s.ids, s.range, timeout()));
      const { since: _s, until: _u, ...totals } = totalsOf(s.range, t);
      return { ...s.coverage, ...totals };
    },
  );

  account(
    'domains',
    'Per-domain totals with sparkline',
    `Each domain's requests, bytes and visitors, with its requests per interval as a sparkline (\`interval\` may give at most ${MAX_SPARKLINE_POINTS} points; without it, the shortest interval giving at most ${SPARKLINE_DEFAULT_POINTS}, or a point a day beyond 60 days).`,
    SparklineQuery,
    AccountDomainsAnswer,
    async (request) => {
      const s = await scope(request, request.query);
      const iv = sparklineInterval(s.range, request.query.interval as Interval | undefined);
      const totals = await guarded(request, () =>
        store().groups(s.ids, s.range, ['domain_id'], Math.max(1, s.ids.length), timeout()),
      );
      const lines = await guarded(request, () =>
        store().seriesBy(s.ids, s.range, iv.startMs, iv.intervalMs, 'domain_id', s.ids, timeout()),
      );
      const items = s.ids.map((id) => {
        const t = totals.find((x) => x.values[0] === id);
        return {
          domain: s.names.get(id)!,
          requests: t?.requests ?? 0,
          bytes: t?.bytes ?? 0,
          visitors: t?.visitors ?? 0,
          sparkline: fill(
            iv,
            lines.filter((b) => b.value === id),
            (b) => b.requests,
          ),
        };
      });
      items.sort((a, b) => b.requests - a.requests || (a.domain < b.domain ? -1 : a.domain > b.domain ? 1 : 0));
      return { ...s.coverage, interval: iv.interval, items };
    },
  );

  account(
    'peak-rps',
    'Peak requests per second',
    'The second of the range with the most requests to all your domains together.',
    RangeQuery,
    AccountPeakAnswer,
    async (request) => {
      const s = await scope(request, request.query);
      const peak = await guarded(request, () => store().accountPeak(s.ids, s.range, timeout()));
      return { ...s.coverage, requests_per_second: peak?.requests ?? 0, time: peak?.time.toISOString() ?? null };
    },
  );

  account(
    'origin-bandwidth',
    'Origin bandwidth',
    'Requests passed to the origin (not answered from the cache or by the edge itself), the bytes sent to their clients and the body bytes received from the origin, per interval and in total, beside the bytes served from the cache.',
    SeriesQuery,
    OriginBandwidthAnswer,
    async (request) => {
      const { s, iv, buckets } = await traffic(request, request.query);
      const sum = (f: (b: TrafficBucket) => number) => buckets.reduce((a, b) => a + f(b), 0);
      const req = fill(iv, buckets, (b) => b.originRequests);
      const bytes = fill(iv, buckets, (b) => b.originBytes);
      const fetched = fill(iv, buckets, (b) => b.originFetchedBytes);
      const all = sum((b) => b.bytes);
      return {
        ...s.coverage,
        interval: iv.interval,
        requests: sum((b) => b.originRequests),
        bytes: sum((b) => b.originBytes),
        share: all === 0 ? 0 : sum((b) => b.originBytes) / all,
        cached_bytes: sum((b) => b.cachedBytes),
        fetched_bytes: sum((b) => b.originFetchedBytes),
        points: req.map((requests, i) => ({
          time: timeOf(iv, i),
          requests,
          bytes: bytes[i],
          fetched_bytes: fetched[i],
        })),
      };
    },
  );

  account(
    'proxy-clients',
    'Proxy-like clients',
    `Client addresses whose traffic looks like many clients behind one address (a proxy, NAT, VPN exit or relay): at least \`min_requests\` requests (${PROXY_DEFAULTS.minRequests} by default) with at least \`min_fingerprints\` distinct client fingerprints (${PROXY_DEFAULTS.minFingerprints} by default; fingerprints are recorded where a fingerprint rule looks). \`limit\`: 1-100, 10 by default.`,
    ProxyClientsQuery,
    ProxyClientsAnswer,
    async (request) => {
      const s = await scope(request, request.query);
      const q = request.query;
      const clients = await guarded(request, () =>
        store().proxyClients(
          s.ids,
          s.range,
          q.min_requests ?? PROXY_DEFAULTS.minRequests,
          q.min_fingerprints ?? PROXY_DEFAULTS.minFingerprints,
          q.limit ?? DEFAULT_TOP,
          timeout(),
        ),
      );
      return {
        ...s.coverage,
        clients: clients.map((c) => ({
          client_ip: c.clientIp,
          requests: c.requests,
          bytes: c.bytes,
          fingerprints: c.fingerprints,
          domains: c.domains,
          bot_classes: c.botClasses,
        })),
      };
    },
  );

  account(
    'edge-nodes',
    'Edge nodes',
    'Requests, bytes and visitors per edge node that served your domains, and each node’s share of the requests.',
    RangeQuery,
    EdgeNodesAnswer,
    async (request) => {
      const s = await scope(request, request.query);
      const nodes = await guarded(request, () => store().groups(s.ids, s.range, ['node'], MAX_NODES, timeout()));
      const t = await guarded(request, () => store().accountSummary(s.ids, s.range, timeout()));
      return {
        ...s.coverage,
        requests: t.requests,
        nodes: nodes.map((n) => ({
          node: String(n.values[0]),
          ...countsOf(n),
          share: t.requests === 0 ? 0 : n.requests / t.requests,
        })),
      };
    },
  );

  account(
    'node-country',
    'Traffic by node and country',
    "Requests, bytes and visitors per edge node and clients' country (from the client address, looked up when the log arrived). `limit`: 1-1000, 100 by default.",
    NodeCountryQuery,
    NodeCountryAnswer,
    async (request) => {
      const s = await scope(request, request.query);
      const items = await guarded(request, () =>
        store().groups(s.ids, s.range, ['node', 'country'], request.query.limit ?? 100, timeout()),
      );
      return {
        ...s.coverage,
        items: items.map((i) => ({
          node: String(i.values[0]),
          country: String(i.values[1]),
          ...countsOf(i),
        })),
      };
    },
  );

  account(
    'billable',
    'Billable traffic',
    'Bytes sent to clients per interval and in total, and the billable part: all of it except the answers the edge gave when one of its security rules refused the request (a drop, a custom, fingerprint, bot or WAF block, a rate limit, a challenge issued or failed, a throttled login) and its ACME answers. Rows from edges that did not yet say why they answered count as refused when an enforced drop, WAF, rate-limit, challenge, Under Attack Mode, fingerprint, bot or custom rule matched and the status is 400 or more.',
    SeriesQuery,
    AccountBillableAnswer,
    async (request) => {
      const { s, iv, buckets } = await traffic(request, request.query);
      return { ...s.coverage, interval: iv.interval, ...billable(iv, buckets) };
    },
  );

  account(
    'top-files',
    'Top files',
    'The files (host and path with its query string) of your domains with the most requests. `limit`: 1-100, 10 by default.',
    LimitQuery,
    TopFilesAnswer,
    async (request) => {
      const s = await scope(request, request.query);
      const items = await guarded(request, () =>
        store().groups(s.ids, s.range, ['host', 'path'], request.query.limit ?? DEFAULT_TOP, timeout()),
      );
      return {
        ...s.coverage,
        items: items.map((i) => ({
          host: String(i.values[0]),
          path: String(i.values[1]),
          ...countsOf(i),
        })),
      };
    },
  );

  account(
    'top',
    'Traffic by dimension',
    'Requests, bytes and visitors per value of `dimension` over all your domains, most requests first. `limit`: 1-100, 10 by default.',
    AccountTopQuery,
    AccountTopAnswer,
    async (request) => {
      const s = await scope(request, request.query);
      const dim = request.query.dimension as GroupDimension;
      const items = await guarded(request, () =>
        store().groups(s.ids, s.range, [dim], request.query.limit ?? DEFAULT_TOP, timeout()),
      );
      return {
        ...s.coverage,
        dimension: dim,
        items: items.map((i) => ({
          value: dim === 'domain_id' ? (s.names.get(Number(i.values[0])) ?? '') : i.values[0],
          ...countsOf(i),
        })),
      };
    },
  );

  domain(
    'billable',
    'Billable traffic',
    'Bytes sent to clients per interval and in total, and the billable part (the same rule as GET /analytics/billable).',
    SeriesQuery,
    BillableAnswer,
    async (request) => {
      const { range, iv, id } = await seriesOf(request);
      const buckets = await guarded(request, () => store().traffic([id], range, iv.startMs, iv.intervalMs, timeout()));
      return { ...window(range), interval: iv.interval, ...billable(iv, buckets) };
    },
  );

  domain(
    'waf-logs',
    'WAF logs',
    `The domain's request log rows with at least one WAF finding, newest first, each with its findings (\`waf_events\`); \`limit\` per page (1-1000, 100 by default), \`next_cursor\` continues with the same parameters. Needs analytics and logs in the plan.`,
    LogsQuery,
    LogsAnswer,
    (request) => logsPage(request, store().wafLogs.bind(store())),
  );

  domain(
    'attacks',
    'Attacks with rule hits',
    `The attacks detected on the domain that overlap the range, newest first, each with the domain's requests during it and the rules that matched them (the filters apply to those), most hits first. \`limit\`: 1-50, 10 by default.`,
    AttacksQuery,
    AttacksAnswer,
    async (request) => {
      const { range, id } = await rangeOf(request);
      const rows = await app.db
        .select()
        .from(attacks)
        .where(
          and(
            eq(attacks.domainId, id),
            lt(attacks.startedAt, range.until),
            or(isNull(attacks.endedAt), gte(attacks.endedAt, range.since)),
          ),
        )
        .orderBy(desc(attacks.startedAt), desc(attacks.id))
        .limit(request.query.limit ?? 10);
      const now = new Date();
      const out = [];
      for (const a of rows) {
        // From its first anomalous minute to the end of its last (ended_at), or now while it goes on.
        const end = a.endedAt ?? now;
        const during: ReadRange = {
          since: a.startedAt,
          until: new Date(Math.max(end.getTime(), a.startedAt.getTime() + 1)),
          filter: range.filter,
        };
        const hits = await guarded(request, () => store().ruleHits(id, during, ATTACK_RULES, timeout()));
        const total = await guarded(request, () => store().summary(id, during, timeout()));
        out.push({
          id: a.id,
          kind: a.kind,
          host: a.host,
          path: a.path,
          status: a.status,
          started_at: a.startedAt.toISOString(),
          ended_at: a.endedAt?.toISOString() ?? null,
          peak_requests_per_minute: a.peakRequestsPerMinute,
          rule_id: a.ruleId,
          requests: total.requests,
          rule_hits: hits.map(ruleHitOf),
        });
      }
      return { ...window(range), attacks: out };
    },
  );

  domain(
    'behaviour',
    'Behaviour over time',
    `Requests and bytes per interval for each of the values of \`dimension\` with the most requests (\`limit\`, 1-10, ${DEFAULT_BEHAVIOUR_VALUES} by default), and of all the other values together: status_class (2 for 2xx, …), status, cache_status, method, node or bot_class.`,
    BehaviourQuery,
    BehaviourAnswer,
    async (request) => {
      const { range, iv, id } = await seriesOf(request);
      const dim = request.query.dimension;
      const top = await guarded(request, () =>
        store().groups([id], range, [dim], request.query.limit ?? DEFAULT_BEHAVIOUR_VALUES, timeout()),
      );
      const values = top.map((t) => t.values[0]);
      const buckets = await guarded(request, () =>
        store().seriesBy([id], range, iv.startMs, iv.intervalMs, dim, values, timeout()),
      );
      const all = await guarded(request, () => store().series(id, range, iv.startMs, iv.intervalMs, timeout(), false));
      const series = values.map((value) => {
        const mine = buckets.filter((b) => b.value === value);
        return { value, requests: fill(iv, mine, (b) => b.requests), bytes: fill(iv, mine, (b) => b.bytes) };
      });
      const totalReq = fill(iv, all, (b) => b.requests);
      const totalBytes = fill(iv, all, (b) => b.bytes);
      const other = {
        requests: totalReq.map((v, i) => v - series.reduce((a, s) => a + s.requests[i], 0)),
        bytes: totalBytes.map((v, i) => v - series.reduce((a, s) => a + s.bytes[i], 0)),
      };
      return {
        ...window(range),
        interval: iv.interval,
        dimension: dim,
        times: totalReq.map((_, i) => timeOf(iv, i)),
        series,
        other,
      };
    },
  );

  domain(
    'ai-crawlers',
    'AI crawlers',
    'Requests of AI crawlers (bot_class ai_crawler, as bot_route rules class them) per interval and in total, their share of all requests, and the paths and hosts they asked for most (10 each); beside them, the requests whose user agent names an AI crawler (ua_category ai_crawler), whether a rule classed them or not.',
    SeriesQuery,
    AiCrawlersAnswer,
    async (request) => {
      const { range, iv, id } = await seriesOf(request);
      const ai: ReadRange = { ...range, filter: { ...range.filter, bot_class: 'ai_crawler' } };
      const buckets = await guarded(request, () => store().series(id, ai, iv.startMs, iv.intervalMs, timeout(), false));
      const all = await guarded(request, () => store().summary(id, range, timeout()));
      const byAgent: ReadRange = { ...range, filter: { ...range.filter, ua_category: 'ai_crawler' } };
      const agents = await guarded(request, () => store().summary(id, byAgent, timeout()));
      const paths = await guarded(request, () => store().breakdown(id, ai, 'path', DEFAULT_TOP, timeout()));
      const hosts = await guarded(request, () => store().breakdown(id, ai, 'host', DEFAULT_TOP, timeout()));
      const req = fill(iv, buckets, (b) => b.requests);
      const bytes = fill(iv, buckets, (b) => b.bytes);
      const requests = req.reduce((a, b) => a + b, 0);
      return {
        ...window(range),
        interval: iv.interval,
        requests,
        bytes: bytes.reduce((a, b) => a + b, 0),
        share: all.requests === 0 ? 0 : requests / all.requests,
        points: req.map((r, i) => ({ time: timeOf(iv, i), requests: r, bytes: bytes[i] })),
        top_paths: paths.map((p) => ({ path: String(p.value), requests: p.requests, bytes: p.bytes })),
        top_hosts: hosts.map((h) => ({ host: String(h.value), requests: h.requests, bytes: h.bytes })),
        by_user_agent: { requests: agents.requests, bytes: agents.bytes },
      };
    },
  );
}
