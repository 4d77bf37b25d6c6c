// DNS record routes under /domains/{domain}/records/: list, create, update, delete, batch-update, delete-many,
// BIND export, import preview and import. domain.view for reads, records.edit for writes.
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { loadDomain, writeAs } from '../../auth/domain-access.js';
import { KEY_READ_BY_WRITE } from '../../auth/authenticate.js';
import { parseDomainName } from '../domains/domain-name.js';
import { ApiError, MESSAGES } from '../../errors.js';
import { errorResponses, idSegment, MessageBody } from '../../openapi/schemas.js';
import { listRecordsPage, type RecordRow } from './store.js';
import { cursorId, listAllRecords } from './list.js';
import {
  batchUpdate,
  createRecord,
  deleteMany,
  deleteRecord,
  exportZoneText,
  importZone,
  previewImport,
  updateRecord,
} from './service.js';
import type { RecordFields } from './types.js';
import {
  BatchUpdate,
  BulkResult,
  DeleteMany,
  DomainParams,
  ImportFailure,
  ImportPreview,
  ImportResult,
  Record,
  RecordCreate,
  RecordListQuery,
  RecordParams,
  RECORDS_PAGE,
  RecordUpdate,
  type RecordBody,
} from './schemas.js';
import { installZoneImportBodies, ZoneImportBody, zoneText } from './import-body.js';

/** A record's fields in the API's form (unset mx_priority, host_header and comment absent). */
function fields(r: RecordFields) {
  return {
    name: r.name,
    type: r.type,
    destination: r.destination,
    ...(r.mxPriority === null ? {} : { mx_priority: r.mxPriority }),
    ttl: r.ttl,
    proxied: r.proxied,
    captcha: r.captcha,
    scheme: r.scheme,
    port: r.port,
    ...(r.hostHeader === null ? {} : { host_header: r.hostHeader }),
    host_header_mode: r.hostHeaderMode,
    monitor: r.monitor,
    timeout: r.timeout,
    ...(r.comment === null ? {} : { comment: r.comment }),
  };
}

/** A planned record of an import preview or session: its line in the file, then its fields in the API's form. */
export function previewRecord(r: RecordFields & { line: number }) {
  return { line: r.line, ...fields(r) };
}

/** The API form of a stored record; unset mx_priority, host_header and comment are absent. */
export function presentRecord(row: RecordRow): RecordBody {
  return {
    id: row.id,
    ...fields(row as unknown as RecordFields),
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  } as RecordBody;
}

export default async function recordRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['dns records'];
  const base = '/domains/:domain/records';

  app.get(
    `${base}/`,
    {
      schema: {
        summary: 'List the records of the domain: all of them, or one page with limit / cursor',
        description:
          'Without parameters every record of the domain, ordered by id (a large zone is streamed). With `limit` ' +
          'and/or `cursor`: one page ordered by id; when more records follow, the answer carries the headers ' +
          '`X-Next-Cursor` (pass it as `cursor`) and `Link: <…>; rel="next"` (RFC 8288). The body is an array either way.',
        tags,
        params: DomainParams,
        querystring: RecordListQuery,
        response: { 200: Type.Array(Record), ...errorResponses(400, 403, 404) },
      },
    },
    async (request, reply) => {
      const { domain } = await loadDomain(request, request.params.domain, 'domain.view');
      const { limit, cursor } = request.query;
      // The body is already the schema's JSON text (store.ts): a string or stream with a JSON content type is sent
      // as is, not parsed and serialised again (the type provider only knows the parsed form).
      reply.type('application/json; charset=utf-8');
      if (limit === undefined && cursor === undefined) {
        const body = await listAllRecords(app.db, domain.id);
        return reply.send(body as unknown as RecordBody[]);
      }
      const size = limit ?? RECORDS_PAGE.default;
      const page = await listRecordsPage(app.db, domain.id, cursorId(cursor), size);
      if (page.more) {
        const next = String(page.last);
        const path = `/domains/${encodeURIComponent(domain.name)}/records/?cursor=${next}&limit=${size}`;
        reply.header('x-next-cursor', next).header('link', `<${path}>; rel="next"`);
      }
      return reply.send(`[${page.items}]` as unknown as RecordBody[]);
    },
  );

  app.post(
    `${base}/`,
    {
      config: KEY_READ_BY_WRITE,
      schema: {
        summary: 'Create a record',
        tags,
        params: DomainParams,
        body: RecordCreate,
        response: { 200: Record, ...errorResponses(400, 403, 404, 409, 413, 415) },
      },
    },
    async (request) => {
      const lock = writeAs(request, request.params.domain, 'records.edit'); // 404 for a name that is no domain name
      const zone = parseDomainName(request.params.domain);
      if (!zone.ok) throw new ApiError('CP_ERR_NOT_FOUND', MESSAGES.domainNotFound);
      return presentRecord(await createRecord(app, lock, zone.name, request.body));
    },
  );

  app.get(
    `${base}/export`,
    {
      schema: {
        summary: 'Export the zone as a BIND master file (RFC 1035 §5)',
        tags,
        params: DomainParams,
        // The file is text/plain; errors stay application/json like every other error.
        response: {
          200: {
            description: 'The master file',
            content: { 'text/plain': { schema: Type.String({ description: 'RFC 1035 master file' }) } },
          },
          ...errorResponses(403, 404),
        },
      },
    },
    async (request, reply) => {
      const { domain } = await loadDomain(request, request.params.domain, 'domain.view');
      const text = await exportZoneText(app, domain);
      return reply
        .type('text/plain; charset=utf-8')
        .header('content-disposition', `attachment; filename="${domain.name}.zone"`)
        .send(text);
    },
  );

  // The import routes alone also take text/plain and multipart bodies: their own scope holds those parsers.
  await app.register(async (plain) => {
    const scope = plain.withTypeProvider<TypeBoxTypeProvider>();
    // A zone file has its own limit, larger than other bodies by default (a plan allowing 1,000,000 records: about
    // 30 MB); only an authenticated key's body is read at all (auth/authenticate.ts runs on onRequest).
    const bodyLimit = app.config.importBodyLimitBytes;
    await installZoneImportBodies(scope, bodyLimit);

    scope.post(
      `${base}/import/parse`,
      {
        bodyLimit,
        schema: {
          summary: 'Parse a zone file into an import preview (stores nothing); JSON, text/plain or a multipart file',
          tags,
          params: DomainParams,
          body: ZoneImportBody,
          response: { 200: ImportPreview, ...errorResponses(400, 403, 404, 413, 415) },
        },
      },
      async (request) => {
        const { domain } = await loadDomain(request, request.params.domain, 'records.edit');
        const plan = await previewImport(app, domain, zoneText(request.body));
        return {
          records: plan.records.map(previewRecord),
          skipped: plan.skipped,
          errors: plan.errors,
          ...(plan.limitError ? { limit_error: plan.limitError } : {}),
        };
      },
    );

    scope.post(
      `${base}/import`,
      {
        bodyLimit,
        schema: {
          summary:
            'Import the records of a zone file (all or nothing; identical records are skipped); JSON, text/plain or a multipart file',
          tags,
          params: DomainParams,
          body: ZoneImportBody,
          response: { 200: ImportResult, 400: ImportFailure, ...errorResponses(403, 404, 409, 413, 415) },
        },
      },
      async (request) => {
        const { domain } = await loadDomain(request, request.params.domain, 'records.edit');
        const { created, rows, skipped } = await importZone(app, domain, zoneText(request.body));
        // The created records are listed up to LIMITS.importListedRecords; a larger import answers the count (the
        // records are read with GET records/, paged).
        return rows
          ? { created, records: rows.map(presentRecord), skipped }
          : { created, records: [], records_omitted: true, skipped };
      },
    );
  });

  app.post(
    `${base}/batch-update`,
    {
      schema: {
        summary: 'Update up to 1000 records (best effort; one config change for the batch)',
        tags,
        params: DomainParams,
        body: BatchUpdate,
        response: { 200: BulkResult, ...errorResponses(400, 403, 404, 409, 413, 415) },
      },
    },
    async (request) => {
      const { domain } = await loadDomain(request, request.params.domain, 'records.edit');
      return batchUpdate(app, domain, request.body.updates);
    },
  );

  app.post(
    `${base}/delete-many`,
    {
      schema: {
        summary: 'Delete up to 1000 records (best effort; one config change)',
        tags,
        params: DomainParams,
        body: DeleteMany,
        response: { 200: BulkResult, ...errorResponses(400, 403, 404, 409, 413, 415) },
      },
    },
    async (request) => {
      const { domain } = await loadDomain(request, request.params.domain, 'records.edit');
      return deleteMany(app, domain, request.body.ids);
    },
  );

  app.put(
    `${base}/${idSegment('id')}`,
    {
      config: KEY_READ_BY_WRITE,
      schema: {
        summary: 'Update a record (omitted fields are unchanged)',
        tags,
        params: RecordParams,
        body: RecordUpdate,
        response: { 200: Record, ...errorResponses(400, 403, 404, 409, 413, 415) },
      },
    },
    async (request) => {
      const domain = writeAs(request, request.params.domain, 'records.edit');
      return presentRecord(await updateRecord(app, domain, request.params.id, request.body));
    },
  );

  app.delete(
    `${base}/${idSegment('id')}`,
    {
      config: KEY_READ_BY_WRITE,
      schema: {
        summary: 'Delete a record',
        tags,
        params: RecordParams,
        response: { 200: MessageBody, ...errorResponses(403, 404, 409) },
      },
    },
    async (request) => {
      await deleteRecord(app, writeAs(request, request.params.domain, 'records.edit'), request.params.id);
      return { message: `record ${request.params.id} deleted` };
    },
  );
}
