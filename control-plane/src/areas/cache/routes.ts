// Cache routes: DELETE /domains/{domain}/cache/ (purge the whole cache through a new purge generation in the config
// log), POST purge and refresh of selected entries (selective purges in the config log), and the reads answered from
// the nodes' cache inventories (inventory.ts, reads.ts): totals, totals per node, entries, one entry's object.
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { Transform } from 'node:stream';
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
import { ensureNodeToken } from '@platform/shared/node-token';
import { browseEntries, entryId, findEntry, nodeTotals, parseEntryId, sumTotals } from './reads.js';
import { Nullable } from '../../openapi/schemas.js';

/** Largest object the control plane fetches from a node for a download. */
export const DOWNLOAD_MAX_BYTES = 64 * 1024 * 1024;
const NODE_TIMEOUT_MS = 15_000;

const Totals = Type.Object(
  {
    entries: Type.Integer({ description: 'Objects cached, summed over the nodes' }),
    bytes: Type.Integer({ description: 'Their body bytes' }),
    nodes: Type.Integer({ description: 'Nodes holding some of them' }),
    unlisted: Type.Integer({ description: "Entries the browse does not list (beyond the nodes' inventory bounds)" }),
    reported_at: Nullable(Type.String({ format: 'date-time', description: 'The latest inventory counted' })),
  },
  { title: 'CacheTotals' },
);
const NodeTotalsSchema = Type.Object(
  {
    node: Type.String(),
    entries: Type.Integer(),
    bytes: Type.Integer(),
    unlisted: Type.Integer(),
    reported_at: Type.String({ format: 'date-time' }),
  },
  { title: 'CacheNodeTotals' },
);
const EntrySchema = Type.Object(
  {
    id: Type.String({ description: 'Pass as `entry` to download the object' }),
    node: Type.String(),
    url: Type.String(),
    host: Type.String(),
    path: Type.String(),
    variant: Type.String({ description: "The request headers the stored variant answers, '' when it does not vary" }),
    status: Type.Integer(),
    size: Type.Integer({ description: 'Body bytes' }),
    content_type: Type.String(),
    stored_at: Type.String({ format: 'date-time' }),
    fresh_until: Type.String({ format: 'date-time' }),
    expires_at: Type.String({ format: 'date-time' }),
    fresh: Type.Boolean(),
    hits: Type.Integer({ description: 'Requests the node answered from it' }),
  },
  { title: 'CacheEntry' },
);
const BrowseQuery = Type.Object(
  {
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 100 })),
    cursor: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 6000,
        pattern: '^[A-Za-z0-9_-]+$',
        description: 'The `next_cursor` of the previous page',
      }),
    ),
    host: Type.Optional(Type.String({ minLength: 1, maxLength: 253, pattern: '^[A-Za-z0-9._-]+$' })),
    path_prefix: Type.Optional(Type.String({ minLength: 1, maxLength: 2048, pattern: '^/' })),
    content_type: Type.Optional(
      Type.String({ minLength: 1, maxLength: 128, description: 'Prefix of the content type: `image/`, `text/html`' }),
    ),
    node: Type.Optional(Type.String({ minLength: 1, maxLength: 128, pattern: '^[A-Za-z0-9._:-]+$' })),
  },
  { additionalProperties: false },
);
const DownloadQuery = Type.Object(
  {
    entry: Type.String({
      minLength: 1,
      maxLength: 6000,
      pattern: '^[A-Za-z0-9_-]+$',
      description: 'The `id` of a listed entry',
    }),
  },
  { additionalProperties: false },
);

/** A node's answer, or an error; its body is left to the caller. */
function askNode(url: URL, token: string): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const req = (url.protocol === 'https:' ? httpsRequest : httpRequest)(
      url,
      { method: 'GET', headers: { authorization: `Bearer ${token}` }, timeout: NODE_TIMEOUT_MS },
      resolve,
    );
    req.on('timeout', () => req.destroy(new Error('the node did not answer in time')));
    req.on('error', reject);
    req.end();
  });
}

/** Passes at most `max` bytes, then fails the stream. */
function atMost(max: number): Transform {
  let seen = 0;
  return new Transform({
    transform(chunk: Buffer, _enc, done) {
      seen += chunk.length;
      if (seen > max) done(new Error('object larger than announced'));
      else done(null, chunk);
    },
  });
}

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

  // Selected entries: dropped (purge) or marked stale (refresh) on every node, through the config log.
  const selective = [
    {
      path: 'purge',
      refresh: false,
      summary: 'Purge selected cache entries',
      done: 'cache entries purged',
      description:
        'Each entry is a URL or host/path of this domain; cached objects whose host and path start with it are dropped on every edge node (a trailing `*` is allowed and means the same).',
    },
    {
      path: 'refresh',
      refresh: true,
      summary: 'Refresh selected cache entries',
      done: 'cache entries refreshed',
      description:
        'Each entry is a URL or host/path of this domain, as for the purge; cached objects whose host and path start with it are marked stale on every edge node, so the next request for one revalidates it with the origin and replaces it (where the cache rule keeps stale_on_error, an origin failure still serves the old copy, which a purge would not).',
    },
  ];
  for (const op of selective)
    app.post(
      `/domains/:domain/cache/${op.path}`,
      {
        schema: {
          summary: op.summary,
          tags: ['cache'],
          params: DomainParams,
          body: PurgeBody,
          description: op.description,
          response: { 200: PurgeResult, ...errorResponses(400, 403, 404) },
        },
      },
      async (request) => {
        const { domain } = await loadDomain(request, request.params.domain, 'cache.purge');
        requireFeature(await effectiveFeatures(app.db, domain.id), 'cache_purge_enabled');
        const prefixes = purgePrefixes(domain.name, request.body.urls);
        await changeDomain(app, domain.id, async (tx) => {
          await tx.insert(cachePurgeRequests).values({ domainId: domain.id, prefixes, refresh: op.refresh });
          return { value: undefined, change: { domain: true } };
        });
        return { message: op.done, prefixes };
      },
    );

  app.get(
    '/domains/:domain/cache/stats',
    {
      schema: {
        summary: 'Cached entry count and size',
        tags: ['cache'],
        params: DomainParams,
        description:
          "Objects the edge nodes hold for the domain and their body bytes, from each node's latest inventory (nodes report every 30 s when their cache changed; a node silent for 5 minutes is not counted).",
        response: { 200: Totals, ...errorResponses(404) },
      },
    },
    async (request) => {
      const { domain } = await loadDomain(request, request.params.domain, 'domain.view');
      return sumTotals(await nodeTotals(app.db, domain.id));
    },
  );

  app.get(
    '/domains/:domain/cache/nodes',
    {
      schema: {
        summary: 'Cache totals per edge node',
        tags: ['cache'],
        params: DomainParams,
        response: { 200: Type.Array(NodeTotalsSchema), ...errorResponses(404) },
      },
    },
    async (request) => {
      const { domain } = await loadDomain(request, request.params.domain, 'domain.view');
      return nodeTotals(app.db, domain.id);
    },
  );

  app.get(
    '/domains/:domain/cache/entries',
    {
      schema: {
        summary: 'Browse cached entries',
        tags: ['cache'],
        params: DomainParams,
        querystring: BrowseQuery,
        description:
          "The entries the nodes listed in their inventories (each node lists a domain's 5,000 most recently used; `unlisted` of the totals counts the rest), by URL then node, `limit` per page; `next_cursor` continues with the same filters. Filters: `host` (exact), `path_prefix`, `content_type` (prefix), `node`.",
        response: {
          200: Type.Object(
            {
              entries: Type.Array(EntrySchema),
              next_cursor: Nullable(Type.String({ description: 'Pass as `cursor` for the next page' })),
            },
            { title: 'CacheEntryPage' },
          ),
          ...errorResponses(400, 404),
        },
      },
    },
    async (request) => {
      const { domain } = await loadDomain(request, request.params.domain, 'domain.view');
      const { limit = 100, cursor, ...filters } = request.query;
      const after = cursor === undefined ? null : parseEntryId(cursor, 'cursor');
      const page = await browseEntries(app.db, domain.id, filters, limit, after);
      return { entries: page.entries, next_cursor: page.next ? entryId(page.next.node, page.next.key) : null };
    },
  );

  const token = ensureNodeToken(app.config.dataDir, (app.config as { nodeToken?: string }).nodeToken);
  app.get(
    '/domains/:domain/cache/entries/content',
    {
      schema: {
        summary: 'Download one cached object',
        tags: ['cache'],
        params: DomainParams,
        querystring: DownloadQuery,
        description: `The body the node holds for a listed entry, fetched from that node and streamed as stored (\`application/octet-stream\`, as an attachment): \`x-cache-content-type\` and \`x-cache-content-encoding\` carry the stored content type and coding, \`x-cache-status\` the stored status. At most ${DOWNLOAD_MAX_BYTES / 1024 / 1024} MiB. 400 for a larger one; 404 when the node no longer holds it or is gone; 503 when the node cannot be reached.`,
        response: {
          200: {
            description: 'The stored body',
            content: { 'application/octet-stream': { schema: Type.String({ format: 'binary' }) } },
          },
          ...errorResponses(400, 404, 503),
        },
      },
    },
    async (request, reply) => {
      const { domain } = await loadDomain(request, request.params.domain, 'domain.view');
      const { node, key } = parseEntryId(request.query.entry);
      const found = await findEntry(app.db, domain.id, node, key);
      if (!found || !found.address) throw new ApiError('CP_ERR_NOT_FOUND', 'cache entry not found');
      if (found.size > DOWNLOAD_MAX_BYTES)
        throw new ApiError(
          'CP_ERR_INVALID_INPUT',
          `entry: the object is larger than ${DOWNLOAD_MAX_BYTES} bytes, too large to download`,
        );
      const url = new URL('/cache/object', found.address);
      url.searchParams.set('domain', domain.name);
      url.searchParams.set('key', key);
      let res: IncomingMessage;
      try {
        res = await askNode(url, token);
      } catch (err) {
        request.log.warn({ err, node }, 'cache object fetch failed');
        throw new ApiError('CP_ERR_UNAVAILABLE', 'the edge node holding the entry cannot be reached');
      }
      if (res.statusCode === 404) {
        res.resume();
        throw new ApiError('CP_ERR_NOT_FOUND', 'the edge node no longer holds this entry');
      }
      const length = Number(res.headers['content-length']);
      if (res.statusCode !== 200 || !Number.isSafeInteger(length) || length > DOWNLOAD_MAX_BYTES) {
        res.destroy();
        request.log.warn({ node, status: res.statusCode, length }, 'cache object fetch refused');
        throw new ApiError('CP_ERR_UNAVAILABLE', 'the edge node did not return the entry');
      }
      const header = (name: string) => String(res.headers[name] ?? '').slice(0, 256);
      const end = key.search(/[?\n]/);
      const stop = end < 0 ? key.length : end;
      const name = key.slice(key.lastIndexOf('/', stop) + 1, stop).replace(/[^A-Za-z0-9._-]/g, '_');
      return reply
        .type('application/octet-stream')
        .header('content-length', length)
        .header('content-disposition', `attachment; filename="${name.slice(0, 100) || 'object'}"`)
        .header('x-content-type-options', 'nosniff')
        .header('x-cache-content-type', header('content-type'))
        .header('x-cache-content-encoding', header('x-cache-content-encoding'))
        .header('x-cache-status', header('x-cache-entry-status'))
        .send(res.pipe(atMost(length)) as unknown as string);
    },
  );
}
