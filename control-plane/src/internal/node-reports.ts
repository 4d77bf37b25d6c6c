// The scope of the endpoints where nodes report back (request logs: request-logs.ts; cache inventories:
// areas/cache/inventory.ts): msgpack bodies up to `maxBytes`, and the node token on every request; the ids they carry;
// and the pruning of what they stored.
import type { FastifyInstance } from 'fastify';
import { unpack } from 'msgpackr';
import { ApiError } from '../errors.js';
import { requireNodeToken } from '../auth/node-token.js';

/** A node id as the edge sends it (edge-node/src/log/post.ts). */
export const NODE_ID = /^[A-Za-z0-9._:-]{1,128}$/;
/** A report id (request-log batch, cache snapshot): 16 hex digits of the sender's incarnation, `-`, a sequence. */
export const REPORT_ID = /^[0-9a-f]{16}-[0-9]{1,15}$/;

/** `prune` made to run at most once per `everyMs` per process and database (reports call it on every request). */
export function throttled(
  everyMs: number,
  prune: (app: FastifyInstance) => Promise<unknown>,
): (app: FastifyInstance) => Promise<void> {
  const prunedAt = new WeakMap<object, number>();
  return async (app) => {
    const last = prunedAt.get(app.db) ?? 0;
    if (Date.now() - last < everyMs) return;
    prunedAt.set(app.db, Date.now());
    await prune(app);
  };
}

/** Installs the msgpack parser and the node-token check on `scope`. */
export function nodeReportScope(app: FastifyInstance, scope: FastifyInstance, maxBytes: number): void {
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
  requireNodeToken(scope, app);
}
