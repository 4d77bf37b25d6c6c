// ACME http-01 data the plan, the sweep and the config log read (acme-http01.ts has the routes and the why).
import { sql, type SQL } from 'drizzle-orm';
import { MAX_ACME_HTTP_CHALLENGES } from '@platform/shared/config';
import type { Db, Tx } from '../db/index.js';
import { rowsOf } from '../db/migrate.js';

/** Names one certificate holds at most (Let's Encrypt's limit), as acme-plan's MAX_CERTIFICATE_NAMES. */
const MAX_NAMES = 100;

/**
 * SQL: true when the ssl_delegation CNAME of the domain whose id is `domainId` (a value or a column) was last seen in
 * place: its last delegation check passed, and not as a verification by the TXT token (which records ok with method
 * txt and says nothing of the CNAME).
 */
export function delegatedSql(domainId: SQL | number): SQL {
  return sql`coalesce((SELECT (c.result->>'ok')::boolean AND coalesce(c.result->>'method', '') <> 'txt'
    FROM domain_checks c WHERE c.domain_id = ${domainId} AND c.kind = 'delegation'), false)`;
}

/** True when the domain's ssl_delegation CNAME was last seen in place (delegatedSql). */
export async function delegationInPlace(db: Db | Tx, domainId: number): Promise<boolean> {
  const res = await db.execute(sql`SELECT ${delegatedSql(domainId)} AS ok`);
  return rowsOf<{ ok: boolean }>(res)[0]?.ok === true;
}

/** The names an http-01 certificate covers: the proxied names without wildcards, at most MAX_NAMES. */
export function http01Hostnames(proxied: readonly string[]): string[] {
  return [...new Set(proxied.filter((p) => !p.startsWith('*.')))].slice(0, MAX_NAMES);
}

/**
 * The names ordered by http-01 for a domain, or [] when its names go by dns-01: an external domain with no acme-dns
 * account and no ssl_delegation CNAME seen in place, which has proxied names other than wildcards. (With only
 * wildcard records the order stays on dns-01 through the CNAME, whose check says what to add.)
 */
export function http01Names(
  domain: { dnsMode: string; acmeDns: boolean; delegated: boolean },
  proxied: readonly string[],
): string[] {
  if (domain.dnsMode !== 'external' || domain.acmeDns || domain.delegated) return [];
  return http01Hostnames(proxied);
}

/** The domain's published challenges as the snapshot carries them (one subquery of readDomainConfig). */
export function snapshotAcmeHttpSql(domainId: number) {
  return sql`(SELECT coalesce(json_agg(json_build_object('hostname', hostname, 'token', token,
      'keyAuthorization', key_authorization) ORDER BY created_at, hostname, token), '[]'::json)
    FROM (SELECT * FROM acme_http_challenges WHERE domain_id = ${domainId}
          ORDER BY created_at DESC LIMIT ${MAX_ACME_HTTP_CHALLENGES}) c)`;
}
