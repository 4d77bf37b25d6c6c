// ACME http-01 (issue 11): which names are validated through the edge instead of dns-01, and the /internal routes the
// certificate workflow publishes and withdraws key authorizations through. A published challenge is a row of
// acme_http_challenges carried in the domain's snapshot (acmeHttpChallenges, one config-log entry each way), which
// the edge answers at /.well-known/acme-challenge/<token> before any rule (edge-node/src/acme-http01.ts).
//
// When: a domain whose DNS is external and whose ssl_delegation CNAME is not in place (its last delegation check did
// not pass) cannot be validated by dns-01, so its proxied names are validated by http-01, one name per
// authorization, wildcards left out (RFC 8555 §7.1.3: a wildcard needs dns-01). Managed zones, and external zones
// with the delegation in place, keep dns-01 (wildcards included). See docs/decisions.md.
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { sql } from 'drizzle-orm';
import {
  ACME_TOKEN,
  MAX_ACME_HTTP_CHALLENGES,
  isKeyAuthorization,
  type AcmeHttpChallenge,
} from '@platform/shared/config';
import { rowsOf } from '../db/migrate.js';
import { ApiError, MESSAGES } from '../errors.js';
import { changeDomain } from '../config-log/change-domain.js';
import { parseDomainName } from '../areas/domains/domain-name.js';

/** Rows older than this are an order whose workflow died before withdrawing: dropped at the next publish. */
const STALE = '1 day';

const Params = Type.Object({ domain: Type.String({ maxLength: 300 }) });
const Challenges = Type.Object({
  challenges: Type.Array(
    Type.Object({
      hostname: Type.String({ minLength: 1, maxLength: 253 }),
      token: Type.String({ minLength: 16, maxLength: 128 }),
      key_authorization: Type.String({ minLength: 1, maxLength: 200 }),
    }),
    { minItems: 1, maxItems: MAX_ACME_HTTP_CHALLENGES },
  ),
});

function domainName(raw: string): string {
  const parsed = parseDomainName(raw);
  if (!parsed.ok) throw new ApiError('CP_ERR_NOT_FOUND', MESSAGES.domainNotFound);
  return parsed.name;
}

/** Checks each challenge (a name inside the domain, no wildcard; token and key authorization shapes): 400 otherwise. */
function checked(domain: string, list: ReadonlyArray<{ hostname: string; token: string; key_authorization: string }>) {
  return list.map((c): AcmeHttpChallenge => {
    const hostname = c.hostname.toLowerCase().replace(/\.$/, '');
    if (!(hostname === domain || hostname.endsWith(`.${domain}`)) || hostname.includes('*'))
      throw new ApiError('CP_ERR_INVALID_INPUT', `"${c.hostname}" is not a name inside ${domain}`);
    if (!ACME_TOKEN.test(c.token)) throw new ApiError('CP_ERR_INVALID_INPUT', 'invalid http-01 token');
    if (!isKeyAuthorization(c.token, c.key_authorization))
      throw new ApiError('CP_ERR_INVALID_INPUT', 'invalid http-01 key authorization');
    return { hostname, token: c.token, keyAuthorization: c.key_authorization };
  });
}

export default async function acmeHttp01Routes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  // Publishes key authorizations for the edge (kept ones are left as they are): one config-log entry.
  app.post(
    '/internal/domains/:domain/acme/http-challenges',
    { schema: { hide: true, params: Params, body: Challenges } },
    async (req) => {
      const name = domainName(req.params.domain);
      return changeDomain(app, { name }, async (tx, domain) => {
        if (domain.state === 'disabled' || domain.state === 'banned')
          throw new ApiError('CP_ERR_DOMAIN_DISABLED', `domain is ${domain.state}`);
        const list = checked(domain.name, req.body.challenges);
        await tx.execute(sql`DELETE FROM acme_http_challenges
          WHERE domain_id = ${domain.id} AND created_at < now() - ${STALE}::interval`);
        let published = 0;
        for (const c of list) {
          const res = await tx.execute(sql`
            INSERT INTO acme_http_challenges (domain_id, hostname, token, key_authorization)
            VALUES (${domain.id}, ${c.hostname}, ${c.token}, ${c.keyAuthorization})
            ON CONFLICT (domain_id, hostname, token) DO NOTHING RETURNING token`);
          published += rowsOf(res).length;
        }
        const [{ n }] = rowsOf<{ n: number | string }>(
          await tx.execute(sql`SELECT count(*) AS n FROM acme_http_challenges WHERE domain_id = ${domain.id}`),
        );
        if (Number(n) > MAX_ACME_HTTP_CHALLENGES)
          throw new ApiError(
            'CP_ERR_INVALID_INPUT',
            `at most ${MAX_ACME_HTTP_CHALLENGES} http-01 challenges per domain at a time`,
          );
        return { value: { published }, change: published > 0 ? { domain: true } : {} };
      });
    },
  );

  // Withdraws them (unknown ones are ignored): one config-log entry when anything was removed.
  app.post(
    '/internal/domains/:domain/acme/http-challenges/withdraw',
    { schema: { hide: true, params: Params, body: Challenges } },
    async (req) => {
      const name = domainName(req.params.domain);
      return changeDomain(app, { name }, async (tx, domain) => {
        let withdrawn = 0;
        for (const c of req.body.challenges) {
          const res = await tx.execute(sql`
            DELETE FROM acme_http_challenges WHERE domain_id = ${domain.id}
              AND hostname = ${c.hostname.toLowerCase().replace(/\.$/, '')} AND token = ${c.token} RETURNING token`);
          withdrawn += rowsOf(res).length;
        }
        return { value: { withdrawn }, change: withdrawn > 0 ? { domain: true } : {} };
      });
    },
  );
}
