// Generated request logs for the analytics tests: a deterministic generator and the record as an edge node ships it
// (POST /internal/request-logs).
import assert from 'node:assert/strict';
import { eq } from 'drizzle-orm';
import { pack } from 'msgpackr';
import { ensureNodeToken } from '@platform/shared/node-token';
import type { TestControlPlane } from '../../../../test/helpers/control-plane.js';
import { domains } from '../../db/schema.js';
import type { ShippedRecord } from '../../internal/request-logs.js';

/** A deterministic generator: the same log on every run. */
export function lcg(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}
export const pick = <T>(r: () => number, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)];

/** One shipped record (the fields the tests set). */
export type Rec = Omit<ShippedRecord, 'waf' | 'fp' | 'bot' | 'botClass'>;

/** A record as the tests ship it, with what the edge's rules would have added. */
export interface Shipped extends Rec {
  node: string;
  /** Fingerprint, when a fingerprint rule looked. */
  fp?: string;
  /** Bot score and class, when a bot_route rule looked. */
  bot?: number;
  botClass?: string;
  /** WAF findings: [edge rule id, managed rule id, phase, target, data, action]. */
  waf?: [number, string, number, string, string, string][];
}

/** Per column of the top-N reads (GET .../analytics/top), its value in a shipped record. */
export const COLUMN_OF: Record<string, (x: Shipped) => string | number> = {
  host: (x) => x.host,
  path: (x) => x.path,
  method: (x) => x.method,
  status: (x) => x.status,
  cache_status: (x) => x.cache,
  node: (x) => x.node,
  client_ip: (x) => x.peer,
  bot_score: (x) => x.bot ?? 0,
  bot_class: (x) => x.botClass ?? '',
};

/** Ships records as edge node `node` would (POST /internal/request-logs, msgpack, the node token); asserts the 200. */
export function shipper(cp: TestControlPlane) {
  const token = ensureNodeToken(cp.config.dataDir, (cp.config as { nodeToken?: string }).nodeToken);
  return async (node: string, records: Rec[]) => {
    const res = await cp.app.inject({
      method: 'POST',
      url: '/internal/request-logs',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/x-msgpack' },
      payload: pack({ node, records }),
    });
    assert.equal(res.statusCode, 200, res.body);
  };
}

/** A domain's id by its name. */
export async function domainIdOf(cp: TestControlPlane, name: string): Promise<number> {
  return (await cp.database.db.select().from(domains).where(eq(domains.name, name)))[0].id;
}

/** The totals of a domain summary (GET .../analytics/summary) of these records, computed again. */
export function expectedTotals(rows: Rec[]) {
  const sum = (xs: Rec[]) => xs.reduce((a, x) => a + x.bytes, 0);
  const cached = rows.filter((x) => x.cache === 'HIT' || x.cache === 'STALE');
  const origin = rows.filter((x) => x.upstreamMs >= 0);
  return {
    requests: rows.length,
    bytes: sum(rows),
    visitors: new Set(rows.map((x) => x.peer)).size,
    cached_requests: cached.length,
    cached_bytes: sum(cached),
    origin_requests: origin.length,
    origin_bytes: sum(origin),
    errors_4xx: rows.filter((x) => x.status >= 400 && x.status < 500).length,
    errors_5xx: rows.filter((x) => x.status >= 500).length,
  };
}
