// The scan workflow's reports (/internal/import-sessions/{id}/…, node token, hidden from OpenAPI; registered inside
// internal/routes.ts's authenticated scope). Each answers the session's status: anything but `scanning` tells the
// workflow to stop (the session was discarded or superseded meanwhile).
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { Id } from '../../openapi/schemas.js';
import { reportProgress, reportScan, reportScanFailed, SCAN_MAX_RECORDS } from './service.js';
import type { ScanProgress } from './store.js';

const hide = { hide: true } as const;
const Params = Type.Object({ id: Id() });
const Progress = Type.Unsafe<ScanProgress>(Type.Object({ phase: Type.String() }, { additionalProperties: true }));

export default async function importSessionInternalRoutes(fastify: FastifyInstance) {
  const r = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const base = '/internal/import-sessions/:id';

  r.post(
    `${base}/progress`,
    { schema: { ...hide, params: Params, body: Type.Object({ progress: Progress }) } },
    async (req) => ({
      status: await reportProgress(r, req.params.id, req.body.progress),
    }),
  );

  r.post(
    `${base}/scanned`,
    {
      schema: {
        ...hide,
        params: Params,
        body: Type.Object({
          progress: Progress,
          records: Type.Array(
            Type.Object({
              name: Type.String({ maxLength: 255 }),
              type: Type.String({ maxLength: 10 }),
              destination: Type.String({ maxLength: 4096 }),
              ttl: Type.Optional(Type.Integer()),
              mx_priority: Type.Optional(Type.Integer()),
            }),
            { maxItems: SCAN_MAX_RECORDS },
          ),
        }),
      },
    },
    async (req) => ({ status: await reportScan(r, req.params.id, req.body) }),
  );

  r.post(
    `${base}/failed`,
    { schema: { ...hide, params: Params, body: Type.Object({ error: Type.String({ maxLength: 4000 }) }) } },
    async (req) => ({ status: await reportScanFailed(r, req.params.id, req.body.error) }),
  );
}
