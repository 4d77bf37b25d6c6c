// Uptime probes (issue 14, docs/uptime.md "Probes"): when a watched scope — a host of a record with `monitor` on, or
// a host in an enabled monitor's scope — gets fewer proxied requests in a minute than the domain's
// min_requests_per_minute, the edge asks the origin itself, a few times a minute, through the proxy's own guarded
// origin pools. The outcomes are shipped beside the per-minute origin counts (as `probes`), and the control plane
// judges a thin minute on them. Nothing here runs per proxied request: what traffic a scope saw is read from the
// counts and records the shipper drains anyway.
import type { UptimeMonitorScope } from '@platform/shared/config';
import { HostFilter, PathFilter, type HostMatchType, type PathMatchType } from '@platform/shared/match';
import { originOutcome, type OriginMinute, type OriginOutcome } from '../log/origin-minutes.js';
import { recordOrigin } from '../proxy/origin.js';
import { offersH2, type UpstreamPools } from '../proxy/upstream.js';
import type { CompiledDomain, DomainTable } from '../store/snapshot.js';
import { NOT_SERVED } from '../store/snapshot.js';

const MINUTE_MS = 60_000;

/** The probe rule (docs/uptime.md "Probes", docs/decisions.md). Per node; a node with N workers splits it N ways. */
export interface ProbeRule {
  perScopePerMinute: number;
  minPerScope: number;
  nodeBudgetPerMinute: number;
  spreadMs: number;
  timeoutMs: number;
  maxInFlight: number;
  hostsPerMonitor: number;
  scopesPerDomain: number;
  userAgent: string;
}

export const PROBE_RULE: Readonly<ProbeRule> = {
  /** Probes of one thin scope per minute: one every 10 s. */
  perScopePerMinute: 6,
  /**
   * Fewest probes a probed scope gets in a minute when the node budget is short; the control plane judges a thin
   * minute only from 3 probes on (control-plane/src/areas/uptime/detector.ts MIN_PROBES_JUDGED).
   */
  minPerScope: 3,
  /** Probes one edge node sends per minute at most, over every tenant: the edge is never a load generator. */
  nodeBudgetPerMinute: 1200,
  /** Probes are spread over the first 50 s of their minute, so they end (10 s timeout) before it closes. */
  spreadMs: 50_000,
  /** A probe waits at most this long for the answer's head (less when the record's timeout is shorter). */
  timeoutMs: 10_000,
  /** Probes waiting for an answer at once per process; a probe due beyond it is skipped. */
  maxInFlight: 64,
  /** Hosts probed per monitor at most (its scope may cover every host of a 10,000-record zone). */
  hostsPerMonitor: 5,
  /**
   * Scopes probed per domain at most (its monitored names in name order, then its monitors'): one tenant's 10,000
   * monitored records cannot take the node budget from every other tenant, nor aim 10,000 probes at one address.
   */
  scopesPerDomain: 100,
  userAgent: 'Service-Uptime-Probe/1',
};

/** [minute start (unix ms), hostname, monitor id (0: whole host), probes, failed probes] */
export type ProbeEntry = [number, string, number, number, number];

/** Probe entries kept unshipped at most (the control plane unreachable for a long time); beyond, dropped. */
const MAX_PENDING_ENTRIES = 20_000;

/** One watched scope as the prober sees it. */
export interface ProbeScope {
  /** `<monitor id> <host>`: 0 for the whole-host watch. */
  key: string;
  host: string;
  monitorId: number;
  /** Path the probe asks for: `/` for a whole host, one inside the monitor's path scope. */
  path: string;
  /** The domain's min_requests_per_minute. */
  minRequests: number;
  /** For a monitor scope: which logged paths count as its traffic. */
  paths?: PathFilter;
}

/** A probe planned for a minute. */
export interface PlannedProbe {
  key: string;
  /** Unix ms it is due. */
  at: number;
}

const PRINTABLE_PATH = /^\/[\x21-\x7e]{0,2047}$/;

/**
 * The path a monitor is probed on: its first path_includes entry that, a trailing `*` read as nothing and any other
 * as `x` (else every `*` as `x`), is a path the monitor's filter lets through (`/api/*` → `/api/`, `/*` → `/`,
 * an inner star as in `/a/x/status`, `/health` as it is). Regex scopes give no path: such a monitor is not probed (its minutes are judged on traffic only).
 */
export function probePath(m: Pick<UptimeMonitorScope, 'pathMatchType' | 'pathIncludes' | 'pathExcludes'>) {
  if (m.pathMatchType !== 'wildcard') return undefined;
  const filter = new PathFilter('wildcard', m.pathIncludes, m.pathExcludes);
  const includes = m.pathIncludes.length > 0 ? m.pathIncludes : ['/*'];
  for (const entry of includes)
    for (const path0 of [
      entry.endsWith('*') ? entry.slice(0, -1).replaceAll('*', 'x') : entry.replaceAll('*', 'x'),
      entry.replaceAll('*', 'x'),
    ]) {
      const path = path0.startsWith('/') ? path0 : `/${path0}`;
      if (PRINTABLE_PATH.test(path) && filter.matches(path)) return path;
    }
  return undefined;
}

const scopesOf = new WeakMap<CompiledDomain, ProbeScope[]>();

/**
 * The scopes of a domain worth probing, computed once per compiled version of it: every proxied name with `monitor`
 * on (not `*` names: no client-chosen host is probed), and each enabled monitor with a probe path on the first
 * PROBE_RULE.hostsPerMonitor hosts its host scope covers (exact entries the domain serves, else its proxied names);
 * PROBE_RULE.scopesPerDomain in all at most.
 */
export function watchScopes(d: CompiledDomain, table: Pick<DomainTable, 'lookup'>): ProbeScope[] {
  const cached = scopesOf.get(d);
  if (cached) return cached;
  const scopes: ProbeScope[] = [];
  const uptime = d.snapshot.settings?.uptime;
  const minRequests = uptime?.minRequestsPerMinute ?? 20;
  if (!NOT_SERVED.has(d.snapshot.state)) {
    const hosts: string[] = [];
    const monitored: string[] = [];
    for (const [name, r] of d.records) {
      if (!r.proxied || name.includes('*')) continue;
      const host = name === '@' ? d.name : `${name}.${d.name}`;
      hosts.push(host);
      if (r.monitor) monitored.push(host);
    }
    hosts.sort();
    for (const host of monitored.sort().slice(0, PROBE_RULE.scopesPerDomain))
      scopes.push({ key: `0 ${host}`, host, monitorId: 0, path: '/', minRequests });
    for (const m of uptime?.monitors ?? []) {
      const path = probePath(m);
      if (path === undefined) continue;
      const filter = new HostFilter(m.hostMatchType as HostMatchType, m.hostIncludes, m.hostExcludes);
      const candidates =
        m.hostMatchType === 'exact'
          ? m.hostIncludes.filter((h) => table.lookup(h)?.domain.name === d.name)
          : hosts.filter((h) => filter.matches(h));
      const paths = new PathFilter(m.pathMatchType as PathMatchType, m.pathIncludes, m.pathExcludes);
      for (const host of candidates.slice(0, PROBE_RULE.hostsPerMonitor))
        scopes.push({ key: `${m.id} ${host}`, host, monitorId: m.id, path, minRequests, paths });
    }
  }
  scopes.length = Math.min(scopes.length, PROBE_RULE.scopesPerDomain);
  scopesOf.set(d, scopes);
  return scopes;
}

export interface PlanOptions {
  minuteStart: number;
  /** Probes per scope when the budget allows. */
  perScope: number;
  /** Probes per chosen scope when it does not. */
  minPerScope: number;
  /** Probes in this minute at most. */
  budget: number;
  spreadMs: number;
  /** A number in [0, 1): the jitter of each scope's probe times (Math.random). */
  random?: () => number;
}

/**
 * The probes of one minute for `keys` (the thin scopes): each scope `perScope` probes, spread evenly over the first
 * `spreadMs` of the minute, shifted by a random fraction of their spacing; when that exceeds `budget`, as many per
 * scope as fit, and when fewer than `minPerScope` would fit, `minPerScope` each for as many scopes as the budget
 * covers, taken in turn from a start that moves every minute (every scope is probed within ⌈scopes / chosen⌉
 * minutes). Never more than `budget` probes, never more than `perScope` per scope. Sorted by time.
 */
export function planMinute(keys: readonly string[], o: PlanOptions): PlannedProbe[] {
  const random = o.random ?? Math.random;
  const n = keys.length;
  if (n === 0 || o.budget <= 0 || o.perScope <= 0) return [];
  let each = Math.min(o.perScope, Math.floor(o.budget / n));
  let chosen: readonly string[] = keys;
  if (each < Math.min(o.minPerScope, o.perScope)) {
    each = Math.min(o.minPerScope, o.perScope, o.budget);
    const count = Math.floor(o.budget / each);
    const start = (Math.floor(o.minuteStart / MINUTE_MS) * count) % n;
    chosen = Array.from({ length: count }, (_, i) => keys[(start + i) % n]!);
  }
  const spacing = o.spreadMs / each;
  const out: PlannedProbe[] = [];
  for (const key of chosen) {
    const shift = random() * spacing;
    for (let i = 0; i < each; i++) out.push({ key, at: o.minuteStart + Math.floor(i * spacing + shift) });
  }
  return out.sort((a, b) => a.at - b.at);
}

export interface ProberOptions {
  /** Worker processes of the node: each probes its share (rule and budget divided), judging traffic × workers. */
  workers?: number;
  now?: () => number;
  random?: () => number;
  /** The per-node rule (tests shorten nothing but may lower the budget). */
  rule?: Partial<ProbeRule>;
}

/** A shipped request-log record as far as the prober reads it. */
type LoggedRequest = OriginOutcome & { t: number; path: string };

export class UptimeProber {
  private readonly rule: ProbeRule;
  private readonly workers: number;
  private readonly now: () => number;
  private readonly random: () => number;
  /** Proxied requests to the origin per minute and scope key, as this process saw them (current and previous). */
  private readonly seen = new Map<number, Map<string, number>>();
  /** The minute `add` counted last, and its map (records of one batch mostly share a minute). */
  private lastMinute = -1;
  private lastSeen: Map<string, number> | undefined;
  /** Monitor scopes by host, for counting logged records (rebuilt each minute). */
  private monitorScopes = new Map<string, ProbeScope[]>();
  private wholeHost = new Set<string>();
  private scopes = new Map<string, ProbeScope>();
  private plannedMinute = -1;
  private queue: PlannedProbe[] = [];
  private next = 0;
  private inFlight = 0;
  private pending = new Map<string, ProbeEntry>();
  private timer: NodeJS.Timeout | undefined;
  /** Counters for metrics and tests. */
  readonly stats = { planned: 0, missed: 0, sent: 0, failed: 0, skippedBusy: 0, skippedInFlight: 0, dropped: 0 };

  constructor(
    private readonly table: DomainTable,
    private readonly pools: Pick<UpstreamPools, 'probe'>,
    opts: ProberOptions = {},
  ) {
    this.rule = { ...PROBE_RULE, ...opts.rule };
    this.workers = Math.max(1, opts.workers ?? 1);
    this.now = opts.now ?? Date.now;
    this.random = opts.random ?? Math.random;
  }

  /** Ticks once a second until stopped. */
  start(): this {
    this.timer = setInterval(() => this.tick(), 1000);
    this.timer.unref();
    return this;
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /**
   * What traffic the watched scopes saw, from what the shipper drained: whole-host counts from the per-minute origin
   * counts, monitor scopes from the logged records (one Map lookup per record, matched only on watched hosts).
   * Counts put back after a failed shipment are seen again on the next drain: the node then probes less, never more.
   */
  observe(minutes: readonly OriginMinute[], records: readonly LoggedRequest[]): void {
    for (const [minute, host, total] of minutes) if (this.wholeHost.has(host)) this.add(minute, `0 ${host}`, total);
    if (this.monitorScopes.size === 0) return;
    for (const r of records) {
      const scopes = this.monitorScopes.get(r.host);
      if (!scopes || originOutcome(r) === undefined) continue;
      for (const s of scopes) if (s.paths!.matches(r.path)) this.add(r.t - (r.t % MINUTE_MS), s.key, 1);
    }
  }

  private add(minute: number, key: string, n: number): void {
    let m = minute === this.lastMinute ? this.lastSeen : this.seen.get(minute);
    if (!m) {
      if (minute < this.plannedMinute - MINUTE_MS) return;
      this.seen.set(minute, (m = new Map()));
    }
    this.lastMinute = minute;
    this.lastSeen = m;
    m.set(key, (m.get(key) ?? 0) + n);
  }

  /** Whether `scope` is thin in `minute` as far as this process can tell (its share × workers). */
  private thin(scope: ProbeScope, minute: number): boolean {
    return (this.seen.get(minute)?.get(scope.key) ?? 0) * this.workers < scope.minRequests;
  }

  /** Plans a new minute when one began, then sends the probes that are due. */
  tick(now = this.now()): void {
    const minute = now - (now % MINUTE_MS);
    if (minute !== this.plannedMinute) this.plan(minute);
    while (this.next < this.queue.length && this.queue[this.next]!.at <= now) {
      const p = this.queue[this.next++]!;
      const scope = this.scopes.get(p.key);
      if (!scope) continue;
      // Due more than 2 s ago (the process started mid-minute, or its loop stalled): missed, never sent in a burst.
      if (p.at < now - 2000) {
        this.stats.missed++;
        continue;
      }
      if (!this.thin(scope, minute)) {
        this.stats.skippedBusy++;
        continue;
      }
      if (this.inFlight >= this.rule.maxInFlight) {
        this.stats.skippedInFlight++;
        continue;
      }
      this.send(scope, minute);
    }
  }

  private plan(minute: number): void {
    this.plannedMinute = minute;
    for (const m of this.seen.keys()) if (m < minute - MINUTE_MS) this.seen.delete(m);
    this.lastMinute = -1;
    this.lastSeen = undefined;
    const scopes = new Map<string, ProbeScope>();
    const monitorScopes = new Map<string, ProbeScope[]>();
    const wholeHost = new Set<string>();
    for (const d of this.table.all())
      for (const s of watchScopes(d, this.table)) {
        scopes.set(s.key, s);
        if (s.monitorId === 0) wholeHost.add(s.host);
        else monitorScopes.set(s.host, [...(monitorScopes.get(s.host) ?? []), s]);
      }
    this.scopes = scopes;
    this.monitorScopes = monitorScopes;
    this.wholeHost = wholeHost;
    // Thin: the previous minute's traffic (as this process saw it) was under the domain's threshold.
    const thin = [...scopes.values()].filter((s) => this.thin(s, minute - MINUTE_MS)).map((s) => s.key);
    thin.sort();
    this.queue = planMinute(thin, {
      minuteStart: minute,
      perScope: Math.max(1, Math.round(this.rule.perScopePerMinute / this.workers)),
      minPerScope: Math.max(1, Math.ceil(this.rule.minPerScope / this.workers)),
      budget: Math.floor(this.rule.nodeBudgetPerMinute / this.workers),
      spreadMs: this.rule.spreadMs,
      random: this.random,
    });
    this.next = 0;
    this.stats.planned += this.queue.length;
  }

  private send(scope: ProbeScope, minute: number): void {
    const match = this.table.lookup(scope.host);
    if (!match) return;
    const target = recordOrigin(match.record, scope.host);
    const timeoutMs = Math.min(this.rule.timeoutMs, target.timeoutSec * 1000);
    const h2 = offersH2(match.domain.snapshot.settings?.originProtocol);
    this.inFlight++;
    this.stats.sent++;
    this.pools
      .probe(target, scope.path, this.rule.userAgent, timeoutMs, h2)
      .then(
        (status) => status >= 500,
        () => true,
      )
      .then((failed) => {
        this.inFlight--;
        if (failed) this.stats.failed++;
        this.count([minute, scope.host, scope.monitorId, 1, failed ? 1 : 0]);
      });
  }

  private count([minute, host, monitorId, n, errors]: ProbeEntry): void {
    const key = `${minute} ${monitorId} ${host}`;
    const e = this.pending.get(key);
    if (e) {
      e[3] += n;
      e[4] += errors;
    } else if (this.pending.size >= MAX_PENDING_ENTRIES) this.stats.dropped += n;
    else this.pending.set(key, [minute, host, monitorId, n, errors]);
  }

  /** Takes every probe outcome counted so far (shipped with the request-log batch). */
  drain(): ProbeEntry[] {
    const out = [...this.pending.values()];
    this.pending.clear();
    return out;
  }

  /** Puts outcomes back after a failed shipment. */
  requeue(entries: readonly ProbeEntry[]): void {
    for (const e of entries) this.count(e);
  }

  /** Probes sent and not yet answered (tests). */
  get probing(): number {
    return this.inFlight;
  }
}
