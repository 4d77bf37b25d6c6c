// Import sessions and scans under /domains/{domain}/records/: start a session (a zone file or a scan), the domain's
// open session, one session, discard, commit, rescan; GET the latest scan's finds, POST scan and import; the
// proxied re-check of external-DNS domains. domain.view for reads, records.edit for the rest.
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { loadDomain } from '../../auth/domain-access.js';
import { ApiError } from '../../errors.js';
import { errorResponses, idSegment } from '../../openapi/schemas.js';
import { installZoneImportBodies, zoneText } from '../records/import-body.js';
import { DomainParams } from '../records/schemas.js';
import { presentSession } from './present.js';
import { recheckProxied } from './recheck.js';
import {
  CommitFailure,
  ImportSession,
  RecheckResult,
  SessionParams,
  SessionStartBody,
  type SessionStart,
} from './schemas.js';
import { commitSession, discardSession, rescanSession, startScanSession, startZoneSession } from './service.js';
import { getSession, latestScan, liveSession } from './store.js';
import type { Static } from '@sinclair/typebox';

export default async function importSessionRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['dns records'];
  const base = '/domains/:domain/records';
  const sessions = `${base}/import-sessions`;
  const response = (...errors: number[]) => ({ 200: ImportSession, ...errorResponses(...errors) });

  // The start alone takes text/plain and multipart bodies too: its own scope holds those parsers.
  await app.register(async (plain) => {
    const scope = plain.withTypeProvider<TypeBoxTypeProvider>();
    // A zone file's own body limit, as POST records/import (API_IMPORT_BODY_LIMIT_BYTES).
    const bodyLimit = app.config.importBodyLimitBytes;
    await installZoneImportBodies(scope, bodyLimit);
    scope.post(
      `${sessions}/`,
      {
        bodyLimit,
        schema: {
          summary:
            'Start an import session from a zone file (JSON `zone`, text/plain or a multipart file) or from a scan of the current DNS (`{"source":"scan"}`)',
          tags,
          params: DomainParams,
          body: SessionStartBody,
          response: response(400, 403, 404, 409, 413, 415, 503),
        },
      },
      async (request) => {
        const { domain } = await loadDomain(request, request.params.domain, 'records.edit');
        const body = request.body as string | Static<typeof SessionStart> | { file: string };
        const json = typeof body === 'object' && !('file' in body) ? body : undefined;
        const source = json?.source ?? (json && json.zone === undefined ? undefined : 'zone');
        if (source === undefined)
          throw new ApiError('CP_ERR_INVALID_INPUT', 'give a zone file in `zone`, or `"source": "scan"` to scan');
        if (source === 'scan') {
          if (json?.zone !== undefined) throw new ApiError('CP_ERR_INVALID_INPUT', 'a scan session takes no zone file');
          return presentSession(await startScanSession(app, domain, request.principal.userId, false), domain.name);
        }
        const text = zoneText(body);
        if (!text) throw new ApiError('CP_ERR_INVALID_INPUT', 'source "zone" needs the zone file in `zone`');
        return presentSession(await startZoneSession(app, domain, request.principal.userId, text), domain.name);
      },
    );
  });

  app.get(
    `${sessions}/open`,
    {
      schema: {
        summary: "The domain's open import session (scanning or open); 404 when there is none",
        tags,
        params: DomainParams,
        response: response(403, 404),
      },
    },
    async (request) => {
      const { domain } = await loadDomain(request, request.params.domain, 'domain.view');
      const s = await liveSession(app.db, domain.id);
      if (!s) throw new ApiError('CP_ERR_NOT_FOUND', 'the domain has no open import session');
      return presentSession(s, domain.name);
    },
  );

  app.get(
    `${sessions}/${idSegment('id')}`,
    {
      schema: {
        summary: 'One import session, with its planned records, progress and (once committed) per-record result',
        tags,
        params: SessionParams,
        response: response(400, 403, 404),
      },
    },
    async (request) => {
      const { domain } = await loadDomain(request, request.params.domain, 'domain.view');
      const s = await getSession(app.db, domain.id, request.params.id);
      if (!s) throw new ApiError('CP_ERR_NOT_FOUND', `import session ${request.params.id} not found`);
      return presentSession(s, domain.name);
    },
  );

  app.delete(
    `${sessions}/${idSegment('id')}`,
    {
      schema: {
        summary: 'Discard a scanning or open import session (nothing is imported)',
        tags,
        params: SessionParams,
        response: response(400, 403, 404, 409),
      },
    },
    async (request) => {
      const { domain } = await loadDomain(request, request.params.domain, 'records.edit');
      return presentSession(await discardSession(app, domain, request.params.id), domain.name);
    },
  );

  app.post(
    `${sessions}/${idSegment('id')}/commit`,
    {
      schema: {
        summary:
          'Commit an open session: its records are checked against the zone as it is now and all are created or none (one config change); the per-record result is on the session',
        tags,
        params: SessionParams,
        response: { 200: ImportSession, 400: CommitFailure, ...errorResponses(403, 404, 409) },
      },
    },
    async (request) => {
      const { domain } = await loadDomain(request, request.params.domain, 'records.edit');
      return presentSession(await commitSession(app, domain.id, request.params.id), domain.name);
    },
  );

  app.post(
    `${sessions}/${idSegment('id')}/rescan`,
    {
      schema: {
        summary: 'Scan the current DNS again in a new session that supersedes this scanning or open one',
        tags,
        params: SessionParams,
        response: response(400, 403, 404, 409, 503),
      },
    },
    async (request) => {
      const { domain } = await loadDomain(request, request.params.domain, 'records.edit');
      const next = await rescanSession(app, domain, request.principal.userId, request.params.id);
      return presentSession(next, domain.name);
    },
  );

  app.get(
    `${base}/scan`,
    {
      schema: {
        summary:
          "The domain's latest scan of its existing DNS (an import session with source scan): progress, the records found; 404 before the first scan",
        tags,
        params: DomainParams,
        response: response(403, 404),
      },
    },
    async (request) => {
      const { domain } = await loadDomain(request, request.params.domain, 'domain.view');
      const s = await latestScan(app.db, domain.id);
      if (!s)
        throw new ApiError(
          'CP_ERR_NOT_FOUND',
          'the domain has not been scanned yet: POST records/scan, or start an import session with {"source":"scan"}',
        );
      return presentSession(s, domain.name);
    },
  );

  app.post(
    `${base}/scan`,
    {
      schema: {
        summary:
          'Scan the existing DNS (zone transfer from the current nameservers, else a list of common labels) and import what is found once the scan is through; follow it with GET records/scan',
        tags,
        params: DomainParams,
        response: response(403, 404, 409, 503),
      },
    },
    async (request) => {
      const { domain } = await loadDomain(request, request.params.domain, 'records.edit');
      return presentSession(await startScanSession(app, domain, request.principal.userId, true), domain.name);
    },
  );

  app.post(
    `${base}/recheck-proxied`,
    {
      schema: {
        summary:
          "External DNS: check that every proxied record's hostname resolves (through the public resolvers) to the service's edge addresses",
        tags,
        params: DomainParams,
        response: { 200: RecheckResult, ...errorResponses(400, 403, 404, 503) },
      },
    },
    async (request) => {
      const { domain } = await loadDomain(request, request.params.domain, 'records.edit');
      return recheckProxied(app, domain);
    },
  );
}
