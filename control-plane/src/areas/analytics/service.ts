// Analytics: the store on the app (opened at first use), retention per plan and its sweep, the domains a caller's
// query reads, and the query itself with its limits.
import fp from 'fastify-plugin';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { and, eq, inArray, or, sql } from 'drizzle-orm';
import { domainMembers, domains, plans, subscriptions } from '../../db/schema.js';
import { ApiError } from '../../errors.js';
import {
  featuresOf,
  LIVE_STATUSES,
  requireFeature,
  type BooleanField,
  type EffectiveFeatures,
} from '../../plans/entitlements.js';
import { openClickHouseStore } from './clickhouse-store.js';
import { openDuckDbStore } from './duckdb-store.js';
import { HostDomainCache } from './ingest.js';
import { QueryRefused, boundQueryText } from './sandbox.js';
import { pruneTrafficHours, rollUpTraffic } from './usage.js';
import {
  QueryFailed,
  StoreUnavailable,
  type AnalyticsStore,
  type QueryColumn,
  type QueryDomain,
  type QueryResult,
} from './store.js';

declare module 'fastify' {
  interface FastifyInstance {
    analytics: { store: AnalyticsStore; hosts: HostDomainCache };
  }
}

/**
 * Days a domain's request logs are kept, by plan (the spec's plan fields name no retention; docs/decisions.md).
 * A plan not listed keeps the free plan's.
 */
export const LOG_RETENTION_DAYS: Readonly<Record<string, number>> = Object.freeze({
  free: 3,
  pro: 30,
  business: 90,
  enterprise: 365,
});
export const retentionDays = (planSlug: string | null): number =>
  LOG_RETENTION_DAYS[planSlug ?? 'free'] ?? LOG_RETENTION_DAYS.free;

/** Removes the rows of deleted domains and, per domain, the rows older than its plan keeps; returns the counts. */
export async function sweepAnalytics(
  app: FastifyInstance,
  now = new Date(),
): Promise<{ droppedDomains: number; deletedRows: number }> {
  const store = app.analytics.store;
  const ids = await store.domainIds();
  let droppedDomains = 0;
  let deletedRows = 0;
  for (let i = 0; i < ids.length; i += 1000) {
    const chunk = ids.slice(i, i + 1000);
    const rows = await app.db
      .select({ id: domains.id, slug: plans.slug })
      .from(domains)
      .leftJoin(
        subscriptions,
        and(eq(subscriptions.domainId, domains.id), inArray(subscriptions.status, LIVE_STATUSES)),
      )
      .leftJoin(plans, eq(plans.id, subscriptions.planId))
      .where(inArray(domains.id, chunk));
    const slugOf = new Map(rows.map((r) => [r.id, r.slug]));
    for (const id of chunk) {
      if (!slugOf.has(id)) {
        await store.deleteDomain(id);
        droppedDomains++;
        continue;
      }
      const keepMs = retentionDays(slugOf.get(id) ?? null) * 86_400_000;
      const cutoff = new Date(now.getTime() - keepMs);
      // Their billable bytes first (the quota window outlives a short retention); rows not summed are not deleted.
      try {
        await rollUpTraffic(app, id, cutoff);
      } catch (err) {
        app.log.warn({ err, domainId: id }, 'analytics retention: traffic not summed; rows kept until the next sweep');
        continue;
      }
      deletedRows += await store.deleteBefore(id, cutoff);
    }
  }
  await pruneTrafficHours(app, now);
  return { droppedDomains, deletedRows };
}

/** Drops a deleted domain's rows (and forgets its hosts); called once the domain's delete has committed. */
export async function deleteDomainLogs(app: FastifyInstance, domainId: number): Promise<void> {
  app.analytics.hosts.forget(domainId);
  await app.analytics.store.deleteDomain(domainId);
}

/** The store on the app, closed with it, and the retention sweep on a timer. */
export const analyticsPlugin = fp(
  async (app: FastifyInstance) => {
    const cfg = app.config.analytics;
    const store =
      cfg.backend === 'clickhouse'
        ? openClickHouseStore({ url: cfg.clickhouseUrl, database: cfg.clickhouseDatabase })
        : openDuckDbStore({ dir: app.config.dataDir, memoryLimitMb: cfg.memoryLimitMb, threads: cfg.threads });
    app.decorate('analytics', { store, hosts: new HostDomainCache(app.db) });
    let sweeping = false;
    const timer = setInterval(() => {
      if (sweeping) return;
      sweeping = true;
      sweepAnalytics(app)
        .catch((err: unknown) => app.log.warn({ err }, 'analytics retention sweep failed'))
        .finally(() => (sweeping = false));
    }, cfg.sweepMs);
    timer.unref();
    app.addHook('onClose', async () => {
      clearInterval(timer);
      await store.close();
    });
  },
  { name: 'analytics' },
);

/** A domain of the caller an account read leaves out, and the first plan feature it lacks. */
export interface ExcludedDomain extends QueryDomain {
  missing: BooleanField;
}

/**
 * The caller's domains (owned, or any role as a member) whose live plan includes every feature of `required`, and
 * those left out with the first feature they lack. 403 naming that feature when none qualifies; with no domain at
 * all, the free plan decides.
 */
export async function accountDomains(
  request: FastifyRequest,
  required: BooleanField[],
): Promise<{ allowed: QueryDomain[]; excluded: ExcludedDomain[] }> {
  return accountDomainsOf(request.server, request.principal.userId, required);
}

/** accountDomains of a user (a saved query's alert, evaluated outside any request). */
export async function accountDomainsOf(
  app: FastifyInstance,
  userId: number,
  required: BooleanField[],
): Promise<{ allowed: QueryDomain[]; excluded: ExcludedDomain[] }> {
  const db = app.db;
  const rows = await db
    .select({
      id: domains.id,
      name: domains.name,
      slug: plans.slug,
      features: plans.features,
      overrides: subscriptions.overrides,
    })
    .from(domains)
    .leftJoin(subscriptions, and(eq(subscriptions.domainId, domains.id), inArray(subscriptions.status, LIVE_STATUSES)))
    .leftJoin(plans, eq(plans.id, subscriptions.planId))
    .where(
      or(
        eq(domains.ownerId, userId),
        sql`EXISTS (SELECT 1 FROM ${domainMembers} m WHERE m.domain_id = ${domains.id} AND m.user_id = ${userId})`,
      ),
    )
    .orderBy(domains.id);
  let free: EffectiveFeatures | undefined;
  let refused: EffectiveFeatures | undefined;
  const allowed: QueryDomain[] = [];
  const excluded: ExcludedDomain[] = [];
  const seen = new Set<number>();
  for (const r of rows) {
    if (seen.has(r.id)) continue;
    seen.add(r.id);
    const features =
      r.slug !== null
        ? await featuresOf(db, { slug: r.slug, features: r.features ?? {}, overrides: r.overrides ?? {} })
        : (free ??= await featuresOf(db, null));
    const missing = required.find((f) => !features[f]);
    if (missing === undefined) allowed.push({ id: r.id, name: r.name });
    else {
      excluded.push({ id: r.id, name: r.name, missing });
      refused ??= features;
    }
  }
  if (allowed.length === 0) {
    // No domain (the free plan decides) or none whose plan has them all: 403 naming what the first one lacks.
    const features = refused ?? free ?? (await featuresOf(db, null));
    for (const f of required) requireFeature(features, f);
  }
  return { allowed, excluded };
}

/**
 * The domains whose rows the caller's query reads: every domain they own or are a member of whose plan includes
 * analytics_enabled and logs_enabled (the query reads raw request rows). 403 naming the missing feature when none
 * does; with no domain at all, the free plan decides.
 */
export async function queryDomains(request: FastifyRequest): Promise<QueryDomain[]> {
  return queryDomainsOf(request.server, request.principal.userId);
}

/** queryDomains of a user. */
export async function queryDomainsOf(app: FastifyInstance, userId: number): Promise<QueryDomain[]> {
  return (await accountDomainsOf(app, userId, ['analytics_enabled', 'logs_enabled'])).allowed;
}

let running = 0;

/** POST /analytics/query: bounds, plan, concurrency, then the store's sandboxed run; refusals are 400. */
export async function runQuery(request: FastifyRequest, query: string): Promise<QueryResult> {
  return runQueryAs(request.server, request.principal.userId, query);
}

/**
 * POST /analytics/query as a user, or with `checkOnly` what it checks before it runs anything (a saved query's save:
 * the same refusals, the columns it would answer, nothing run).
 */
export async function runQueryAs(app: FastifyInstance, userId: number, query: string): Promise<QueryResult>;
export async function runQueryAs(
  app: FastifyInstance,
  userId: number,
  query: string,
  checkOnly: true,
): Promise<QueryColumn[]>;
export async function runQueryAs(
  app: FastifyInstance,
  userId: number,
  query: string,
  checkOnly = false,
): Promise<QueryResult | QueryColumn[]> {
  const cfg = app.config.analytics;
  try {
    boundQueryText(query);
  } catch (err) {
    if (err instanceof QueryRefused) throw new ApiError('CP_ERR_INVALID_INPUT', err.message);
    throw err;
  }
  const domainList = await queryDomainsOf(app, userId);
  if (running >= cfg.queryConcurrency)
    throw new ApiError('CP_ERR_RATE_LIMITED', 'too many analytics queries running at once; try again shortly');
  running++;
  try {
    if (checkOnly) return await app.analytics.store.check(query, domainList, cfg.queryTimeoutMs);
    return await app.analytics.store.query(query, domainList, {
      timeoutMs: cfg.queryTimeoutMs,
      maxRows: cfg.queryMaxRows,
    });
  } catch (err) {
    if (err instanceof QueryRefused || err instanceof QueryFailed)
      throw new ApiError('CP_ERR_INVALID_INPUT', err.message);
    if (err instanceof StoreUnavailable) {
      app.log.error({ err }, 'analytics store unavailable');
      throw new ApiError('CP_ERR_UNAVAILABLE', 'analytics store unavailable');
    }
    throw err;
  } finally {
    running--;
  }
}
