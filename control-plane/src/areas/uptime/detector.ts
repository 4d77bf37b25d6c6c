// Uptime detection (issue 14 items 1, 2): the edge nodes' per-minute origin counts (shipped with their request-log
// batches) are summed per hostname over every node, and each monitored host's closed minutes are judged against the
// domain's thresholds. An incident opens after `open_after_minutes` failing minutes in a row and resolves after
// `resolve_after_minutes` healthy ones; minutes with fewer than `min_requests_per_minute` requests are too thin to
// judge on traffic: judged on the edge's probes when enough were sent (MIN_PROBES_JUDGED, docs/uptime.md "Probes"),
// else skipped. Opening starts the incident's workflow (`uptimeIncident`, id `uptime-incident:<id>`) and
// resolving signals it, both through the workflow outbox in the transaction that changes the incident.
import type { FastifyInstance } from 'fastify';
import { and, eq, gte, inArray, lte, sql } from 'drizzle-orm';
import { dnsRecords, domains, uptimeIncidents, uptimeMinuteCounts, uptimeMonitors } from '../../db/schema.js';
import { HostFilter, PathFilter } from '@platform/shared/match';
import type { MonitorScope } from './monitor.js';
import { enqueueWorkflows, type WorkflowStart } from '../../workflow-outbox/outbox.js';
import { ensureSettings } from './store.js';
import { notifyDomain } from '../notifications/store.js';
import type { Db } from '../../db/index.js';

const MINUTE_MS = 60_000;
/** A minute is judged once it ended this long ago (nodes ship every few seconds). */
export const MINUTE_GRACE_MS = 10_000;
/** Minutes looked at: the last 15 (thresholds are at most 60, but a judgement on old data is not an outage now). */
const WINDOW_MINUTES = 15;
/** Counts are kept one hour. */
const KEEP_MS = 60 * MINUTE_MS;
/** Entries of one shipment taken at most (an edge sends at most 20,000 hosts per minute). */
export const MAX_MINUTE_ENTRIES = 100_000;
const ADVISORY_NAMESPACE = 727_100;
/**
 * A minute too thin on traffic is judged on traffic and probes together once the nodes sent at least this many probes
 * of it (one node probes 6 times a minute: edge-node/src/uptime/probes.ts): a single lost probe is no outage.
 */
export const MIN_PROBES_JUDGED = 3;
/** Probes of one minute, host and scope taken from one shipment at most (a node sends 6). */
const MAX_PROBES_PER_ENTRY = 60;

export const INCIDENT_WORKFLOW = 'uptimeIncident';
export const incidentWorkflowId = (incidentId: number) => `uptime-incident:${incidentId}`;

type MinuteEntry = [number, string, number, number];

/** An array of `length` entries starting with a minute start (unix ms) and a hostname. */
function minuteAndHost(e: unknown, length: number): e is [number, string, ...unknown[]] {
  return (
    Array.isArray(e) &&
    e.length === length &&
    Number.isSafeInteger(e[0]) &&
    (e[0] as number) % MINUTE_MS === 0 &&
    typeof e[1] === 'string' &&
    e[1].length > 0 &&
    e[1].length <= 253
  );
}

function validEntry(e: unknown): e is MinuteEntry {
  return (
    minuteAndHost(e, 4) &&
    Number.isSafeInteger(e[2]) &&
    Number.isSafeInteger(e[3]) &&
    (e[2] as number) > 0 &&
    (e[3] as number) >= 0 &&
    (e[3] as number) <= (e[2] as number) &&
    (e[2] as number) <= 1_000_000_000
  );
}

/** `a.b.example.org` → itself, `b.example.org`, `example.org`, `org`. */
function suffixes(host: string): string[] {
  const out = [host];
  for (let i = host.indexOf('.'); i >= 0; i = host.indexOf('.', i + 1)) out.push(host.slice(i + 1));
  return out;
}

/** The domain a hostname belongs to: the longest registered name it ends with. */
export async function domainsOf(
  app: FastifyInstance,
  hosts: string[],
  db: Db = app.db,
): Promise<Map<string, { id: number; name: string }>> {
  const candidates = [...new Set(hosts.flatMap(suffixes))];
  const rows = await db
    .select({ id: domains.id, name: domains.name })
    .from(domains)
    .where(inArray(domains.name, candidates));
  const byName = new Map(rows.map((r) => [r.name, r]));
  const out = new Map<string, { id: number; name: string }>();
  for (const h of hosts) {
    const d = suffixes(h)
      .map((n) => byName.get(n))
      .find((x) => x !== undefined);
    if (d !== undefined) out.set(h, d);
  }
  return out;
}

/**
 * The hosts worth keeping counts of: served by a proxied record with `monitor` on, or with an open incident. Counts of
 * every other host are dropped before any write (a `*` record lets clients name 20,000 hosts a minute).
 */
async function watchedHosts(
  app: FastifyInstance,
  owners: Map<string, { id: number; name: string }>,
  db: Db = app.db,
): Promise<Set<string>> {
  const ids = [...new Set([...owners.values()].map((d) => d.id))];
  const [records, open] = await Promise.all([
    db
      .selectDistinct({ domainId: dnsRecords.domainId, name: dnsRecords.name })
      .from(dnsRecords)
      .where(and(inArray(dnsRecords.domainId, ids), eq(dnsRecords.proxied, true), eq(dnsRecords.monitor, true))),
    db
      .select({ hostname: uptimeIncidents.hostname })
      .from(uptimeIncidents)
      .where(and(inArray(uptimeIncidents.domainId, ids), eq(uptimeIncidents.state, 'open'))),
  ]);
  const names = new Map<number, Set<string>>();
  for (const r of records) names.set(r.domainId, (names.get(r.domainId) ?? new Set()).add(r.name));
  const out = new Set(open.map((o) => o.hostname));
  for (const [host, d] of owners) if (monitoredBy(names.get(d.id) ?? new Set(), d.name, host)) out.add(host);
  return out;
}

/**
 * A domain is judged at most this often per process (UPTIME_EVALUATE_EVERY_MS sets it); counts arriving meanwhile are
 * judged when the wait ends.
 */
export const EVALUATE_EVERY_MS = 5_000;
const evaluateEveryMs = (app: FastifyInstance) =>
  (app.config as { uptimeEvaluateEveryMs?: number }).uptimeEvaluateEveryMs ?? EVALUATE_EVERY_MS;
const schedules = new WeakMap<object, Map<number, { last: number; timer?: NodeJS.Timeout }>>();

/** Judges the domain now, or once the wait (evaluateEveryMs) has passed since it was last judged. */
async function scheduleEvaluation(app: FastifyInstance, domainId: number): Promise<void> {
  let byDomain = schedules.get(app.db);
  if (!byDomain) schedules.set(app.db, (byDomain = new Map()));
  const s = byDomain.get(domainId) ?? { last: 0 };
  byDomain.set(domainId, s);
  const wait = s.last + evaluateEveryMs(app) - Date.now();
  if (wait <= 0) {
    s.last = Date.now();
    await evaluateDomain(app, domainId);
    return;
  }
  if (s.timer) return;
  s.timer = setTimeout(() => {
    s.timer = undefined;
    s.last = Date.now();
    evaluateDomain(app, domainId).catch((err: unknown) =>
      app.log.warn({ err, domainId }, 'uptime: judging the domain failed'),
    );
  }, wait);
  s.timer.unref();
}

/**
 * Adds one shipment's counts (summed with what other nodes sent for the same minute and host) and judges the
 * domains they belong to. Malformed entries are skipped; hosts that are not watched are dropped.
 */
/**
 * Where a shipment's counts are written: by default app.db, each domain judged at once; POST /internal/request-logs
 * passes its transaction (the counts commit with the shipment's batch id) and collects the domains to judge after
 * the commit (scheduleEvaluations).
 */
export interface IngestScope {
  db: Db;
  evaluate?: Set<number>;
}

export async function ingestMinuteCounts(
  app: FastifyInstance,
  minutes: unknown,
  scope: IngestScope = { db: app.db },
): Promise<number> {
  if (!Array.isArray(minutes) || minutes.length === 0) return 0;
  const entries = minutes.slice(0, MAX_MINUTE_ENTRIES).filter(validEntry);
  const now = Date.now();
  const fresh = entries
    .map(([m, host, total, errors]) => [m, host.toLowerCase(), total, errors] as MinuteEntry)
    .filter(([m]) => m > now - KEEP_MS && m <= now);
  if (fresh.length === 0) return 0;
  const owners = await domainsOf(app, [...new Set(fresh.map((e) => e[1]))], scope.db);
  if (owners.size === 0) return 0;
  const watched = await watchedHosts(app, owners, scope.db);
  const rows = fresh
    .filter((e) => watched.has(e[1]))
    .map(([m, hostname, total, errors]) => ({
      domainId: owners.get(hostname)!.id,
      hostname,
      minute: new Date(m),
      total,
      errors,
    }));
  await addCounts(app, rows, scope);
  return rows.length;
}

type CountRow = typeof uptimeMinuteCounts.$inferInsert;

/** Adds counts to what other nodes (and earlier shipments) sent, then judges the domains. */
async function addCounts(app: FastifyInstance, rows: CountRow[], scope: IngestScope): Promise<void> {
  for (let i = 0; i < rows.length; i += 500) {
    await scope.db
      .insert(uptimeMinuteCounts)
      .values(rows.slice(i, i + 500))
      .onConflictDoUpdate({
        target: [uptimeMinuteCounts.hostname, uptimeMinuteCounts.minute, uptimeMinuteCounts.monitorId],
        set: {
          total: sql`${uptimeMinuteCounts.total} + excluded.total`,
          errors: sql`${uptimeMinuteCounts.errors} + excluded.errors`,
          probes: sql`${uptimeMinuteCounts.probes} + excluded.probes`,
          probeErrors: sql`${uptimeMinuteCounts.probeErrors} + excluded.probe_errors`,
        },
      });
  }
  if (scope.evaluate) for (const r of rows) scope.evaluate.add(r.domainId);
  else
    await scheduleEvaluations(
      app,
      rows.map((r) => r.domainId),
    );
}

/** Judges the domains (each at most every evaluateEveryMs) once their counts are committed. */
export async function scheduleEvaluations(app: FastifyInstance, domainIds: Iterable<number>): Promise<void> {
  for (const domainId of new Set(domainIds)) await scheduleEvaluation(app, domainId);
}

/** [minute start (unix ms), hostname, monitor id (0: whole host), probes, failed probes] */
type ProbeEntry = [number, string, number, number, number];

function validProbeEntry(e: unknown): e is ProbeEntry {
  return (
    minuteAndHost(e, 5) &&
    Number.isSafeInteger(e[2]) &&
    (e[2] as number) >= 0 &&
    Number.isSafeInteger(e[3]) &&
    Number.isSafeInteger(e[4]) &&
    (e[3] as number) > 0 &&
    (e[3] as number) <= MAX_PROBES_PER_ENTRY &&
    (e[4] as number) >= 0 &&
    (e[4] as number) <= (e[3] as number)
  );
}

/**
 * The probes an edge node sent where traffic was thin (shipped as `probes` beside `minutes`), added to the counts of
 * the same minute, host and scope. Whole-host probes (monitor 0) are kept for watched hosts only; a monitor's only
 * when the monitor is enabled, belongs to the host's domain and its host scope covers the host. Malformed entries
 * are skipped.
 */
export async function ingestProbeCounts(
  app: FastifyInstance,
  probes: unknown,
  scope: IngestScope = { db: app.db },
): Promise<number> {
  if (!Array.isArray(probes) || probes.length === 0) return 0;
  const now = Date.now();
  const fresh = probes
    .slice(0, MAX_MINUTE_ENTRIES)
    .filter(validProbeEntry)
    .map(([m, host, monitorId, n, errors]) => [m, host.toLowerCase(), monitorId, n, errors] as ProbeEntry)
    .filter(([m]) => m > now - KEEP_MS && m <= now);
  if (fresh.length === 0) return 0;
  const owners = await domainsOf(app, [...new Set(fresh.map((e) => e[1]))], scope.db);
  if (owners.size === 0) return 0;
  const wholeHost = fresh.some((e) => e[2] === 0) ? await watchedHosts(app, owners, scope.db) : new Set<string>();
  const monitorIds = [...new Set(fresh.map((e) => e[2]).filter((id) => id > 0))];
  const monitors = new Map<number, { domainId: number; host: HostFilter }>();
  if (monitorIds.length > 0)
    for (const m of await scope.db
      .select()
      .from(uptimeMonitors)
      .where(and(inArray(uptimeMonitors.id, monitorIds), eq(uptimeMonitors.enabled, true)))) {
      const s = m.scope as unknown as MonitorScope;
      monitors.set(m.id, {
        domainId: m.domainId,
        host: new HostFilter(s.host_match_type, s.host_includes, s.host_excludes),
      });
    }
  const rows: CountRow[] = [];
  for (const [m, hostname, monitorId, n, errors] of fresh) {
    const d = owners.get(hostname);
    if (!d) continue;
    if (monitorId === 0 ? !wholeHost.has(hostname) : !matchesMonitor(monitors.get(monitorId), d.id, hostname)) continue;
    rows.push({
      domainId: d.id,
      hostname,
      minute: new Date(m),
      total: 0,
      errors: 0,
      monitorId,
      probes: n,
      probeErrors: errors,
    });
  }
  await addCounts(app, rows, scope);
  return rows.length;
}

function matchesMonitor(
  m: { domainId: number; host: HostFilter } | undefined,
  domainId: number,
  host: string,
): boolean {
  return m !== undefined && m.domainId === domainId && m.host.matches(host);
}

/** A shipped request-log record, as far as monitor scopes need it. */
interface LoggedRequest {
  t: number;
  host: string;
  path: string;
  status: number;
  upstreamMs: number;
}

/** The request went to the origin, and whether it came back as an origin error (as the edge counts it). */
function originOutcome(r: LoggedRequest): 'ok' | 'error' | undefined {
  if (r.upstreamMs >= 0) return r.status >= 500 ? 'error' : 'ok';
  return r.status === 502 || r.status === 504 || r.status === 526 ? 'error' : undefined;
}

/**
 * Monitor scopes: the shipped request-log records are matched against the enabled monitors of their domain (the
 * rules' own HostFilter and PathFilter) and counted per monitor, hostname and minute. At most MAX_MONITORS_PER_DOMAIN
 * monitors per domain, so a record costs at most that many host and path matches.
 */
export async function ingestMonitorRecords(
  app: FastifyInstance,
  records: unknown,
  scope: IngestScope = { db: app.db },
): Promise<number> {
  if (!Array.isArray(records) || records.length === 0) return 0;
  const now = Date.now();
  const recs = (records as Partial<LoggedRequest>[]).filter(
    (r): r is LoggedRequest =>
      !!r &&
      typeof r.host === 'string' &&
      typeof r.path === 'string' &&
      Number.isSafeInteger(r.t) &&
      typeof r.status === 'number' &&
      typeof r.upstreamMs === 'number' &&
      (r.t as number) > now - KEEP_MS &&
      (r.t as number) <= now,
  );
  if (recs.length === 0) return 0;
  const owners = await domainsOf(app, [...new Set(recs.map((r) => r.host.toLowerCase()))], scope.db);
  if (owners.size === 0) return 0;
  const monitors = await scope.db
    .select()
    .from(uptimeMonitors)
    .where(
      and(
        inArray(uptimeMonitors.domainId, [...new Set([...owners.values()].map((d) => d.id))]),
        eq(uptimeMonitors.enabled, true),
      ),
    );
  if (monitors.length === 0) return 0;
  const compiled = new Map<number, { id: number; host: HostFilter; path: PathFilter }[]>();
  for (const m of monitors) {
    const s = m.scope as unknown as MonitorScope;
    const list = compiled.get(m.domainId) ?? [];
    list.push({
      id: m.id,
      host: new HostFilter(s.host_match_type, s.host_includes, s.host_excludes),
      path: new PathFilter(s.path_match_type, s.path_includes, s.path_excludes),
    });
    compiled.set(m.domainId, list);
  }
  const acc = new Map<string, CountRow>();
  for (const r of recs) {
    const outcome = originOutcome(r);
    if (outcome === undefined) continue;
    const host = r.host.toLowerCase();
    const d = owners.get(host);
    const scopes = d && compiled.get(d.id);
    if (!scopes) continue;
    const minute = r.t - (r.t % MINUTE_MS);
    for (const m of scopes) {
      if (!m.host.matches(host) || !m.path.matches(r.path)) continue;
      const key = `${m.id} ${minute} ${host}`;
      let row = acc.get(key);
      if (!row)
        acc.set(
          key,
          (row = { domainId: d.id, hostname: host, minute: new Date(minute), total: 0, errors: 0, monitorId: m.id }),
        );
      row.total++;
      if (outcome === 'error') row.errors++;
    }
  }
  await addCounts(app, [...acc.values()], scope);
  return acc.size;
}

/** Whether `host` is served by one of the monitored record names (exact, or under a `*` record). */
function monitoredBy(names: Set<string>, domain: string, host: string): boolean {
  const rel = host === domain ? '@' : host.endsWith(`.${domain}`) ? host.slice(0, -domain.length - 1) : null;
  if (rel === null) return false;
  if (names.has(rel)) return true;
  for (let i = rel.indexOf('.'); i >= 0; i = rel.indexOf('.', i + 1)) if (names.has(`*${rel.slice(i)}`)) return true;
  return rel !== '@' && names.has('*');
}

interface Judged {
  minute: number;
  pct: number;
  failing: boolean;
}

/** Judges the domain's monitored hosts on their closed minutes; opens and resolves whole-host incidents. */
export async function evaluateDomain(app: FastifyInstance, domainId: number): Promise<void> {
  const starts: WorkflowStart[] = [];
  await app.db.transaction(async (tx) => {
    await tx.execute(sql`SELECT pg_advisory_xact_lock(${ADVISORY_NAMESPACE}, ${domainId})`);
    const [domain] = await tx.select().from(domains).where(eq(domains.id, domainId));
    if (!domain) return;
    const settings = await ensureSettings(tx, domainId);
    const now = Date.now();
    const closedBefore = new Date(now - MINUTE_MS - MINUTE_GRACE_MS);
    await tx
      .delete(uptimeMinuteCounts)
      .where(and(eq(uptimeMinuteCounts.domainId, domainId), lte(uptimeMinuteCounts.minute, new Date(now - KEEP_MS))));
    const counts = await tx
      .select()
      .from(uptimeMinuteCounts)
      .where(
        and(
          eq(uptimeMinuteCounts.domainId, domainId),
          gte(uptimeMinuteCounts.minute, new Date(now - WINDOW_MINUTES * MINUTE_MS)),
          lte(uptimeMinuteCounts.minute, closedBefore),
        ),
      )
      .orderBy(uptimeMinuteCounts.minute);
    const records = await tx
      .selectDistinct({ name: dnsRecords.name })
      .from(dnsRecords)
      .where(and(eq(dnsRecords.domainId, domainId), eq(dnsRecords.proxied, true), eq(dnsRecords.monitor, true)));
    const names = new Set(records.map((r) => r.name));
    const incidents = await tx
      .select()
      .from(uptimeIncidents)
      .where(eq(uptimeIncidents.domainId, domainId))
      .orderBy(uptimeIncidents.id);
    const watchKey = (host: string, monitorId: number | null) => `${monitorId ?? 0} ${host}`;
    const open = new Map(
      incidents.filter((i) => i.state === 'open').map((i) => [watchKey(i.hostname, i.monitorId), i]),
    );
    const lastResolved = new Map<string, number>();
    for (const i of incidents) {
      const k = watchKey(i.hostname, i.monitorId);
      if (i.resolvedAt) lastResolved.set(k, Math.max(lastResolved.get(k) ?? 0, i.resolvedAt.getTime()));
    }
    const monitors = new Map(
      (
        await tx
          .select()
          .from(uptimeMonitors)
          .where(and(eq(uptimeMonitors.domainId, domainId), eq(uptimeMonitors.enabled, true)))
      ).map((m) => [m.id, m]),
    );

    const byHost = new Map<string, Judged[]>();
    for (const c of counts) {
      const pct = judgedPct(c, settings.minRequestsPerMinute);
      if (pct === undefined) continue;
      const k = watchKey(c.hostname, c.monitorId);
      const list = byHost.get(k) ?? [];
      list.push({ minute: c.minute.getTime(), pct, failing: pct >= settings.errorThresholdPct });
      byHost.set(k, list);
    }

    for (const [key, judged] of byHost) {
      const space = key.indexOf(' ');
      const monitorId = Number(key.slice(0, space));
      const host = key.slice(space + 1);
      const incident = open.get(key);
      if (incident) {
        const since = judged.filter((j) => j.minute >= incident.startedAt.getTime());
        const peak = Math.max(incident.peakErrorPct, ...since.map((j) => j.pct));
        const tail = since.slice(-settings.resolveAfterMinutes);
        if (tail.length === settings.resolveAfterMinutes && tail.every((j) => !j.failing)) {
          await tx
            .update(uptimeIncidents)
            .set({ state: 'resolved', resolvedAt: new Date(tail[0].minute), peakErrorPct: peak })
            .where(eq(uptimeIncidents.id, incident.id));
          starts.push(resolveStart(incident.id));
          await notifyDomain(tx, domainId, {
            category: 'uptime',
            kind: 'uptime.resolved',
            title: `${host} is answering again`,
            body: `The outage${incident.scope ? ` of ${incident.scope}` : ''} that began at ${incident.startedAt.toISOString()} is over (peak ${peak}% errors).`,
            domain: domain.name,
            data: { incident_id: incident.id, hostname: host },
            dedupeKey: `uptime:${incident.id}:resolved`,
          });
        } else if (peak > incident.peakErrorPct) {
          await tx.update(uptimeIncidents).set({ peakErrorPct: peak }).where(eq(uptimeIncidents.id, incident.id));
        }
        continue;
      }
      const monitor = monitors.get(monitorId);
      if (monitorId === 0 ? !monitoredBy(names, domain.name, host) : !monitor) continue;
      const after = lastResolved.get(key) ?? 0;
      const tail = judged.filter((j) => j.minute >= after).slice(-settings.openAfterMinutes);
      if (tail.length === settings.openAfterMinutes && tail.every((j) => j.failing)) {
        const [created] = await tx
          .insert(uptimeIncidents)
          .values({
            domainId,
            hostname: host,
            monitorId: monitor ? monitor.id : null,
            // Spec: "monitor name or path; empty for whole-host watch".
            scope: monitor ? monitor.name || (monitor.scope as unknown as MonitorScope).path_includes.join(', ') : '',
            startedAt: new Date(tail[0].minute),
            peakErrorPct: Math.max(...tail.map((j) => j.pct)),
          })
          .onConflictDoNothing()
          .returning();
        if (created) {
          starts.push(openStart(created.id));
          await notifyDomain(tx, domainId, {
            category: 'uptime',
            kind: 'uptime.opened',
            title: `${host} is failing`,
            body: `The origin${created.scope ? ` (${created.scope})` : ''} has answered ${created.peakErrorPct}% errors or more since ${created.startedAt.toISOString()}.`,
            domain: domain.name,
            data: { incident_id: created.id, hostname: host },
            dedupeKey: `uptime:${created.id}:opened`,
          });
        }
      }
    }
    await enqueueWorkflows(tx, starts);
  });
  if (starts.length > 0) app.workflowOutbox.nudge();
}

/**
 * The error percentage a minute is judged on: its proxied requests alone when there are at least `minRequests`;
 * else, when the edge probed it at least MIN_PROBES_JUDGED times, its requests and probes together; else undefined
 * (too thin to judge, skipped).
 */
export function judgedPct(
  c: { total: number; errors: number; probes: number; probeErrors: number },
  minRequests: number,
): number | undefined {
  if (c.total >= minRequests) return Math.round((c.errors / c.total) * 1000) / 10;
  if (c.probes < MIN_PROBES_JUDGED) return undefined;
  return Math.round(((c.errors + c.probeErrors) / (c.total + c.probes)) * 1000) / 10;
}

function openStart(incidentId: number): WorkflowStart {
  return {
    kind: 'start',
    workflowType: INCIDENT_WORKFLOW,
    workflowId: incidentWorkflowId(incidentId),
    args: [{ incidentId }],
  };
}

/** Signal-with-start: a workflow that was lost is started again, resolved at once (each event is sent once anyway). */
function resolveStart(incidentId: number): WorkflowStart {
  return { ...openStart(incidentId), kind: 'signal-with-start', signal: 'resolveIncident', signalArgs: [] };
}
