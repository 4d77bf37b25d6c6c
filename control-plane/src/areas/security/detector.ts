// Attack detection (issue 13 item 8): the request-log records the edge nodes ship (POST /internal/request-logs) are
// counted per domain and minute (requests, error answers, the busiest client addresses in a bounded space-saving
// summary), summed over nodes and batches in `attack_minutes` (kept one hour). Closed minutes are judged against the
// domain's switches (attacks.ts): a request-rate anomaly is a minute with at least min_requests_per_minute requests
// and more than request_rate_multiplier times the domain's usual rate (the median of its previous 30 closed minutes,
// anomalous ones left out); an error anomaly is one with that many requests of which at least error_rate_percent are
// errors. An anomaly opens an attack of its kind (one open per domain and kind; further anomalous minutes extend it)
// that ends after QUIET_MINUTES closed minutes without one. The automatic switches act when an attack opens: Under
// Attack Mode on (through the PUT's own write, writeUnderAttack) and off again once no attack is open, only if the
// detector turned it on; the suggested rule enforced through enforceAttack (POST …/enforce). What they did, or why
// not, is recorded on the attack. Every control plane process that receives batches runs a sweep; a domain is judged
// under a transaction-scoped advisory lock, so several processes never judge one domain at once.
import { isIP } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { and, asc, eq, inArray, isNull, lte, sql } from 'drizzle-orm';
import { changeDomain } from '../../config-log/index.js';
import type { Db, Tx } from '../../db/index.js';
import { rowsOf } from '../../db/migrate.js';
import {
  attackMinutes,
  attackProtection,
  attacks,
  domains,
  type AttackAction,
  type AttackClient,
} from '../../db/schema.js';
import { ApiError } from '../../errors.js';
import { domainsOf } from '../uptime/detector.js';
import { DEFAULTS, enforceAttack, MAX_TOP_CLIENTS, readSwitches, type AttackRow, type Switches } from './attacks.js';
import { writeUnderAttack } from './routes.js';
import { notifyDomain } from '../notifications/store.js';

/** Client addresses kept per domain and minute (TopKeys: the busiest are kept, their counts are upper bounds). */
export const MINUTE_CLIENTS = 64;
/** Host names and paths kept per domain and minute. */
export const FOCUS_KEYS = 16;
/** A host or path with at least this share of an anomalous minute's requests is what the attack aims at. */
const FOCUS_SHARE = 0.5;
/** Longest path kept (a longer one is counted in the minute, not as a path). */
const MAX_FOCUS_PATH = 256;
/** Previous closed minutes the usual rate is the median of. */
export const BASELINE_MINUTES = 30;
/** Closed minutes judged at most (older unjudged ones, e.g. after downtime, are marked judged without a verdict). */
export const JUDGE_MINUTES = 15;
/** An attack ends after this many closed minutes without its anomaly. */
export const QUIET_MINUTES = 3;
/** Minutes of counts kept. */
const KEEP_MINUTES = 60;
/** Anomaly bits of a minute. */
export const RATE = 1;
export const ERRORS = 2;
/** A client with at least this share of an error minute's requests is named in the suggested drop rule. */
const DROP_SHARE = 0.1;
/** The suggested rate limit never goes below this many requests per client and minute. */
export const MIN_SUGGESTED_LIMIT = 60;
const MAX_COUNT = 2_000_000_000;
const MAX_ADDRESS = 64;
const ADVISORY_NAMESPACE = 727_200;

/**
 * Rule types whose enforced hit on a 403 or 429 means the edge refused the request itself: it counts as a request
 * but not as an error (Under Attack Mode's challenge is a 403: counting it would make the cure look like an attack).
 */
const REFUSING = new Set([
  'drop',
  'waf',
  'rate_limit',
  'custom',
  'bot_route',
  'fingerprint',
  'captcha',
  'under_attack',
]);

export interface Timing {
  minuteMs: number;
  /** A minute is judged once it ended this long ago (nodes ship every few seconds). */
  graceMs: number;
  sweepMs: number;
}

export function timing(minuteMs: number): Timing {
  return { minuteMs, graceMs: Math.round(minuteMs / 6), sweepMs: Math.round(minuteMs / 4) };
}
const timingOf = (app: FastifyInstance) => timing((app.config as { attackMinuteMs?: number }).attackMinuteMs ?? 60_000);

/** One domain-minute of a batch. */
export interface MinuteTally {
  domainId: number;
  minute: number;
  requests: number;
  errors: number;
  clients: TopKeys;
  hosts: TopKeys;
  paths: TopKeys;
}

/**
 * The busiest keys (client addresses, hosts, paths) of a domain-minute, in the manner of space-saving: at most 2 × cap addresses are held;
 * when full, all but the cap busiest are dropped at once (a sort every `cap` new addresses: O(log cap) a record
 * rather than a scan of the cap for each) and a new address starts above the largest count dropped, so every count
 * is an upper bound of the true one and a busy address is never lost to a flood of new ones.
 */
export class TopKeys {
  readonly counts = new Map<string, number>();
  private floor = 0;

  constructor(readonly cap = MINUTE_CLIENTS) {}

  add(address: string, n = 1): void {
    const c = this.counts.get(address);
    if (c !== undefined) {
      this.counts.set(address, Math.min(MAX_COUNT, c + n));
      return;
    }
    if (this.counts.size >= 2 * this.cap) this.prune();
    this.counts.set(address, Math.min(MAX_COUNT, this.floor + n));
  }

  /** Busiest first (ties by address), at most `cap`. */
  top(cap = this.cap): [string, number][] {
    return topOf(this.counts, cap);
  }

  private prune(): void {
    for (const [address, n] of this.top(this.counts.size).slice(this.cap)) {
      this.counts.delete(address);
      if (n > this.floor) this.floor = n;
    }
  }
}

/** A shipped record, as far as detection needs it (edge-node/src/log/buffer.ts). */
interface ShippedRecord {
  t: number;
  host: string;
  path?: unknown;
  status: number;
  peer?: unknown;
  rules?: unknown;
}

function isError(r: ShippedRecord): boolean {
  if (!(r.status >= 400)) return false;
  if ((r.status === 403 || r.status === 429) && Array.isArray(r.rules))
    for (const h of r.rules) if (Array.isArray(h) && h[2] === false && REFUSING.has(h[1] as string)) return false;
  return true;
}

/**
 * Counts one batch per domain and minute: records outside [from, to), of hosts no domain owns, or malformed are
 * skipped. Linear in the records; at most MINUTE_CLIENTS addresses per domain-minute.
 */
export function tallyRecords(
  records: readonly unknown[],
  domainOf: (host: string) => number | undefined,
  minuteMs: number,
  from: number,
  to: number,
): Map<string, MinuteTally> {
  const out = new Map<string, MinuteTally>();
  const hosts = new Map<string, number | undefined>();
  const lower = new Map<string, string>();
  for (const x of records) {
    const r = x as ShippedRecord;
    if (!r || typeof r.host !== 'string' || !Number.isSafeInteger(r.t) || r.t < from || r.t >= to) continue;
    if (typeof r.status !== 'number') continue;
    let domainId = hosts.get(r.host);
    if (domainId === undefined && !hosts.has(r.host)) hosts.set(r.host, (domainId = domainOf(r.host)));
    if (domainId === undefined) continue;
    const minute = r.t - (r.t % minuteMs);
    const key = `${domainId} ${minute}`;
    let tally = out.get(key);
    if (!tally)
      out.set(
        key,
        (tally = {
          domainId,
          minute,
          requests: 0,
          errors: 0,
          clients: new TopKeys(),
          hosts: new TopKeys(FOCUS_KEYS),
          paths: new TopKeys(FOCUS_KEYS),
        }),
      );
    tally.requests++;
    if (isError(r)) tally.errors++;
    if (typeof r.peer === 'string' && r.peer.length > 0 && r.peer.length <= MAX_ADDRESS) tally.clients.add(r.peer);
    let host = lower.get(r.host);
    if (host === undefined) lower.set(r.host, (host = r.host.toLowerCase()));
    tally.hosts.add(host);
    if (typeof r.path === 'string' && r.path.length <= MAX_FOCUS_PATH) tally.paths.add(r.path);
  }
  return out;
}

/** Busiest first, at most `cap`. */
function topOf(clients: Map<string, number>, cap: number): [string, number][] {
  return [...clients].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).slice(0, cap);
}

/**
 * Adds one shipment's records to the per-domain minute counts (summed with what other nodes and batches sent) and
 * returns the number of domain-minutes written. The domains' rows are merged under their advisory locks. A failure
 * (a domain deleted meanwhile) is logged and counts nothing: the shipment's records are stored already, and failing
 * it would make the node send them again.
 */
export async function ingestAttackRecords(app: FastifyInstance, records: unknown, db?: Db): Promise<number> {
  // In the shipment's transaction (POST /internal/request-logs) a failure fails the shipment: the
  // node sends it again, and the counts are neither lost nor doubled.
  if (db) return ingest(app, records, db);
  try {
    return await ingest(app, records, app.db);
  } catch (err) {
    app.log.warn({ err }, 'attacks: counting a shipment failed');
    return 0;
  }
}

async function ingest(app: FastifyInstance, records: unknown, db: Db): Promise<number> {
  if (!Array.isArray(records) || records.length === 0) return 0;
  const { minuteMs, graceMs } = timingOf(app);
  const now = Date.now();
  const from = now - KEEP_MINUTES * minuteMs;
  const hosts = new Set<string>();
  for (const r of records as ShippedRecord[])
    if (r && typeof r.host === 'string' && r.host.length > 0 && r.host.length <= 253) hosts.add(r.host);
  if (hosts.size === 0) return 0;
  const lower = new Map([...hosts].map((h) => [h, h.toLowerCase()]));
  const owners = await domainsOf(app, [...new Set(lower.values())], db);
  if (owners.size === 0) return 0;
  const tallies = tallyRecords(records, (h) => owners.get(lower.get(h) ?? '')?.id, minuteMs, from, now + graceMs);
  if (tallies.size === 0) return 0;
  const ids = [...new Set([...tallies.values()].map((t) => t.domainId))].sort((a, b) => a - b);
  const minutes = [...new Set([...tallies.values()].map((t) => t.minute))];
  await db.transaction(async (tx) => {
    // In id order, as every writer takes them: no two transactions wait on each other in a circle.
    await tx.execute(
      sql`SELECT count(pg_advisory_xact_lock(${ADVISORY_NAMESPACE}, d.id)) FROM (SELECT id FROM domains WHERE id IN (${sql.join(
        ids.map((id) => sql`${id}`),
        sql`, `,
      )}) ORDER BY id) d`,
    );
    const stored = await tx
      .select()
      .from(attackMinutes)
      .where(
        and(
          inArray(attackMinutes.domainId, ids),
          inArray(
            attackMinutes.minute,
            minutes.map((m) => new Date(m)),
          ),
        ),
      );
    for (const s of stored) {
      const t = tallies.get(`${s.domainId} ${s.minute.getTime()}`);
      if (!t) continue;
      t.requests = Math.min(MAX_COUNT, t.requests + s.requests);
      t.errors = Math.min(MAX_COUNT, t.errors + s.errors);
      for (const [address, n] of s.clients) t.clients.add(address, n);
      for (const [host, n] of s.hosts) t.hosts.add(host, n);
      for (const [path, n] of s.paths) t.paths.add(path, n);
    }
    const rows = [...tallies.values()].map((t) => ({
      domainId: t.domainId,
      minute: new Date(t.minute),
      requests: t.requests,
      errors: t.errors,
      clients: t.clients.top(),
      hosts: t.hosts.top(),
      paths: t.paths.top(),
    }));
    for (let i = 0; i < rows.length; i += 500)
      await tx
        .insert(attackMinutes)
        .values(rows.slice(i, i + 500))
        .onConflictDoUpdate({
          target: [attackMinutes.domainId, attackMinutes.minute],
          set: {
            requests: sql`excluded.requests`,
            errors: sql`excluded.errors`,
            clients: sql`excluded.clients`,
            hosts: sql`excluded.hosts`,
            paths: sql`excluded.paths`,
          },
        });
  });
  return tallies.size;
}

/** The median of `xs` (not empty). */
function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}

interface MinuteRow {
  requests: number;
  errors: number;
  anomalies: number;
}

/**
 * The domain's usual requests per minute before `minute`: the median of its previous BASELINE_MINUTES closed minutes
 * (a minute with no row had no requests), leaving out request-rate anomalies (an attack does not become the usual
 * rate) and minutes before `since` (before the detector counted anything: unknown, not quiet). Undefined when no
 * minute is left.
 */
export function usualRate(
  byMinute: ReadonlyMap<number, MinuteRow>,
  minute: number,
  minuteMs: number,
  since: number,
): number | undefined {
  const counts: number[] = [];
  for (let k = 1; k <= BASELINE_MINUTES; k++) {
    const m = minute - k * minuteMs;
    if (m < since) break;
    const row = byMinute.get(m);
    if (row && row.anomalies & RATE) continue;
    counts.push(row?.requests ?? 0);
  }
  return counts.length === 0 ? undefined : median(counts);
}

/** The anomaly bits of a minute against the switches (RATE needs a usual rate). */
export function judgeMinute(c: { requests: number; errors: number }, usual: number | undefined, s: Switches): number {
  if (c.requests < s.min_requests_per_minute) return 0;
  let bits = 0;
  if (usual !== undefined && c.requests > s.request_rate_multiplier * usual) bits |= RATE;
  if (c.errors * 100 >= s.error_rate_percent * c.requests) bits |= ERRORS;
  return bits;
}

/** Valid addresses, summed, busiest first, at most MAX_TOP_CLIENTS. */
function mergeClients(a: readonly AttackClient[], b: readonly [string, number][]): AttackClient[] {
  const sum = new Map(a.map((c) => [c.address, c.requests]));
  for (const [raw, n] of b) {
    // An IPv4 client of a dual-stack socket is named as the IPv4 address it is (rules match it so).
    const address = raw.startsWith('::ffff:') && isIP(raw.slice(7)) === 4 ? raw.slice(7) : raw;
    if (isIP(address)) sum.set(address, Math.min(MAX_COUNT, (sum.get(address) ?? 0) + n));
  }
  return topOf(sum, MAX_TOP_CLIENTS).map(([address, requests]) => ({ address, requests }));
}

/**
 * What an anomalous minute aims at: the host and the path that had at least half its requests ("" when none did;
 * a path with a `*` is left out, as a rule's wildcard entry would read it as one).
 */
export function focusOf(m: {
  requests: number;
  hosts: readonly [string, number][];
  paths: readonly [string, number][];
}): { host: string; path: string } {
  const top = (keys: readonly [string, number][]) =>
    keys.find(([k, n]) => n >= m.requests * FOCUS_SHARE && k !== '' && !k.includes('*'))?.[0] ?? '';
  const path = top(m.paths);
  return { host: top(m.hosts), path: path.startsWith('/') ? path : '' };
}

/**
 * The rule that would stop an attack, as a create body scoped to its host and path when it has them: a per-address
 * rate limit for a request flood (a client may send per minute what the whole domain usually gets, at least
 * MIN_SUGGESTED_LIMIT: no ordinary visitor is limited), a drop of the addresses sending at least a tenth of the
 * requests for an error flood (scans, credential stuffing), or the rate limit when no address stands out.
 */
export function suggestRule(
  kind: 'request_rate' | 'error_rate',
  requests: number,
  clients: readonly AttackClient[],
  usual: number | undefined,
  focus: { host: string; path: string } = { host: '', path: '' },
): { ruleType: 'rate_limit' | 'drop'; ruleBody: Record<string, unknown> } {
  const scope: Record<string, unknown> = {};
  if (focus.host !== '') scope.host_includes = [focus.host];
  if (focus.path !== '') scope.path_includes = [focus.path];
  if (kind === 'error_rate') {
    const heavy = clients.filter((c) => c.requests >= requests * DROP_SHARE).map((c) => c.address);
    if (heavy.length > 0)
      return { ruleType: 'drop', ruleBody: { ...scope, ip_includes: heavy, action: 'status', status_code: 403 } };
  }
  const limit = Math.min(1_000_000, Math.max(MIN_SUGGESTED_LIMIT, Math.ceil(usual ?? 0)));
  return {
    ruleType: 'rate_limit',
    ruleBody: { ...scope, requests: limit, period_s: 60, key: 'ip', action: 'block', block_s: 300 },
  };
}

const KINDS = [
  ['request_rate', RATE],
  ['error_rate', ERRORS],
] as const;

/** What evaluate decided, acted on after its commit. */
interface Verdict {
  opened: AttackRow[];
  switches: Switches;
  openLeft: number;
  underAttackByDetector: boolean;
}

/**
 * Judges the domain's closed, unjudged minutes and opens, extends and ends its attacks; then runs the automatic
 * actions. Returns false when another process holds the domain (it judges the same minutes).
 */
export async function evaluateAttacks(app: FastifyInstance, domainId: number, now = Date.now()): Promise<boolean> {
  const { minuteMs, graceMs } = timingOf(app);
  let verdict: Verdict | undefined;
  const got = await app.db.transaction(async (tx) => {
    const [lock] = rowsOf<{ ok: boolean }>(
      await tx.execute(sql`SELECT pg_try_advisory_xact_lock(${ADVISORY_NAMESPACE}, ${domainId}) AS ok`),
    );
    if (!lock?.ok) return false;
    verdict = await judge(tx, domainId, now, minuteMs, graceMs);
    return true;
  });
  if (verdict) await act(app, domainId, verdict);
  return got;
}

async function judge(tx: Tx, domainId: number, now: number, minuteMs: number, graceMs: number): Promise<Verdict> {
  const lastClosed = Math.floor((now - minuteMs - graceMs) / minuteMs) * minuteMs;
  const judgeFrom = lastClosed - (JUDGE_MINUTES - 1) * minuteMs;
  const switches = await readSwitches(tx, domainId);
  const [prot] = await tx
    .select({ flag: attackProtection.underAttackByDetector })
    .from(attackProtection)
    .where(eq(attackProtection.domainId, domainId));
  const rows = await tx
    .select({
      minute: attackMinutes.minute,
      requests: attackMinutes.requests,
      errors: attackMinutes.errors,
      clients: attackMinutes.clients,
      hosts: attackMinutes.hosts,
      paths: attackMinutes.paths,
      judged: attackMinutes.judged,
      anomalies: attackMinutes.anomalies,
    })
    .from(attackMinutes)
    .where(and(eq(attackMinutes.domainId, domainId), lte(attackMinutes.minute, new Date(lastClosed))))
    .orderBy(asc(attackMinutes.minute));
  const [first] = rowsOf<{ since: Date | string | null }>(
    await tx.execute(sql`SELECT min(minute) AS since FROM attack_minutes`),
  );
  const since = first?.since ? new Date(first.since).getTime() : lastClosed;
  const open = await tx
    .select()
    .from(attacks)
    .where(and(eq(attacks.domainId, domainId), isNull(attacks.endedAt)));
  const byKind = new Map(open.map((a) => [a.kind, a]));
  const byMinute = new Map(rows.map((r) => [r.minute.getTime(), r]));
  const changed = new Set<AttackRow>();
  const opened: AttackRow[] = [];
  const anomalous: { minute: Date; anomalies: number }[] = [];

  for (const r of rows) {
    if (r.judged) continue;
    const m = r.minute.getTime();
    const usual = usualRate(byMinute, m, minuteMs, since);
    r.anomalies = m >= judgeFrom ? judgeMinute(r, usual, switches) : 0;
    r.judged = true;
    if (r.anomalies === 0) continue;
    anomalous.push({ minute: r.minute, anomalies: r.anomalies });
    for (const [kind, bit] of KINDS) {
      if ((r.anomalies & bit) === 0) continue;
      const a = byKind.get(kind);
      if (a) {
        a.peakRequestsPerMinute = Math.max(a.peakRequestsPerMinute, r.requests);
        a.lastAnomalyAt = r.minute;
        a.topClients = mergeClients(a.topClients, r.clients);
        changed.add(a);
        continue;
      }
      const topClients = mergeClients([], r.clients);
      const focus = focusOf(r);
      const [created] = await tx
        .insert(attacks)
        .values({
          domainId,
          kind,
          ...focus,
          startedAt: r.minute,
          lastAnomalyAt: r.minute,
          peakRequestsPerMinute: r.requests,
          topClients,
          ...suggestRule(kind, r.requests, topClients, usual, focus),
        })
        .returning();
      byKind.set(kind, created);
      opened.push(created);
      await notifyDomain(tx, domainId, {
        category: 'security',
        kind: 'security.attack_detected',
        title: kind === 'request_rate' ? 'A request flood was detected' : 'A surge of errors was detected',
        body:
          `${r.requests} requests in the minute from ${r.minute.toISOString()}` +
          `${focus.host ? ` on ${focus.host}` : ''}. A suggested ${created.ruleType} rule can be enforced from the attack.`,
        data: { attack_id: created.id, kind },
        dedupeKey: `attack:${created.id}`,
      });
    }
  }

  for (const a of byKind.values()) {
    // Only the attacks the detector opened (written by hand, last_anomaly_at is null): ended after quiet minutes.
    if (a.lastAnomalyAt && lastClosed - a.lastAnomalyAt.getTime() >= QUIET_MINUTES * minuteMs) {
      a.endedAt = new Date(a.lastAnomalyAt.getTime() + minuteMs);
      byKind.delete(a.kind);
      changed.add(a);
    }
  }
  for (const a of changed)
    await tx
      .update(attacks)
      .set({
        peakRequestsPerMinute: a.peakRequestsPerMinute,
        lastAnomalyAt: a.lastAnomalyAt,
        topClients: a.topClients,
        endedAt: a.endedAt,
        updatedAt: new Date(),
      })
      .where(eq(attacks.id, a.id));
  await tx
    .update(attackMinutes)
    .set({ judged: true })
    .where(
      and(
        eq(attackMinutes.domainId, domainId),
        eq(attackMinutes.judged, false),
        lte(attackMinutes.minute, new Date(lastClosed)),
      ),
    );
  for (const x of anomalous)
    await tx
      .update(attackMinutes)
      .set({ anomalies: x.anomalies })
      .where(and(eq(attackMinutes.domainId, domainId), eq(attackMinutes.minute, x.minute)));
  return {
    opened: opened.filter((a) => a.endedAt === null),
    switches,
    openLeft: byKind.size,
    underAttackByDetector: prot?.flag === true,
  };
}

const record = (action: AttackAction) => sql`${attacks.automaticActions} || ${JSON.stringify([action])}::jsonb`;

async function noteAction(db: Db | Tx, attackId: number, action: AttackAction): Promise<void> {
  await db
    .update(attacks)
    .set({ automaticActions: record(action) })
    .where(eq(attacks.id, attackId));
}

const skipped = (action: AttackAction['action'], err: unknown): AttackAction => {
  if (!(err instanceof ApiError)) throw err;
  return { action, result: 'skipped', reason: err.message };
};

/** The automatic switches, each in its own write (changeDomain / createRule) after the verdict's commit. */
async function act(app: FastifyInstance, domainId: number, v: Verdict): Promise<void> {
  for (const a of v.opened) {
    if (v.switches.auto_under_attack) {
      try {
        await changeDomain(app, domainId, async (tx, current) => {
          const action: AttackAction = current.underAttack
            ? { action: 'under_attack', result: 'skipped', reason: 'Under Attack Mode was on already' }
            : { action: 'under_attack', result: 'done', reason: '' };
          await noteAction(tx, a.id, action);
          return writeUnderAttack(tx, current, true, 'detector');
        });
      } catch (err) {
        await noteAction(app.db, a.id, skipped('under_attack', err));
      }
    }
    if (v.switches.auto_rate_limit) {
      if (a.ruleType !== 'rate_limit') {
        await noteAction(app.db, a.id, {
          action: 'enforce',
          result: 'skipped',
          reason: 'the suggested rule drops addresses: auto_rate_limit enforces rate limits only',
        });
        continue;
      }
      try {
        const [domain] = await app.db.select().from(domains).where(eq(domains.id, domainId));
        if (!domain) return;
        await enforceAttack(app, domain, a.id);
        await noteAction(app.db, a.id, { action: 'enforce', result: 'done', reason: '' });
      } catch (err) {
        await noteAction(app.db, a.id, skipped('enforce', err));
      }
    }
  }
  if (v.openLeft === 0 && v.underAttackByDetector) {
    // Off only if the detector turned it on and no attack opened meanwhile (read again under the domain lock).
    await changeDomain(app, domainId, async (tx, current) => {
      const [prot] = await tx
        .select({ flag: attackProtection.underAttackByDetector })
        .from(attackProtection)
        .where(eq(attackProtection.domainId, domainId));
      const [stillOpen] = await tx
        .select({ id: attacks.id })
        .from(attacks)
        .where(and(eq(attacks.domainId, domainId), isNull(attacks.endedAt)))
        .limit(1);
      if (!prot?.flag || stillOpen) return { value: undefined };
      return writeUnderAttack(tx, current, false, 'detector');
    });
  }
}

/**
 * One pass of every process's sweep: drops counts older than an hour, marks the minutes too thin to judge, then
 * judges each domain with closed unjudged minutes, an open attack, or Under Attack Mode turned on by the detector.
 */
export async function sweepAttacks(app: FastifyInstance, now = Date.now()): Promise<void> {
  const { minuteMs, graceMs } = timingOf(app);
  const lastClosed = Math.floor((now - minuteMs - graceMs) / minuteMs) * minuteMs;
  const closed = new Date(lastClosed).toISOString();
  await app.db.delete(attackMinutes).where(lte(attackMinutes.minute, new Date(now - KEEP_MINUTES * minuteMs)));
  // Minutes below their domain's minimum are never an anomaly: marked judged in one statement, so only domains with
  // enough traffic are judged one by one. Rows a batch is merging into are skipped (judged next time), never waited
  // for.
  await app.db.execute(sql`
    UPDATE attack_minutes m SET judged = true FROM (
      SELECT am.domain_id, am.minute FROM attack_minutes am
      LEFT JOIN attack_protection p ON p.domain_id = am.domain_id
      WHERE NOT am.judged AND am.minute <= ${closed}
        AND am.requests < coalesce(p.min_requests_per_minute, ${DEFAULTS.min_requests_per_minute})
      FOR UPDATE OF am SKIP LOCKED) thin
    WHERE m.domain_id = thin.domain_id AND m.minute = thin.minute`);
  const due = rowsOf<{ domain_id: number }>(
    await app.db.execute(sql`
      SELECT domain_id FROM attack_minutes WHERE NOT judged AND minute <= ${closed}
      UNION SELECT domain_id FROM attacks WHERE ended_at IS NULL AND last_anomaly_at IS NOT NULL
      UNION SELECT domain_id FROM attack_protection WHERE under_attack_by_detector`),
  );
  for (const { domain_id } of due) {
    try {
      await evaluateAttacks(app, Number(domain_id), now);
    } catch (err) {
      app.log.warn({ err, domainId: domain_id }, 'attacks: judging the domain failed');
    }
  }
}

/** Starts the process's sweep (every quarter minute); stopped when the app closes. */
export function startAttackDetector(app: FastifyInstance): void {
  const { sweepMs } = timingOf(app);
  let running: Promise<void> | undefined;
  const timer = setInterval(() => {
    running ??= sweepAttacks(app)
      .catch((err: unknown) => app.log.warn({ err }, 'attacks: sweep failed'))
      .finally(() => {
        running = undefined;
      });
  }, sweepMs);
  timer.unref();
  app.addHook('onClose', async () => {
    clearInterval(timer);
    await running;
  });
}
