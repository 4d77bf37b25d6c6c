// Uptime detection (issue 14 items 1, 2): the edge nodes' per-minute origin counts (shipped with their request-log
// batches) are summed per hostname over every node, and each monitored host's closed minutes are judged against the
// domain's thresholds. An incident opens after `open_after_minutes` failing minutes in a row and resolves after
// `resolve_after_minutes` healthy ones; minutes with fewer than `min_requests_per_minute` requests are too thin to
// judge and are skipped. Opening starts the incident's workflow (`uptimeIncident`, id `uptime-incident:<id>`) and
// resolving signals it, both through the workflow outbox in the transaction that changes the incident.
import type { FastifyInstance } from 'fastify';
import { and, eq, gte, inArray, lte, sql } from 'drizzle-orm';
import { dnsRecords, domains, uptimeIncidents, uptimeMinuteCounts } from '../../db/schema.js';
import { enqueueWorkflows, type WorkflowStart } from '../../workflow-outbox/outbox.js';
import { ensureSettings } from './store.js';

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

export const INCIDENT_WORKFLOW = 'uptimeIncident';
export const incidentWorkflowId = (incidentId: number) => `uptime-incident:${incidentId}`;

type MinuteEntry = [number, string, number, number];

function validEntry(e: unknown): e is MinuteEntry {
  return (
    Array.isArray(e) &&
    e.length === 4 &&
    Number.isSafeInteger(e[0]) &&
    (e[0] as number) % MINUTE_MS === 0 &&
    typeof e[1] === 'string' &&
    e[1].length > 0 &&
    e[1].length <= 253 &&
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
async function domainsOf(app: FastifyInstance, hosts: string[]): Promise<Map<string, { id: number; name: string }>> {
  const candidates = [...new Set(hosts.flatMap(suffixes))];
  const rows = await app.db
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
): Promise<Set<string>> {
  const ids = [...new Set([...owners.values()].map((d) => d.id))];
  const [records, open] = await Promise.all([
    app.db
      .selectDistinct({ domainId: dnsRecords.domainId, name: dnsRecords.name })
      .from(dnsRecords)
      .where(and(inArray(dnsRecords.domainId, ids), eq(dnsRecords.proxied, true), eq(dnsRecords.monitor, true))),
    app.db
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

/** A domain is judged at most this often per process; counts arriving meanwhile are judged when the wait ends. */
export const EVALUATE_EVERY_MS = 5_000;
const schedules = new WeakMap<object, Map<number, { last: number; timer?: NodeJS.Timeout }>>();

/** Judges the domain now, or once EVALUATE_EVERY_MS has passed since it was last judged. */
async function scheduleEvaluation(app: FastifyInstance, domainId: number): Promise<void> {
  let byDomain = schedules.get(app.db);
  if (!byDomain) schedules.set(app.db, (byDomain = new Map()));
  const s = byDomain.get(domainId) ?? { last: 0 };
  byDomain.set(domainId, s);
  const wait = s.last + EVALUATE_EVERY_MS - Date.now();
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
export async function ingestMinuteCounts(app: FastifyInstance, minutes: unknown): Promise<number> {
  if (!Array.isArray(minutes) || minutes.length === 0) return 0;
  const entries = minutes.slice(0, MAX_MINUTE_ENTRIES).filter(validEntry);
  const now = Date.now();
  const fresh = entries
    .map(([m, host, total, errors]) => [m, host.toLowerCase(), total, errors] as MinuteEntry)
    .filter(([m]) => m > now - KEEP_MS && m <= now);
  if (fresh.length === 0) return 0;
  const owners = await domainsOf(app, [...new Set(fresh.map((e) => e[1]))]);
  if (owners.size === 0) return 0;
  const watched = await watchedHosts(app, owners);
  const rows = fresh
    .filter((e) => watched.has(e[1]))
    .map(([m, hostname, total, errors]) => ({
      domainId: owners.get(hostname)!.id,
      hostname,
      minute: new Date(m),
      total,
      errors,
    }));
  for (let i = 0; i < rows.length; i += 500) {
    await app.db
      .insert(uptimeMinuteCounts)
      .values(rows.slice(i, i + 500))
      .onConflictDoUpdate({
        target: [uptimeMinuteCounts.hostname, uptimeMinuteCounts.minute],
        set: {
          total: sql`${uptimeMinuteCounts.total} + excluded.total`,
          errors: sql`${uptimeMinuteCounts.errors} + excluded.errors`,
        },
      });
  }
  for (const domainId of new Set(rows.map((r) => r.domainId))) await scheduleEvaluation(app, domainId);
  return rows.length;
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
      .where(and(eq(uptimeIncidents.domainId, domainId), sql`${uptimeIncidents.monitorId} IS NULL`))
      .orderBy(uptimeIncidents.id);
    const open = new Map(incidents.filter((i) => i.state === 'open').map((i) => [i.hostname, i]));
    const lastResolved = new Map<string, number>();
    for (const i of incidents)
      if (i.resolvedAt)
        lastResolved.set(i.hostname, Math.max(lastResolved.get(i.hostname) ?? 0, i.resolvedAt.getTime()));

    const byHost = new Map<string, Judged[]>();
    for (const c of counts) {
      if (c.total < settings.minRequestsPerMinute) continue;
      const pct = Math.round((c.errors / c.total) * 1000) / 10;
      const list = byHost.get(c.hostname) ?? [];
      list.push({ minute: c.minute.getTime(), pct, failing: pct >= settings.errorThresholdPct });
      byHost.set(c.hostname, list);
    }

    for (const [host, judged] of byHost) {
      const incident = open.get(host);
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
        } else if (peak > incident.peakErrorPct) {
          await tx.update(uptimeIncidents).set({ peakErrorPct: peak }).where(eq(uptimeIncidents.id, incident.id));
        }
        continue;
      }
      if (!monitoredBy(names, domain.name, host)) continue;
      const after = lastResolved.get(host) ?? 0;
      const tail = judged.filter((j) => j.minute >= after).slice(-settings.openAfterMinutes);
      if (tail.length === settings.openAfterMinutes && tail.every((j) => j.failing)) {
        const [created] = await tx
          .insert(uptimeIncidents)
          .values({
            domainId,
            hostname: host,
            startedAt: new Date(tail[0].minute),
            peakErrorPct: Math.max(...tail.map((j) => j.pct)),
          })
          .onConflictDoNothing()
          .returning();
        if (created) starts.push(openStart(created.id));
      }
    }
    await enqueueWorkflows(tx, starts);
  });
  if (starts.length > 0) app.workflowOutbox.nudge();
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
