// The scope of the endpoints where nodes report back (request logs: request-logs.ts; cache inventories:
// areas/cache/inventory.ts): msgpack bodies up to `maxBytes`, and the node token on every request.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { unpack } from 'msgpackr';
import { ensureNodeToken } from '@platform/shared/node-token';
import { ApiError } from '../errors.js';
import { nodeTokenChecker } from '../auth/node-token.js';

/** Installs the msgpack parser and the node-token check on `scope`. */
export function nodeReportScope(app: FastifyInstance, scope: FastifyInstance, maxBytes: number): void {
  const configured = (app.config as { nodeToken?: string }).nodeToken;
  const checkToken = nodeTokenChecker(ensureNodeToken(app.config.dataDir, configured));
  scope.addContentTypeParser(
    'application/x-msgpack',
    { parseAs: 'buffer', bodyLimit: maxBytes },
    (_req, body, done) => {
      try {
        done(null, unpack(body as Buffer));
      } catch {
        done(new ApiError('CP_ERR_INVALID_INPUT', 'body is not msgpack'), undefined);
      }
    },
  );
  scope.addHook('onRequest', async (request: FastifyRequest) => {
    const bearer = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? '')?.[1];
    if (!checkToken(bearer)) throw new ApiError('CP_ERR_INVALID_NODE_TOKEN', 'invalid node token');
  });
}
