// The three forms a zone file may arrive in for the import and its preview: JSON `{ "zone": … }` (every other route
// takes JSON only), a text/plain body, or a multipart/form-data upload with the file in the field `file` (as
// Cloudflare's DNS import, `curl --form file=@zone.txt`). Installed on the import routes' own scope only.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import multipart, { type Multipart, type MultipartFile } from '@fastify/multipart';
import { Type } from '@sinclair/typebox';
import { ApiError } from '../../errors.js';
import { ZoneImport } from './schemas.js';

export const ZoneText = Type.String({ minLength: 1, description: 'The master file itself (RFC 1035 §5)' });

export const ZoneUpload = Type.Object(
  {
    file: Type.String({
      minLength: 1,
      contentMediaType: 'text/plain',
      description: 'The master file, uploaded as a file (or sent as a text field)',
    }),
  },
  { additionalProperties: false, title: 'ZoneUpload' },
);

const MISSING_ZONE = 'a zone file is required: JSON {"zone": …}, a text/plain body or a multipart file';

/** The request body schema of the import routes, one per content type (Fastify validates the one that arrived). */
export const ZoneImportBody = {
  content: {
    'application/json': { schema: ZoneImport },
    'text/plain': { schema: ZoneText },
    'multipart/form-data': { schema: ZoneUpload },
  },
};

/**
 * Parsers for text/plain and multipart/form-data on `scope` (an encapsulated plugin holding only the import
 * routes). Multipart is bounded by the same body limit as JSON: one file part, one field part, each at most
 * `bodyLimit` bytes; an oversized file or field is 413, never truncated.
 */
export async function installZoneImportBodies(scope: FastifyInstance, bodyLimit: number): Promise<void> {
  scope.addContentTypeParser('text/plain', { parseAs: 'string' }, (_request, body, done) => done(null, body));
  // The multipart parser throws on a content type without its boundary: refuse it before the body is read.
  scope.addHook('onRequest', async (request: FastifyRequest) => {
    const type = request.headers['content-type'] ?? '';
    if (/^multipart\/form-data\b/i.test(type) && !/;\s*boundary=/i.test(type))
      throw new ApiError('CP_ERR_INVALID_INPUT', 'a multipart/form-data body needs its boundary parameter');
  });
  await scope.register(multipart, {
    attachFieldsToBody: true,
    limits: { files: 1, fields: 1, parts: 2, fileSize: bodyLimit, fieldSize: bodyLimit, fieldNameSize: 64 },
    async onFile(part: MultipartFile) {
      (part as unknown as { value: string }).value = (await part.toBuffer()).toString('utf8');
    },
  });
  // After the multipart plugin's own hook (registered before it) has read the parts: { name: value } for the schema.
  scope.addHook('preValidation', async (request: FastifyRequest) => {
    if (!request.isMultipart()) {
      // Fastify picks the body schema by content type: a request with neither a body nor a content type meets none.
      if (request.body === undefined) throw new ApiError('CP_ERR_INVALID_INPUT', MISSING_ZONE);
      return;
    }
    const parts = (request.body ?? {}) as Record<string, Multipart | Multipart[]>;
    const body: Record<string, unknown> = {};
    for (const [name, part] of Object.entries(parts)) {
      if (Array.isArray(part)) throw new ApiError('CP_ERR_INVALID_INPUT', `form field ${name} is given more than once`);
      if (part.type === 'field' && part.valueTruncated)
        throw new ApiError('CP_ERR_BODY_TOO_LARGE', `form field ${name} too large (limit ${bodyLimit} bytes)`);
      body[name] = (part as { value?: unknown }).value;
    }
    request.body = body;
  });
}

/** The master file of a validated import body, whichever form it came in. */
export function zoneText(body: unknown): string {
  if (typeof body === 'string') return body;
  const fields = body as { zone?: string; file?: string };
  return fields.zone ?? fields.file ?? '';
}
