// Uptime detection at the edge (issue 14): per minute and hostname, the requests sent to the origin and how many of
// them ended in an origin error (5xx from the origin, or the edge's 502/504/526 when it could not get an answer).
// One Map lookup per proxied request; shipped with the request-log batches and summed over nodes by the control plane.

/** [minute start (unix ms), hostname, requests to the origin, origin errors] */
export type OriginMinute = [number, string, number, number];

/** Hostnames counted per minute at most (a `*` record lets clients invent hosts); beyond, requests are not counted. */
export const MAX_ORIGIN_MINUTE_HOSTS = 20_000;

export interface OriginOutcome {
  host: string;
  status: number;
  /** ms the origin took to answer; -1 when no origin answered (cache hit, rule answer, or origin failure). */
  upstreamMs: number;
}

/** The request went to the origin, and whether it came back as an origin error. */
export function originOutcome(ctx: OriginOutcome): 'ok' | 'error' | undefined {
  if (ctx.upstreamMs >= 0) return ctx.status >= 500 ? 'error' : 'ok';
  // No origin answer: the edge's own 502 (unreachable, refused), 504 (timeout) or 526 (certificate).
  return ctx.status === 502 || ctx.status === 504 || ctx.status === 526 ? 'error' : undefined;
}

export class OriginMinuteCounts {
  private minutes = new Map<number, Map<string, OriginMinute>>();
  private currentMinute = -1;
  private current: Map<string, OriginMinute> | undefined;
  private hosts = 0;
  /** Requests not counted because MAX hostnames were already counted. */
  dropped = 0;

  constructor(readonly max = MAX_ORIGIN_MINUTE_HOSTS) {}

  add(ctx: OriginOutcome, now = Date.now()): void {
    const outcome = originOutcome(ctx);
    if (outcome === undefined) return;
    const minute = now - (now % 60_000);
    if (minute !== this.currentMinute) {
      this.currentMinute = minute;
      this.current = this.minutes.get(minute);
      if (!this.current) this.minutes.set(minute, (this.current = new Map()));
    }
    this.count(this.current!, minute, ctx.host, 1, outcome === 'error' ? 1 : 0);
  }

  private count(map: Map<string, OriginMinute>, minute: number, host: string, total: number, errors: number): void {
    let entry = map.get(host);
    if (!entry) {
      if (this.hosts >= this.max) {
        this.dropped += total;
        return;
      }
      this.hosts++;
      entry = [minute, host, 0, 0];
      map.set(host, entry);
    }
    entry[2] += total;
    entry[3] += errors;
  }

  /** Takes every count so far. */
  drain(): OriginMinute[] {
    const out: OriginMinute[] = [];
    for (const m of this.minutes.values()) for (const e of m.values()) out.push(e);
    this.minutes.clear();
    this.currentMinute = -1;
    this.current = undefined;
    this.hosts = 0;
    return out;
  }

  /** Puts counts back after a failed shipment (added to what was counted since). */
  requeue(entries: OriginMinute[]): void {
    for (const [minute, host, total, errors] of entries) {
      let map = this.minutes.get(minute);
      if (!map) this.minutes.set(minute, (map = new Map()));
      this.count(map, minute, host, total, errors);
    }
    this.currentMinute = -1;
  }
}
