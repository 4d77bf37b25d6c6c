// origin_pool: weighted (or ordered failover) choice among origins, with passive and active health checks.
import { request, type Dispatcher } from 'undici';
import type { RuleBody } from '@platform/shared/match';
import type { OriginTarget } from '../proxy/origin.js';

export interface PoolOrigin {
  address: string;
  port: number;
  scheme: 'http' | 'https';
  weight: number;
  backup: boolean;
  hostHeader: string;
}
export interface HealthCheck {
  path: string;
  intervalMs: number;
  timeoutMs: number;
  unhealthy: number;
  healthy: number;
}
export interface OriginPoolAction {
  ruleId: number;
  failover: boolean;
  origins: PoolOrigin[];
  check: HealthCheck | null;
}

interface Health {
  healthy: boolean;
  fails: number;
  oks: number;
  nextCheckAt: number;
  probing: boolean;
  /** The sweep period it was last asked about in (sweepHealth). */
  seen: number;
}
/**
 * Health by rule id and origin, kept across recompiles of the rule set. Entries of deleted rules, of origins a rule no
 * longer lists and of dropped domains are forgotten by sweepHealth, so editing pools over and over does not grow it.
 */
const HEALTH = new Map<string, Health>();
let sweepPeriod = 0;
/** A passively failed origin stays out this long when there is no active check to bring it back. */
const PASSIVE_DOWN_MS = 10_000;

function key(a: OriginPoolAction, i: number): string {
  const o = a.origins[i];
  return `${a.ruleId}|${o.scheme}|${o.address}|${o.port}`;
}

function health(a: OriginPoolAction, i: number): Health {
  const k = key(a, i);
  let h = HEALTH.get(k);
  if (!h) {
    h = { healthy: true, fails: 0, oks: 0, nextCheckAt: 0, probing: false, seen: sweepPeriod };
    HEALTH.set(k, h);
  } else h.seen = sweepPeriod;
  return h;
}

/**
 * Forgets the health of origins nothing asked about since the previous sweep (the node sweeps every HEALTH_SWEEP_MS).
 * A served pool with an active check is asked about every second; one without is forgotten only after a whole period
 * without requests, which loses nothing (a passive failure keeps an origin out for PASSIVE_DOWN_MS only).
 */
export function sweepHealth(): number {
  let forgotten = 0;
  for (const [k, h] of HEALTH)
    if (h.seen < sweepPeriod) {
      HEALTH.delete(k);
      forgotten++;
    }
  sweepPeriod++;
  return forgotten;
}
export const HEALTH_SWEEP_MS = 10 * 60_000;

/** Origins whose health is kept for rule `ruleId` (tests). */
export function healthTracked(ruleId: number): number {
  let n = 0;
  for (const k of HEALTH.keys()) if (k.startsWith(`${ruleId}|`)) n++;
  return n;
}

export function compileOriginPool(f: RuleBody, rule: { id: number }): OriginPoolAction {
  const origins = ((f.origins as Record<string, unknown>[]) ?? []).map((o): PoolOrigin => {
    const scheme = o.scheme === 'https' ? 'https' : 'http';
    return {
      address: String(o.address),
      port: Number(o.port ?? (scheme === 'https' ? 443 : 80)),
      scheme,
      weight: Number(o.weight ?? 1),
      backup: o.backup === true,
      hostHeader: String(o.host_header ?? ''),
    };
  });
  const hc = f.health_check as Record<string, unknown> | undefined;
  const check =
    hc && hc.enabled !== false
      ? {
          path: String(hc.path ?? '/'),
          intervalMs: Number(hc.interval_s ?? 10) * 1000,
          timeoutMs: Number(hc.timeout_s ?? 5) * 1000,
          unhealthy: Number(hc.unhealthy_threshold ?? 2),
          healthy: Number(hc.healthy_threshold ?? 2),
        }
      : null;
  return { ruleId: rule.id, failover: f.method === 'failover', origins, check };
}

function isUp(a: OriginPoolAction, i: number, now: number): boolean {
  const h = health(a, i);
  if (h.healthy) return true;
  // Without active checks a passively failed origin is retried after PASSIVE_DOWN_MS.
  return a.check === null && now >= h.nextCheckAt;
}

/** Index of the origin to use, skipping `tried`; -1 when every origin was tried. */
export function pickOrigin(a: OriginPoolAction, tried: ReadonlySet<number> | null, rand = Math.random): number {
  const now = Date.now();
  for (const backup of [false, true]) {
    let total = 0;
    const up: number[] = [];
    a.origins.forEach((o, i) => {
      if (o.backup !== backup || (tried && tried.has(i)) || !isUp(a, i, now)) return;
      up.push(i);
      total += o.weight;
    });
    if (up.length === 0) continue;
    if (a.failover || total === 0) return up[0];
    let x = rand() * total;
    for (const i of up) {
      x -= a.origins[i].weight;
      if (x < 0) return i;
    }
    return up[up.length - 1];
  }
  // Every origin is down: try the untried primaries anyway rather than fail outright.
  const rest = a.origins.findIndex((o, i) => !o.backup && !(tried && tried.has(i)));
  return rest;
}

/** Passive health: a connection failure counts against the origin, a response for it. */
export function markOrigin(a: OriginPoolAction, i: number, ok: boolean): void {
  const h = health(a, i);
  if (ok) {
    h.fails = 0;
    if (a.check === null) h.healthy = true;
    return;
  }
  h.fails++;
  h.oks = 0;
  if (h.fails >= (a.check?.unhealthy ?? 1)) {
    h.healthy = false;
    h.nextCheckAt = Date.now() + (a.check ? 0 : PASSIVE_DOWN_MS);
  }
}

export function poolTarget(a: OriginPoolAction, i: number, requestHost: string, timeoutSec: number): OriginTarget {
  const o = a.origins[i];
  return { scheme: o.scheme, address: o.address, port: o.port, hostHeader: o.hostHeader || requestHost, timeoutSec };
}

/**
 * Runs due active health checks of the given pools (called about once a second by the node). `probes` connects only
 * where origins may be (the node's guarded agent): a refused address counts as a failed check.
 */
export function runHealthChecks(
  pools: Iterable<OriginPoolAction>,
  requestHostOf: (a: OriginPoolAction) => string,
  probes: Dispatcher,
): void {
  const now = Date.now();
  for (const a of pools) {
    if (!a.check) continue;
    const check = a.check;
    a.origins.forEach((o, i) => {
      const h = health(a, i);
      if (h.probing || now < h.nextCheckAt) return;
      h.probing = true;
      h.nextCheckAt = now + check.intervalMs;
      const host = o.address.includes(':') ? `[${o.address}]` : o.address;
      request(`${o.scheme}://${host}:${o.port}${check.path}`, {
        method: 'GET',
        dispatcher: probes,
        headers: { host: o.hostHeader || requestHostOf(a), 'user-agent': 'edge-health-check/1' },
        headersTimeout: check.timeoutMs,
        bodyTimeout: check.timeoutMs,
      })
        .then(
          async (r) => {
            await r.body.dump();
            return r.statusCode < 400;
          },
          () => false,
        )
        .then((ok) => {
          h.probing = false;
          if (ok) {
            h.fails = 0;
            if (++h.oks >= check.healthy) h.healthy = true;
          } else {
            h.oks = 0;
            if (++h.fails >= check.unhealthy) h.healthy = false;
          }
        });
    });
  }
}
