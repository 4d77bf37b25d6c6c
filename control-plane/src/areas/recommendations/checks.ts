// The recommendation checks: each computed from the domains' stored state, for any number of domains in a fixed
// number of statements (one per check; the cache check also asks the analytics store once per domain that has cache
// rules old enough to judge). Nothing about a verdict is stored; only dismissals are (store.ts).
import type { FastifyInstance } from 'fastify';
import { sql } from 'drizzle-orm';
import type { Db } from '../../db/index.js';
import { rowsOf } from '../../db/migrate.js';
import type { Permission } from '../../auth/permissions.js';
import { sslSummaries } from '../ssl/service.js';

export const CHECK_IDS = [
  'https_certificate',
  'dnssec',
  'origin_errors',
  'spf_record',
  'dmarc_record',
  'cache_rules_unused',
  'waf_off',
] as const;
export type CheckId = (typeof CHECK_IDS)[number];

export type Verdict =
  | { status: 'passed' }
  | { status: 'outstanding'; details: Record<string, unknown> }
  | { status: 'not_applicable' | 'unavailable'; reason: string };

export interface CheckInfo {
  id: CheckId;
  title: string;
  description: string;
  severity: 'high' | 'medium' | 'low';
  /** The one-click fix, when one is safe; the permission it needs on the domain. */
  fix: { description: string; permission: Permission } | null;
}

/** The DMARC record the one-click fix publishes: monitoring only (p=none), no report address. */
export const DMARC_FIX = { name: '_dmarc', type: 'TXT', destination: 'v=DMARC1; p=none' } as const;

export const CHECKS: Readonly<Record<CheckId, CheckInfo>> = Object.freeze({
  https_certificate: {
    id: 'https_certificate',
    title: 'Serve HTTPS with a certificate',
    description:
      'The domain has proxied records but no valid certificate is served for it, so browsers cannot reach it over ' +
      'HTTPS. Certificates are issued automatically once the domain is active; see GET /domains/{domain}/ssl/ for ' +
      'why issuance has not succeeded, or upload one.',
    severity: 'high',
    fix: null,
  },
  dnssec: {
    id: 'dnssec',
    title: 'Sign the zone with DNSSEC',
    description:
      'DNSSEC lets resolvers verify that answers for the domain were not forged on the way. Turn it on with PUT ' +
      '/domains/{domain}/dnssec and give your registrar the DS record it shows.',
    severity: 'medium',
    fix: null,
  },
  origin_errors: {
    id: 'origin_errors',
    title: 'Fix origins that answer errors',
    description:
      'A proxied host name has an open uptime incident, or its origin answered at least ' +
      'a fifth of the last hour’s requests with an error (5xx or no answer). Check the origin server or the ' +
      "record's destination.",
    severity: 'high',
    fix: null,
  },
  spf_record: {
    id: 'spf_record',
    title: 'Publish one SPF record',
    description:
      'Without an SPF record (a TXT record at the apex starting with v=spf1) receivers cannot tell which servers ' +
      'may send mail for the domain; with more than one, receivers treat SPF as broken. The right record depends ' +
      'on who sends your mail (for a domain that sends none: v=spf1 -all), so there is no one-click fix.',
    severity: 'medium',
    fix: null,
  },
  dmarc_record: {
    id: 'dmarc_record',
    title: 'Publish a DMARC record',
    description:
      'Without a DMARC record (TXT at _dmarc starting with v=DMARC1) receivers have no policy for mail that fails ' +
      'SPF and DKIM checks, and spoofed mail in the domain’s name is easier to deliver.',
    severity: 'medium',
    fix: {
      description: `Publishes the TXT record ${DMARC_FIX.name} "${DMARC_FIX.destination}" (monitoring only: no mail is rejected)`,
      permission: 'records.edit',
    },
  },
  cache_rules_unused: {
    id: 'cache_rules_unused',
    title: 'Review cache rules that never match',
    description:
      'Enabled cache rules older than a day that matched no request in the last 7 days: their scope (host, path) ' +
      'may not be what was meant, so nothing they were written for is cached.',
    severity: 'low',
    fix: null,
  },
  waf_off: {
    id: 'waf_off',
    title: 'Turn the WAF on',
    description:
      'No enabled WAF rule enforces on this domain (the default protection was deleted, disabled or set to dry run), ' +
      'so injection and scanner traffic reaches the origin.',
    severity: 'high',
    fix: {
      description: 'Restores the WAF default protection rule (paranoia 1, enforced, zone-wide)',
      permission: 'rules.edit',
    },
  },
} satisfies Record<CheckId, CheckInfo>);

export function isCheckId(value: string): value is CheckId {
  return (CHECK_IDS as readonly string[]).includes(value);
}

/** A domain as the checks read it. */
export interface CheckedDomain {
  id: number;
  name: string;
  dnsMode: 'managed' | 'external';
  state: string;
}

/** Origin errors: the window, and a host's share of errors (in percent) over enough requests that flags it. */
export const ORIGIN_WINDOW_MINUTES = 60;
export const ORIGIN_ERROR_PCT = 20;
export const ORIGIN_MIN_REQUESTS = 20;
/** Cache rules: younger ones are not judged; hits are looked for over this window. */
export const CACHE_RULE_MIN_AGE_MS = 86_400_000;
export const CACHE_HITS_WINDOW_MS = 7 * 86_400_000;
/** Names listed in a verdict's details at most (the count says how many there are). */
const LISTED = 10;

function idArray(domains: readonly CheckedDomain[]) {
  return `{${domains.map((d) => d.id).join(',')}}`;
}

/** Every check of every domain given: domain id → check → verdict. */
export async function evaluateChecks(
  app: FastifyInstance,
  domains: readonly CheckedDomain[],
  now = Date.now(),
): Promise<Map<number, Map<CheckId, Verdict>>> {
  const out = new Map<number, Map<CheckId, Verdict>>(domains.map((d) => [d.id, new Map()]));
  if (domains.length === 0) return out;
  const db = app.db;
  const ids = idArray(domains);
  const records = new Map(
    rowsOf<{ domain_id: number; proxied: boolean; spf: number; dmarc: boolean }>(
      await db.execute(sql`
        SELECT domain_id, bool_or(proxied) AS proxied,
          count(*) FILTER (WHERE type = 'TXT' AND name = '@' AND destination ~* '^v=spf1( |$)')::int AS spf,
          bool_or(type = 'TXT' AND name = '_dmarc' AND destination ~ '^v=DMARC1[ \t]*(;|$)') AS dmarc
        FROM dns_records WHERE domain_id = ANY(${ids}::int[]) GROUP BY domain_id`),
    ).map((r) => [r.domain_id, r]),
  );
  const ssl = await sslSummaries(
    db,
    domains.map((d) => d.id),
  );
  const origins = await originErrors(db, ids, now);
  const waf = new Map(
    rowsOf<{ domain_id: number; on: boolean }>(
      await db.execute(sql`
        SELECT domain_id, bool_or(enabled AND coalesce(filters ->> 'action_mode', 'enforce') = 'enforce') AS on
        FROM rules WHERE type = 'waf' AND domain_id = ANY(${ids}::int[]) GROUP BY domain_id`),
    ).map((r) => [r.domain_id, r.on]),
  );
  const cache = await unusedCacheRules(app, ids, now);
  const signed = new Set(
    rowsOf<{ domain_id: number }>(
      await db.execute(sql`SELECT domain_id FROM domain_dnssec WHERE enabled AND domain_id = ANY(${ids}::int[])`),
    ).map((r) => r.domain_id),
  );

  for (const d of domains) {
    const v = out.get(d.id)!;
    const rec = records.get(d.id);
    const proxied = rec?.proxied ?? false;
    const noProxied = { status: 'not_applicable', reason: 'the domain has no proxied records' } as const;
    const externalDns = {
      status: 'not_applicable',
      reason: 'the zone is served by another DNS provider (external DNS)',
    } as const;

    const summary = ssl.get(d.id);
    v.set(
      'https_certificate',
      !proxied
        ? noProxied
        : summary?.status === 'active'
          ? { status: 'passed' }
          : { status: 'outstanding', details: { ssl_status: summary?.status ?? 'missing', domain_state: d.state } },
    );
    v.set(
      'dnssec',
      d.dnsMode === 'external'
        ? externalDns
        : signed.has(d.id)
          ? { status: 'passed' }
          : { status: 'outstanding', details: { dnssec_status: 'disabled', enable: 'PUT /domains/{domain}/dnssec' } },
    );
    const failing = origins.get(d.id) ?? [];
    v.set(
      'origin_errors',
      !proxied
        ? noProxied
        : failing.length === 0
          ? { status: 'passed' }
          : {
              status: 'outstanding',
              details: {
                window_minutes: ORIGIN_WINDOW_MINUTES,
                hosts: failing.slice(0, LISTED),
                count: failing.length,
              },
            },
    );
    const spf = rec?.spf ?? 0;
    v.set(
      'spf_record',
      d.dnsMode === 'external'
        ? externalDns
        : spf === 1
          ? { status: 'passed' }
          : { status: 'outstanding', details: { spf_records: spf } },
    );
    v.set(
      'dmarc_record',
      d.dnsMode === 'external'
        ? externalDns
        : rec?.dmarc
          ? { status: 'passed' }
          : { status: 'outstanding', details: { name: `_dmarc.${d.name}` } },
    );
    const unused = cache.get(d.id);
    v.set(
      'cache_rules_unused',
      !proxied
        ? noProxied
        : unused === 'unavailable'
          ? { status: 'unavailable', reason: 'the analytics store cannot be read' }
          : !unused || unused.length === 0
            ? { status: 'passed' }
            : {
                status: 'outstanding',
                details: { rule_ids: unused.slice(0, LISTED), count: unused.length, window_days: 7 },
              },
    );
    v.set(
      'waf_off',
      !proxied ? noProxied : waf.get(d.id) ? { status: 'passed' } : { status: 'outstanding', details: {} },
    );
  }
  return out;
}

interface FailingHost {
  hostname: string;
  requests: number;
  errors: number;
  error_pct: number;
  open_incident: boolean;
}

/**
 * Proxied hosts whose origin fails: an open uptime incident, or in the whole-host counts of the last hour (requests
 * and the edge's probes) at least ORIGIN_ERROR_PCT % errors over at least ORIGIN_MIN_REQUESTS.
 */
async function originErrors(db: Db, ids: string, now: number): Promise<Map<number, FailingHost[]>> {
  const since = new Date(now - ORIGIN_WINDOW_MINUTES * 60_000);
  const rows = rowsOf<{ domain_id: number; hostname: string; requests: number; errors: number; open: boolean }>(
    await db.execute(sql`
      WITH counts AS (
        SELECT domain_id, hostname, sum(total + probes)::int AS requests, sum(errors + probe_errors)::int AS errors
        FROM uptime_minute_counts
        WHERE domain_id = ANY(${ids}::int[]) AND monitor_id = 0 AND minute >= ${since}
        GROUP BY domain_id, hostname),
      open AS (
        SELECT DISTINCT domain_id, hostname FROM uptime_incidents
        WHERE domain_id = ANY(${ids}::int[]) AND state = 'open')
      SELECT coalesce(c.domain_id, o.domain_id) AS domain_id, coalesce(c.hostname, o.hostname) AS hostname,
        coalesce(c.requests, 0) AS requests, coalesce(c.errors, 0) AS errors, o.hostname IS NOT NULL AS open
      FROM counts c FULL JOIN open o ON o.domain_id = c.domain_id AND o.hostname = c.hostname
      WHERE o.hostname IS NOT NULL
        OR (c.requests >= ${ORIGIN_MIN_REQUESTS} AND c.errors * 100 >= ${ORIGIN_ERROR_PCT} * c.requests)
      ORDER BY 1, 2`),
  );
  const out = new Map<number, FailingHost[]>();
  for (const r of rows) {
    const list = out.get(r.domain_id) ?? [];
    list.push({
      hostname: r.hostname,
      requests: r.requests,
      errors: r.errors,
      error_pct: r.requests === 0 ? 0 : Math.round((r.errors * 1000) / r.requests) / 10,
      open_incident: r.open,
    });
    out.set(r.domain_id, list);
  }
  return out;
}

/**
 * Per domain, its enabled cache rules older than CACHE_RULE_MIN_AGE_MS that matched nothing in the last
 * CACHE_HITS_WINDOW_MS (the analytics store's rule hits); 'unavailable' when the store cannot answer.
 */
async function unusedCacheRules(
  app: FastifyInstance,
  ids: string,
  now: number,
): Promise<Map<number, number[] | 'unavailable'>> {
  const rules = rowsOf<{ domain_id: number; id: number }>(
    await app.db.execute(sql`
      SELECT domain_id, id FROM rules
      WHERE type = 'cache' AND enabled AND domain_id = ANY(${ids}::int[])
        AND created_at <= ${new Date(now - CACHE_RULE_MIN_AGE_MS)}
      ORDER BY domain_id, id`),
  );
  const byDomain = new Map<number, number[]>();
  for (const r of rules) byDomain.set(r.domain_id, [...(byDomain.get(r.domain_id) ?? []), r.id]);
  const out = new Map<number, number[] | 'unavailable'>();
  const range = { since: new Date(now - CACHE_HITS_WINDOW_MS), until: new Date(now), filter: {} };
  for (const [domainId, ruleIds] of byDomain) {
    try {
      const hits = await app.analytics.store.ruleHits(
        domainId,
        range,
        RULE_HITS_READ,
        app.config.analytics.queryTimeoutMs,
      );
      const hit = new Set(hits.filter((h) => h.hits > 0).map((h) => h.ruleId));
      out.set(
        domainId,
        ruleIds.filter((id) => !hit.has(id)),
      );
    } catch (err) {
      app.log.warn({ err, domainId }, 'recommendations: the analytics store could not be read');
      out.set(domainId, 'unavailable');
    }
  }
  return out;
}

/** Rules with hits read per domain: more than any plan lets a domain have of one type (max_rules_per_set). */
const RULE_HITS_READ = 2000;
