// Cache routes: DELETE /domains/{domain}/cache/ (purge the whole cache through a new purge generation in the config
// log), and the internal endpoint where edge nodes ship request logs.
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { sql } from 'drizzle-orm';
import { loadDomain } from '../../auth/domain-access.js';
import { changeDomain } from '../../config-log/index.js';
import { effectiveFeatures, requireFeature } from '../../plans/entitlements.js';
import { errorResponses, MessageBody } from '../../openapi/schemas.js';
import { DomainParams } from '../domains/schemas.js';
import { cachePurgeRequests } from '../../db/schema.js';
import { ApiError } from '../../errors.js';

const PurgeBody = Type.Object(
  {
    urls: Type.Array(Type.String({ minLength: 1, maxLength: 2048 }), {
      minItems: 1,
      maxItems: 100,
      description: 'URLs (https://www.example.org/static/) or host/path prefixes (www.example.org/a.css)',
    }),
  },
  { title: 'CachePurgeSelected', additionalProperties: false },
);
const PurgeResult = Type.Object(
  { message: Type.String(), prefixes: Type.Array(Type.String()) },
  { title: 'CachePurgeSelectedResult' },
);

/** host + path prefixes (the edge cache key's start) from the given URLs; 400 naming every entry outside the domain. */
export function purgePrefixes(domain: string, urls: readonly string[]): string[] {
  const problems: string[] = [];
  const out = urls.map((raw, i) => {
    let u = raw.trim().replace(/^https?:\/\//i, '');
    if (u.endsWith('*')) u = u.slice(0, -1);
    const slash = u.indexOf('/');
    const host = (slash < 0 ? u : u.slice(0, slash)).toLowerCase().replace(/:\d+$/, '').replace(/\.$/, '');
    const path = slash < 0 ? '/' : u.slice(slash);
    if (host !== domain && !host.endsWith(`.${domain}`)) problems.push(`urls[${i}]: ${raw} is not inside ${domain}`);
    return `${host}${path}`;
  });
  if (problems.length > 0) throw new ApiError('CP_ERR_INVALID_INPUT', problems.join('; '));
  return [...new Set(out)];
}

export default async function cacheRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  app.delete(
    '/domains/:domain/cache/',
    {
      schema: {
        summary: 'Purge the whole cache of the domain',
        tags: ['cache'],
        params: DomainParams,
        description:
          "Every edge node drops the domain's cached objects when it applies the config entry this call appends.",
        response: { 200: MessageBody, ...errorResponses(403, 404) },
      },
    },
    async (request) => {
      const { domain } = await loadDomain(request, request.params.domain, 'cache.purge');
      requireFeature(await effectiveFeatures(app.db, domain.id), 'cache_purge_enabled');
      await changeDomain(app, domain.id, async (tx) => {
        await tx.execute(sql`INSERT INTO cache_purges (domain_id, generation, purged_at) VALUES (${domain.id}, 1, now())
        ON CONFLICT (domain_id) DO UPDATE SET generation = cache_purges.generation + 1, purged_at = now()`);
        return { value: undefined, change: { domain: true } };
      });
      return { message: 'cache purged' };
    },
  );

  app.post(
    '/domains/:domain/cache/purge',
    {
      schema: {
        summary: 'Purge selected cache entries',
        tags: ['cache'],
        params: DomainParams,
        body: PurgeBody,
        description:
          'Each entry is a URL or host/path of this domain; cached objects whose host and path start with it are dropped on every edge node (a trailing `*` is allowed and means the same).',
        response: { 200: PurgeResult, ...errorResponses(400, 403, 404) },
      },
    },
    async (request) => {
      const { domain } = await loadDomain(request, request.params.domain, 'cache.purge');
      requireFeature(await effectiveFeatures(app.db, domain.id), 'cache_purge_enabled');
      const prefixes = purgePrefixes(domain.name, request.body.urls);
      await changeDomain(app, domain.id, async (tx) => {
        await tx.insert(cachePurgeRequests).values({ domainId: domain.id, prefixes });
        return { value: undefined, change: { domain: true } };
      });
      return { message: 'cache entries purged', prefixes };
    },
  );
}
